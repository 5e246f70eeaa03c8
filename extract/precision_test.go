package extract

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/train"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
)

// An attack in bf16 scores the same documents within bf16's rounding of
// an fp32 attack, goes to another file beside the checkpoint (its own
// slug), and fp16 on a CPU libtorch without float16 products is refused
// before any work.
func TestAttackPrecision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a dataset and trains a model")
	}
	ctx := context.Background()
	dir, ds, _ := trainTiny(t, func(d *data.Config) {
		d.Targets, d.Controls, d.Validation, d.Background = 3, 3, 2, 6
		d.Repetitions, d.ChunkTokens, d.MinTokens = 2, 64, 40
	}, func(c *train.Config) {
		c.Steps, c.Block, c.BatchSize, c.WarmupSteps = 6, 64, 8, 2
	})
	cfg := DefaultConfig()
	cfg.Suffix, cfg.BatchSize = 16, 3
	bf16 := cfg
	bf16.Precision = "bf16"
	if cfg.Slug() == bf16.Slug() || !strings.Contains(bf16.Slug(), ".bf16.") {
		t.Errorf("slugs %q and %q: a bf16 attack must not share the fp32 attack's file", cfg.Slug(), bf16.Slug())
	}
	fp32 := cfg
	fp32.Precision = "fp32"
	if cfg.Slug() != fp32.Slug() {
		t.Errorf("precision fp32 changed the slug: %q vs %q", fp32.Slug(), cfg.Slug())
	}
	outs := map[string]string{}
	for name, c := range map[string]Config{"fp32": cfg, "bf16": bf16} {
		outs[name] = filepath.Join(t.TempDir(), name+".arrow")
		if err := Run(ctx, c, dir, ds, outs[name], nil); err != nil {
			t.Fatal(err)
		}
	}
	a, err := eval.ReadCompletions(outs["fp32"])
	if err != nil {
		t.Fatal(err)
	}
	b, err := eval.ReadCompletions(outs["bf16"])
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i := range a {
		worst = math.Max(worst, math.Abs(a[i].Loss-b[i].Loss))
	}
	if worst == 0 || worst > 0.05 {
		t.Errorf("bf16 losses differ from fp32 by up to %g: want a bf16 rounding in (0, 0.05]", worst)
	}
	t.Logf("bf16 vs fp32 loss: up to %.4g apart", worst)
	fp16 := cfg
	fp16.Precision = "fp16"
	err = Run(ctx, fp16, dir, ds, filepath.Join(t.TempDir(), "fp16.arrow"), nil)
	if err != nil && !strings.Contains(err.Error(), "float16") {
		t.Errorf("fp16 on the CPU: %v, want an error naming float16", err)
	}
}

// extract --model with a model whose vocabulary is smaller than the
// dataset's tokenizer is bad input (exit 2 through the CLI), refused
// before any document is attacked.
func TestSmallerVocabularyIsBadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a dataset")
	}
	_, ds, tok := trainTiny(t, func(d *data.Config) {
		d.Targets, d.Controls, d.Validation, d.Background = 3, 3, 2, 6
		d.Repetitions, d.ChunkTokens, d.MinTokens = 2, 64, 40
	}, func(c *train.Config) {
		c.Steps, c.Block, c.BatchSize, c.WarmupSteps = 2, 64, 8, 1
	})
	g, err := model.New(nn.NewVarStore(gotch.CPU).Root(), model.Config{Preset: "nano", Vocab: tok.VocabSize() / 2, Context: 128, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	small, err := checkpoint.Save(t.TempDir(), g, nil, checkpoint.State{Step: 1, TotalSteps: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "c.arrow")
	err = Run(context.Background(), DefaultConfig(), small, ds, out, nil)
	if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "not the model of this dataset") {
		t.Fatalf("attack with a %d-token model on a %d-token dataset: %v; want bad input naming the mismatch", tok.VocabSize()/2, tok.VocabSize(), err)
	}
}
