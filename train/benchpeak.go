package train

import (
	"strings"

	"github.com/memo-research/memo/internal/gpupeak"
	"github.com/sugarme/gotch"
)

// setDatasheet fills the datasheet fields of a benchmark on dev trained in
// precision (a train.precision value): the card's CUDA name, its SKU and
// dense tensor-core peak for the products' dtype (bf16 for bf16-mixed,
// fp16 for fp16, tf32 — the card's best float32 rate — for fp32), and the
// MFU against it. On the CPU, or a card gpupeak does not list, the peak
// and its MFU stay 0 and DatasheetNote says why.
func (r *BenchResult) setDatasheet(dev gotch.Device, precision string, devices int) {
	if !dev.IsCuda() {
		r.DatasheetNote = "no datasheet peak: a CPU (MFU is against the measured matmul)"
		return
	}
	r.GPU = gpupeak.DeviceName(int(dev.Value))
	p, ok := gpupeak.Lookup(r.GPU)
	if !ok {
		r.DatasheetNote = "no datasheet peak for " + quoteName(r.GPU) + " (internal/gpupeak)"
		return
	}
	r.GPUSKU, r.DatasheetPeakDType = p.SKU, "tf32"
	switch {
	case strings.HasPrefix(precision, "bf16"):
		r.DatasheetPeakDType = "bf16"
	case strings.HasPrefix(precision, "fp16"):
		r.DatasheetPeakDType = "fp16"
	}
	r.DatasheetPeakTFLOPs = p.ByPrecision(r.DatasheetPeakDType)
	if r.DatasheetPeakTFLOPs > 0 {
		r.DatasheetMFU = r.GFLOPs / (r.DatasheetPeakTFLOPs * 1e3 * float64(max(1, devices)))
	}
	r.DatasheetNote = p.Source
}

func quoteName(s string) string {
	if s == "" {
		return "an unnamed GPU"
	}
	return "\"" + s + "\""
}
