// Package gpupeak is the datasheet table of GPU tensor-core peaks: the
// dense (no structured sparsity) TFLOP/s NVIDIA publishes per SKU for
// bf16, fp16 and tf32 tensor-core math with float32 accumulation, looked
// up from the device name CUDA reports (cudaDeviceProp.name, e.g.
// "NVIDIA H100 80GB HBM3"). MFU is the achieved FLOP rate over this peak;
// a measured matmul rate is another number, never this one.
package gpupeak

import (
	"strings"
)

// DeviceName is the CUDA name of GPU index ("NVIDIA H100 80GB HBM3"),
// "" when unknown: a CUDA build's torchx sets it (cudaDeviceProp.name);
// a CPU build has none.
var DeviceName = func(index int) string { return "" }

// Peak is one SKU's datasheet figures, dense, in TFLOP/s.
type Peak struct {
	// SKU names the card and form factor ("H100 SXM", "H100 PCIe").
	SKU string `json:"sku"`
	// BF16, FP16 and TF32 are the dense tensor-core peaks with float32
	// accumulation (0 where the card has none).
	BF16 float64 `json:"bf16_tflops"`
	FP16 float64 `json:"fp16_tflops"`
	TF32 float64 `json:"tf32_tflops"`
	// Source is the datasheet the figures come from.
	Source string `json:"source"`
}

// NVIDIA's datasheets print the sparse figure beside the dense one (2×);
// every figure here is the dense one. Names are matched as lower-case
// words, most specific first (an "H100 NVL" is not an SXM card; "GH200"
// contains "H200").
var table = []struct {
	words []string // all must be words of the name
	peak  Peak
}{
	// NVIDIA H200 Tensor Core GPU datasheet (2024): H200 NVL 1,671 TFLOPS
	// bf16/fp16 and 835 tf32, with sparsity.
	{[]string{"h200", "nvl"}, Peak{"H200 NVL", 835.5, 835.5, 417.5, "NVIDIA H200 datasheet (2024), H200 NVL column"}},
	// NVIDIA GH200 Grace Hopper Superchip datasheet: the H100/H200 SXM
	// tensor cores, 1,979 TFLOPS bf16 with sparsity.
	{[]string{"gh200"}, Peak{"GH200", 989.4, 989.4, 494.7, "NVIDIA GH200 Grace Hopper Superchip datasheet"}},
	// NVIDIA H200 datasheet: H200 SXM 1,979 bf16/fp16, 989 tf32, with
	// sparsity (the H100 SXM's tensor cores).
	{[]string{"h200"}, Peak{"H200 SXM", 989.4, 989.4, 494.7, "NVIDIA H200 datasheet (2024), H200 SXM column"}},
	// NVIDIA H100 Tensor Core GPU datasheet (2023): SXM 1,979 bf16/fp16
	// and 989 tf32; PCIe 1,513 and 756; NVL 1,671 and 835 (sparse).
	{[]string{"h100", "nvl"}, Peak{"H100 NVL", 835.5, 835.5, 417.5, "NVIDIA H100 datasheet (2023), H100 NVL column"}},
	{[]string{"h100", "pcie"}, Peak{"H100 PCIe", 756.5, 756.5, 378, "NVIDIA H100 datasheet (2023), H100 PCIe column"}},
	// CUDA names the SXM5 card "NVIDIA H100 80GB HBM3" (no form factor).
	{[]string{"h100"}, Peak{"H100 SXM", 989.4, 989.4, 494.7, "NVIDIA H100 datasheet (2023), H100 SXM column"}},
	// NVIDIA A100 datasheet: 312 bf16/fp16 and 156 tf32, dense, on
	// every A100 (SXM and PCIe, 40 and 80 GB).
	{[]string{"a100"}, Peak{"A100", 312, 312, 156, "NVIDIA A100 datasheet"}},
	// NVIDIA L40S datasheet: 362.05 bf16/fp16 and 183 tf32 dense (733
	// and 366 with sparsity).
	{[]string{"l40s"}, Peak{"L40S", 362.05, 362.05, 183, "NVIDIA L40S datasheet"}},
	// NVIDIA L40 datasheet: 362.1 bf16/fp16 and 181 tf32 with sparsity.
	{[]string{"l40"}, Peak{"L40", 181.05, 181.05, 90.5, "NVIDIA L40 datasheet"}},
	// NVIDIA L4 datasheet: 242 bf16/fp16 and 120 tf32 with sparsity.
	{[]string{"l4"}, Peak{"L4", 121, 121, 60, "NVIDIA L4 datasheet"}},
	// NVIDIA A10 datasheet: 250 bf16/fp16 and 125 tf32 with sparsity.
	// (The A10G of AWS's g5 instances has no NVIDIA datasheet: not listed.)
	{[]string{"a10"}, Peak{"A10", 125, 125, 62.5, "NVIDIA A10 datasheet"}},
	// NVIDIA Ada Lovelace architecture whitepaper, RTX 4090: 165.2 fp16
	// and bf16 with float32 accumulation, 82.6 tf32, dense.
	{[]string{"rtx", "4090"}, Peak{"RTX 4090", 165.2, 165.2, 82.6, "NVIDIA Ada Lovelace GPU architecture whitepaper, table 2"}},
}

// Lookup finds the datasheet peak of a CUDA device name; ok is false for
// a card the table does not list (its MFU is then not reported).
func Lookup(name string) (p Peak, ok bool) {
	words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
		return r == ' ' || r == '-' || r == '_' || r == '/' || r == '(' || r == ')'
	})
	has := func(w string) bool {
		for _, x := range words {
			if x == w {
				return true
			}
		}
		return false
	}
	for _, e := range table {
		all := true
		for _, w := range e.words {
			all = all && has(w)
		}
		if all {
			return e.peak, true
		}
	}
	return Peak{}, false
}

// ByPrecision is the peak for a precision as memo spells it ("bf16",
// "fp16", "fp32": float32 weights run their products in tf32 only when
// libtorch allows it, so fp32 is compared against tf32, the card's best
// float32 rate); 0 for an unknown precision.
func (p Peak) ByPrecision(precision string) float64 {
	switch precision {
	case "bf16":
		return p.BF16
	case "fp16":
		return p.FP16
	case "fp32", "":
		return p.TF32
	}
	return 0
}
