package train

import (
	"context"
	"strings"
	"testing"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/loss"
)

// fixedSource serves the same rows every epoch.
type fixedSource [][]int32

func (s fixedSource) TrainRows(block int, seed int64) ([][]int32, error) { return s, nil }
func (s fixedSource) ValRows(block int) ([][]int32, error)               { return s[:1], nil }

// Three rows of block 8 per epoch, the last with its final 3 targets
// padded. Goldfish static k = 4 (start 0) drops target positions 0 and 4:
// it keeps 6, 6 and 3 targets (positions 1-3 of the padded row), 15 an
// epoch, 30 over 6 steps of one row. The standard loss supervises 8, 8 and
// 5: 21 after the first epoch, 29 after row 3, and the 30th target is the
// first of row 4, so the control stops there: 5 steps of 6, the rest of
// row 4 left out.
func TestMatchSupervisedTokens(t *testing.T) {
	full := func(v int32) []int32 { return []int32{v, v + 1, v + 2, v + 3, v + 4, v + 5, v + 6, v + 7, v + 8} }
	padded := []int32{40, 41, 42, 43, 44, 45, PadID, PadID, PadID}
	src := fixedSource{full(10), full(20), padded}
	st, err := newStream(src, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	cmp, err := loss.New(loss.Config{Strategy: loss.StrategyStatic, K: 4})
	if err != nil {
		t.Fatal(err)
	}
	m, err := matchSupervised(st, cmp, 6, 1, 8)
	if err != nil {
		t.Fatal(err)
	}
	if m != (matchedLength{budget: 30, cut: 4, pos: 0, steps: 5}) {
		t.Fatalf("matched length %+v, want budget 30, cut at row 4 target 0, 5 steps", m)
	}
	// The standard run as train masks it: count what it supervises.
	none, _ := loss.New(loss.Config{Strategy: loss.StrategyNone})
	bm := budgetMasker{inner: none, cut: m.cut, pos: m.pos}
	var supervised int64
	for step := 0; step < m.steps; step++ {
		rows, _ := st.take(int64(step), 1)
		targets := [][]int32{rows[0][1:]}
		dropped := make([]bool, 8)
		if err := loss.MaskBatch(bm, uint64(step), targets, dropped); err != nil {
			t.Fatal(err)
		}
		for j, id := range targets[0] {
			if id != PadID && !dropped[j] {
				supervised++
			}
		}
	}
	if supervised != m.budget {
		t.Errorf("the control supervises %d targets, goldfish %d", supervised, m.budget)
	}
}

// A real run: the control of goldfish hash-table k = 4 is shorter than the
// standard run it comes from, records that length in its checkpoint, and
// a goldfish run or a strategy-less one is refused by key.
func TestMatchSupervisedTokensRun(t *testing.T) {
	cfg, mcfg, lcfg := smallRun()
	cfg.Steps, cfg.BatchSize, cfg.EvalEvery, cfg.CheckpointEvery, cfg.GradAccum = 24, 1, 0, 0, 1
	src := textSource{ids: opticks(t, 2000), rows: 24}
	cfg.MatchSupervisedTokens = 4
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, t.TempDir(), Options{}); err == nil || !strings.Contains(err.Error(), "needs goldfish.k = 0") {
		t.Errorf("a goldfish run with match_supervised_tokens: err = %v", err)
	}
	lcfg.K = 0
	dir := t.TempDir()
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	_, state, err := checkpoint.LatestGood(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Hash-table k = 4, h = 13 never drops the first 12 targets of a row
	// and about a quarter of the other 20: it keeps about 27 of 32, so the
	// control stops in about row 20 of the 24 (one row a step).
	st, _ := newStream(src, 32, cfg.Seed)
	cmp, _ := loss.New(loss.Config{Strategy: loss.StrategyHashTable, K: 4, H: 13})
	m, err := matchSupervised(st, cmp, 24, 1, 32)
	if err != nil {
		t.Fatal(err)
	}
	if state.TotalSteps != m.steps || m.steps < 18 || m.steps > 23 || m.budget < 24*24 || m.budget > 24*30 {
		t.Errorf("control trained %d steps; matched %+v", state.TotalSteps, m)
	}
	metrics := readMetrics(t, dir)
	if len(metrics) != m.steps {
		t.Errorf("%d metric rows, want %d", len(metrics), m.steps)
	}
	lcfg.Strategy = loss.StrategyNone
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, t.TempDir(), Options{}); err == nil || !strings.Contains(err.Error(), "goldfish.strategy") {
		t.Errorf("no strategy to match: err = %v", err)
	}
}
