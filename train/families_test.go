package train

import (
	"context"
	"testing"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/hfgolden"
)

// Every family memo imports fine-tunes with the goldfish loss: starting
// from each transformers-written checkpoint, every weight moves (each
// received a gradient) and the training loss falls.
func TestGoldfishFineTuneEveryFamily(t *testing.T) {
	if testing.Short() {
		t.Skip("fine-tunes fifteen models")
	}
	for _, name := range hfgolden.TransformersNames {
		t.Run(name, func(t *testing.T) {
			dir, err := hfgolden.TransformersDir("..", name)
			if err != nil {
				t.Fatal(err)
			}
			cfg, _, lcfg := smallRun()
			cfg.Steps, cfg.EvalEvery, cfg.CheckpointEvery, cfg.LogEvery = 8, 0, 0, 1
			cfg.LR, cfg.MinLR, cfg.WarmupSteps = 3e-3, 3e-3, 0
			cfg.InitFrom = dir
			mcfg, err := checkpoint.ReadHFConfig(dir)
			if err != nil {
				t.Fatal(err)
			}
			run := t.TempDir()
			src := textSource{ids: opticks(t, 600), rows: 8}
			if err := Run(context.Background(), cfg, mcfg, lcfg, src, run, Options{}); err != nil {
				t.Fatal(err)
			}
			m := readMetrics(t, run)
			if first, last := m[0].LossKept, m[len(m)-1].LossKept; !(last < first) {
				t.Errorf("goldfish loss %g after %d steps, %g at the first: it did not fall", last, len(m), first)
			}
			before, _, err := checkpoint.LoadHF(dir, "cpu")
			if err != nil {
				t.Fatal(err)
			}
			after, _, _, err := checkpoint.Load(run, "cpu")
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range after.Params() {
				q, ok := before.Param(p.Name)
				if !ok {
					t.Fatalf("fine-tuned model has %s, the imported one has not", p.Name)
				}
				if q.Tensor.MustEqual(p.Tensor, false) {
					t.Errorf("%s did not move: no gradient reached it", p.Name)
				}
			}
		})
	}
}
