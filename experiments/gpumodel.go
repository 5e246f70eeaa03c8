package experiments

import (
	"fmt"

	"github.com/memo-research/memo/internal/gpupeak"
)

// GPUModel is one CUDA device as the manifest records it: the name CUDA
// reports, and the SKU and dense bf16 tensor-core peak of its datasheet
// (package gpupeak) that MFU is measured against.
type GPUModel struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	// SKU and PeakBF16TFLOPs are empty for a card gpupeak does not list.
	SKU            string  `json:"sku,omitempty"`
	PeakBF16TFLOPs float64 `json:"peak_bf16_tflops,omitempty"`
	PeakSource     string  `json:"peak_source,omitempty"`
}

// gpuModels are the records of the first n CUDA devices, and the line
// Machine.DatasheetPeak says about them.
func gpuModels(n int) ([]GPUModel, string) {
	if n == 0 {
		return nil, "none: no CUDA GPU (datasheet peaks are of GPUs; CPU MFU is against a measured matmul)"
	}
	var out []GPUModel
	for i := 0; i < n; i++ {
		out = append(out, gpuModel(i, gpupeak.DeviceName(i)))
	}
	g := out[0]
	if g.SKU == "" {
		return out, fmt.Sprintf("none: no datasheet peak listed for %q (internal/gpupeak)", g.Name)
	}
	return out, fmt.Sprintf("%s: %g TFLOP/s dense bf16 (%s)", g.SKU, g.PeakBF16TFLOPs, g.PeakSource)
}

// gpuModel is GPU index's record from its CUDA name.
func gpuModel(index int, name string) GPUModel {
	m := GPUModel{Index: index, Name: name}
	if p, ok := gpupeak.Lookup(name); ok {
		m.SKU, m.PeakBF16TFLOPs, m.PeakSource = p.SKU, p.BF16, p.Source
	}
	return m
}
