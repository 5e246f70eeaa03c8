package gpupeak

import "testing"

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		name string
		sku  string
		bf16 float64
	}{
		{"NVIDIA H100 80GB HBM3", "H100 SXM", 989.4},
		{"NVIDIA H100 PCIe", "H100 PCIe", 756.5},
		{"NVIDIA H100 NVL", "H100 NVL", 835.5},
		{"NVIDIA H200", "H200 SXM", 989.4},
		{"NVIDIA H200 NVL", "H200 NVL", 835.5},
		{"NVIDIA GH200 480GB", "GH200", 989.4},
		{"NVIDIA A100-SXM4-80GB", "A100", 312},
		{"NVIDIA A100-PCIE-40GB", "A100", 312},
		{"NVIDIA A100 80GB PCIe", "A100", 312},
		{"NVIDIA L4", "L4", 121},
		{"NVIDIA L40S", "L40S", 362.05},
		{"NVIDIA L40", "L40", 181.05},
		{"NVIDIA A10", "A10", 125},
		{"NVIDIA GeForce RTX 4090", "RTX 4090", 165.2},
		{"NVIDIA A10G", "", 0},
		{"Tesla V100-SXM2-16GB", "", 0},
		{"", "", 0},
		{"cpu", "", 0},
	} {
		p, ok := Lookup(tc.name)
		if ok != (tc.sku != "") || p.SKU != tc.sku || p.BF16 != tc.bf16 {
			t.Errorf("Lookup(%q) = %+v, %v; want SKU %q, bf16 %v", tc.name, p, ok, tc.sku, tc.bf16)
		}
		if ok && (p.FP16 != p.BF16 || p.TF32 <= 0 || p.TF32 >= p.BF16 || p.Source == "") {
			t.Errorf("Lookup(%q) = %+v: want fp16 = bf16 > tf32 > 0 and a source", tc.name, p)
		}
	}
}

func TestByPrecision(t *testing.T) {
	p, _ := Lookup("NVIDIA H100 80GB HBM3")
	for prec, want := range map[string]float64{"bf16": 989.4, "fp16": 989.4, "fp32": 494.7, "": 494.7, "int8": 0} {
		if got := p.ByPrecision(prec); got != want {
			t.Errorf("ByPrecision(%q) = %v, want %v", prec, got, want)
		}
	}
}
