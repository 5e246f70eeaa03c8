package extract

import (
	"context"
	"reflect"
	"runtime"
	"testing"

	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
)

func TestAutoBatchRule(t *testing.T) {
	mc := model.Config{Vocab: 10, Dim: 4, Layers: 2, Heads: 1, FFN: 8, Context: 16}
	weights := 4 * mc.Params()
	// row = 4·10·(2·2·4 + 10) = 1040 bytes; budget = (avail - weights)/4.
	for _, tc := range []struct {
		avail int64
		want  int
	}{
		{weights + 4*1040*5, 5},
		{weights + 4*1040*5 + 4*1039, 5}, // rounds down
		{weights, 1},                     // nothing left: one row
		{weights + 4*1040*1000, 64},      // clamped
	} {
		if got := AutoBatch(mc, weights, 10, tc.avail, maxAutoBatch); got != tc.want {
			t.Errorf("AutoBatch(avail=%d) = %d, want %d", tc.avail, got, tc.want)
		}
	}
	// Weights held in bf16 leave the other half of their bytes to the batch.
	if got := AutoBatch(mc, weights/2, 10, weights+4*1040*5+weights/2, maxAutoBatch); got != 5+int(weights/4/1040) {
		t.Errorf("AutoBatch with half the weight bytes = %d, want %d", got, 5+int(weights/4/1040))
	}
	// A GPU's cap: the same budget, clamped at 512 instead of 64.
	if got := AutoBatch(mc, weights, 10, weights+4*1040*1000, maxAutoBatchGPU); got != 512 {
		t.Errorf("AutoBatch on a GPU's cap = %d, want 512", got)
	}
	// On the CPU the memory shared out is MemAvailable, capped at 64.
	if avail, maxBatch := batchMemory(gotch.CPU); avail <= 0 || maxBatch != maxAutoBatch {
		t.Errorf("batchMemory(cpu) = %d, %d; want MemAvailable and %d", avail, maxBatch, maxAutoBatch)
	}
}

// Greedy completions do not depend on the batch size: one at a time, eight
// together and the automatic batch give the same ids.
func TestAutoBatchSameCompletions(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	docs := opticksDocs(t, 10, 120)
	for i := range docs {
		docs[i].IDs = docs[i].IDs[:60+5*i]
	}
	g := newModel(t, model.Config{Preset: "nano", Vocab: 256, Context: 128, Seed: 5})
	cfg := DefaultConfig()
	cfg.Suffix = 12
	prompts := BuildPrompts(cfg, docs, 128)
	auto := AutoBatch(g.Config(), g.WeightBytes(), 128, availableMemory(), maxAutoBatch)
	if auto < 1 || auto > maxAutoBatch {
		t.Fatalf("automatic batch %d outside [1, %d]", auto, maxAutoBatch)
	}
	var first [][]int32
	for _, b := range []int{1, 8, auto} {
		c := cfg
		c.BatchSize = b
		got, err := generateAll(context.Background(), g, c, prompts, true)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = got
			continue
		}
		if !reflect.DeepEqual(first, got) {
			t.Errorf("batch %d: %v\nbatch 1: %v", b, got, first)
		}
	}
}
