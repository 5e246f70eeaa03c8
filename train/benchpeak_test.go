package train

import (
	"strings"
	"testing"

	"github.com/sugarme/gotch"
)

func TestSetDatasheetOnTheCPU(t *testing.T) {
	r := BenchResult{GFLOPs: 100}
	r.setDatasheet(gotch.CPU, "bf16-mixed")
	if r.DatasheetPeakTFLOPs != 0 || r.DatasheetMFU != 0 || r.GPUSKU != "" || !strings.HasPrefix(r.DatasheetNote, "no datasheet peak") {
		t.Errorf("on the CPU: %+v: want no peak, said so", r)
	}
}
