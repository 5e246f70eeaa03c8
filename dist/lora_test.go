package dist

import (
	"context"
	"testing"

	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/train"
)

// loraParity is the [train.lora] of TestLoRATrainParity: rank 4 on the
// attention and MLP projections of the nano Llama.
func loraParity() train.LoRAConfig {
	return train.LoRAConfig{Enabled: true, Rank: 4, Alpha: 8,
		Targets: []string{"q_proj", "v_proj", "o_proj", "down_proj"}}
}

// A LoRA run on two ranks (replicated adapters, their gradients
// all-reduced) trains like one process with the same global batch: the
// losses to 1e-6 relative, the adapted model (base + adapters, as memo's
// loader builds it from the checkpoint) to 1e-6 relative.
func TestLoRATrainParity(t *testing.T) {
	if testing.Short() {
		t.Skip("trains nano models on one and two processes (-short)")
	}
	const steps = 12
	single, multi := t.TempDir(), t.TempDir()
	src, err := newOpticks(4000, 64)
	if err != nil {
		t.Fatal(err)
	}
	cfg, mcfg, lcfg := parityRun(steps, loss.StrategyHashTable, 2)
	cfg.LoRA = loraParity()
	if err := train.Run(context.Background(), cfg, mcfg, lcfg, src, single, train.Options{}); err != nil {
		t.Fatal(err)
	}
	out, err := launchWorkers(t, 2, "train", "MEMO_DIST_DIR="+multi, "MEMO_DIST_STEPS=12", "MEMO_DIST_MASK="+loss.StrategyHashTable,
		"MEMO_DIST_ACCUM=2", "MEMO_DIST_LORA=1")
	if err != nil {
		t.Fatalf("2 ranks: %v\n%s", err, out)
	}
	worst, maxDiff := compareRuns(t, single, multi, steps, 1e-6, 1e-5)
	rel := relativeWeights(t, single, multi)
	t.Logf("LoRA on 2 ranks against one process: losses agree to %.2g relative; adapted weights to %.2g absolute, %.2g relative (L2)", worst, maxDiff, rel)
	if !(rel <= 1e-6) {
		t.Errorf("adapted weights differ from one process's by %.2g relative (L2), want <= 1e-6", rel)
	}
}
