package experiments

import (
	"strings"
	"testing"
)

func TestGPUModel(t *testing.T) {
	for _, tc := range []struct {
		name, sku string
		peak      float64
	}{
		{"NVIDIA H100 80GB HBM3", "H100 SXM", 989.4},
		{"NVIDIA H100 PCIe", "H100 PCIe", 756.5},
		{"NVIDIA H200", "H200 SXM", 989.4},
		{"Tesla T4", "", 0},
	} {
		m := gpuModel(3, tc.name)
		if m.Index != 3 || m.Name != tc.name || m.SKU != tc.sku || m.PeakBF16TFLOPs != tc.peak || (tc.sku != "") != (m.PeakSource != "") {
			t.Errorf("gpuModel(%q) = %+v, want SKU %q, peak %v", tc.name, m, tc.sku, tc.peak)
		}
	}
	if ms, line := gpuModels(0); ms != nil || !strings.HasPrefix(line, "none: no CUDA GPU") {
		t.Errorf("gpuModels(0) = %v, %q: want none, said so", ms, line)
	}
}
