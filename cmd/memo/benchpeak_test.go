package main

import (
	"strings"
	"testing"

	"github.com/memo-research/memo/train"
)

func TestDatasheetLine(t *testing.T) {
	for _, tc := range []struct {
		res  train.BenchResult
		want string
	}{
		{train.BenchResult{DatasheetNote: "no datasheet peak: a CPU (MFU is against the measured matmul)"}, "datasheet    no datasheet peak: a CPU"},
		{train.BenchResult{GPU: "NVIDIA H100 80GB HBM3", GPUSKU: "H100 SXM", DatasheetPeakDType: "bf16", DatasheetPeakTFLOPs: 989.4, DatasheetMFU: 0.4, DatasheetNote: "NVIDIA H100 datasheet"},
			"datasheet    H100 SXM (NVIDIA H100 80GB HBM3): 989.4 TFLOP/s dense bf16: MFU 0.400 (NVIDIA H100 datasheet)"},
	} {
		if got := datasheetLine(tc.res); !strings.HasPrefix(got, tc.want) {
			t.Errorf("datasheetLine(%+v) = %q, want it to start %q", tc.res, got, tc.want)
		}
	}
}
