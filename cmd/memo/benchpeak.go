package main

import (
	"fmt"

	"github.com/memo-research/memo/train"
)

// datasheetLine is `memo bench train`'s line on the datasheet peak: the
// MFU against the card's dense tensor-core peak, or why there is none.
func datasheetLine(res train.BenchResult) string {
	if res.DatasheetPeakTFLOPs <= 0 {
		return "datasheet    " + res.DatasheetNote
	}
	return fmt.Sprintf("datasheet    %s (%s): %.1f TFLOP/s dense %s: MFU %.3f (%s)",
		res.GPUSKU, res.GPU, res.DatasheetPeakTFLOPs, res.DatasheetPeakDType, res.DatasheetMFU, res.DatasheetNote)
}
