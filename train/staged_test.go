package train

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
)

// Activation checkpointing recomputes each block from its saved input
// with the same ops in the same order: the same losses bit for bit, and
// gradients summed in another order where a tensor's gradient comes from
// two backward passes (the tied embedding, read by the embedding and the
// head stages), so within float32 rounding of the one backward pass's:
// for a full model with two workers and accumulation, and for LoRA
// adapters (whose frozen embedding takes no backward pass).
func TestActivationCheckpointingMatches(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func() (Config, model.Config, loss.Config)
	}{
		{"full", smallRun},
		{"lora", loraRun},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, mcfg, lcfg := tc.run()
			cfg.Steps = 6
			cfg.Threads = 2
			src := textSource{ids: opticks(t, 2000), rows: 24}
			dirs := [2]string{t.TempDir(), t.TempDir()}
			for i, on := range []bool{false, true} {
				cfg.ActivationCheckpointing = on
				if err := Run(context.Background(), cfg, mcfg, lcfg, src, dirs[i], Options{}); err != nil {
					t.Fatal(err)
				}
			}
			want, got := readMetrics(t, dirs[0]), readMetrics(t, dirs[1])
			if len(got) != len(want) {
				t.Fatalf("%d metric rows, want %d", len(got), len(want))
			}
			if got[0].LossKept != want[0].LossKept {
				t.Errorf("step 1's loss %v, without checkpointing %v: the forward pass differs", got[0].LossKept, want[0].LossKept)
			}
			near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Abs(b) }
			for i := range want {
				if !near(got[i].LossKept, want[i].LossKept) || !near(got[i].GradNorm, want[i].GradNorm) {
					t.Errorf("step %d: loss %v, gradient norm %v; without checkpointing %v, %v",
						i+1, got[i].LossKept, got[i].GradNorm, want[i].LossKept, want[i].GradNorm)
				}
			}
			t.Logf("last loss %v with checkpointing, %v without", got[len(got)-1].LossKept, want[len(want)-1].LossKept)
		})
	}
}

// DP-SGD's per-row passes do not recompute blocks: the two are refused
// together, naming both keys.
func TestActivationCheckpointingWithDPRefused(t *testing.T) {
	cfg, _, _ := smallRun()
	cfg.ActivationCheckpointing = true
	cfg.DP.Enabled = true
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "train.activation_checkpointing") || !strings.Contains(err.Error(), "train.dp.enabled") {
		t.Fatalf("activation checkpointing with DP-SGD: %v", err)
	}
}
