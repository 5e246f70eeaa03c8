package train

import (
	"runtime"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
)

func TestSetDatasheetOnTheCPU(t *testing.T) {
	r := BenchResult{GFLOPs: 100}
	r.setDatasheet(gotch.CPU, "bf16-mixed", 1)
	if r.DatasheetPeakTFLOPs != 0 || r.DatasheetMFU != 0 || r.GPUSKU != "" || !strings.HasPrefix(r.DatasheetNote, "no datasheet peak") {
		t.Errorf("on the CPU: %+v: want no peak, said so", r)
	}
}

// TestBenchKeepsDefaultThreads: bench train with threads 0 trains on
// libtorch's default thread count, as memo run does; measuring the peak
// had set it to one and left it there.
func TestBenchKeepsDefaultThreads(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := torchx.Threads()
	torchx.Init(2, 1)
	defer torchx.Init(before, 1)
	_, err := Bench(BenchConfig{Model: model.Config{Preset: "nano", Vocab: 64}, Seq: 8, Batch: 1, Steps: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := torchx.Threads(); got != 2 {
		t.Errorf("libtorch threads after bench with threads 0: %d, want the 2 it had", got)
	}
}
