package extract

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/train"
)

func TestAttackWindow(t *testing.T) {
	for _, tc := range []struct{ context, block, want int }{
		{256, 0, 256},   // block unset: rows are the context
		{256, 256, 256}, // rows of context+1 ids: the model sees at most context
		{256, 255, 256},
		{256, 128, 129}, // one row: 128 inputs, 128 targets
		{64, 16, 17},
	} {
		if got := AttackWindow(tc.context, tc.block); got != tc.want {
			t.Errorf("AttackWindow(%d, %d) = %d, want %d", tc.context, tc.block, got, tc.want)
		}
	}
	c := DefaultConfig() // reference, suffix 50
	err := c.CheckWindow(33, 256)
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "train.block") {
		t.Errorf("suffix 50 in a 33-token trained row: %v, want ErrConfig naming train.block", err)
	}
	if err := c.CheckWindow(256, 256); err != nil {
		t.Error(err)
	}
	long := data.Doc{ID: 1, Title: "long", IDs: seq(0, 300)}
	p := BuildPrompts(c, []data.Doc{long}, 129)[0]
	if len(p.Window) != 129 || len(p.Prefix) != 79 || p.Suffix[len(p.Suffix)-1] != 128 {
		t.Errorf("window %d, prefix %d, suffix ends at %d: want the suffix to end at token 128, the trained row's last target",
			len(p.Window), len(p.Prefix), p.Suffix[len(p.Suffix)-1])
	}
}

// A model trained on 32-token rows is attacked within its first row of
// every document (33 tokens), not over its 256-token context, where the
// suffix of a longer document would sit at positions it never trained at.
func TestRunAttacksWithinTheTrainedRow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a dataset and trains a model")
	}
	ctx := context.Background()
	dir, ds, _ := trainTiny(t, func(d *data.Config) {
		d.Targets, d.Controls, d.Validation, d.Background = 3, 3, 2, 4
		d.Repetitions, d.ChunkTokens, d.MinTokens = 1, 96, 60
	}, func(c *train.Config) {
		c.Steps, c.Block, c.BatchSize, c.WarmupSteps = 2, 32, 4, 1
	})
	cfg := DefaultConfig()
	cfg.Suffix = 8
	out := filepath.Join(t.TempDir(), "completions.arrow")
	if err := Run(ctx, cfg, dir, ds, out, nil); err != nil {
		t.Fatal(err)
	}
	rows, err := eval.ReadCompletions(out)
	if err != nil {
		t.Fatal(err)
	}
	longer := 0
	for _, r := range rows {
		if r.NTokens > 33 {
			longer++
		}
		if w := min(r.NTokens, 33); len(r.Prefix)+len(r.Suffix) != w || len(r.TokenLosses) != w-1 {
			t.Errorf("doc %d (%d tokens): prefix %d + suffix %d, %d token losses; want a window of %d tokens",
				r.DocID, r.NTokens, len(r.Prefix), len(r.Suffix), len(r.TokenLosses), w)
		}
	}
	if longer == 0 {
		t.Fatal("no document is longer than a trained row: the test checks nothing")
	}

	bad := cfg
	bad.Suffix = 40
	if err := Run(ctx, bad, dir, ds, out, nil); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "train.block") {
		t.Errorf("suffix 40 on 33-token rows: %v, want ErrConfig naming train.block", err)
	}
}
