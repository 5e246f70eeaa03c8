package train

import (
	"context"
	"reflect"
	"testing"

	"github.com/memo-research/memo/internal/testrun"
	"github.com/memo-research/memo/model"
)

// Options.OnEnd is called once a run has taken its last step, with the
// weights its final checkpoint holds, and not when StopAfter ends a run
// early; a run that resumes and finishes calls it.
func TestOnEndSeesTheFinalWeights(t *testing.T) {
	cfg, mcfg, lcfg := smallRun()
	cfg.Steps, cfg.CheckpointEvery = 4, 2
	src := textSource{ids: opticks(t, 2000), rows: 24}
	dir := t.TempDir()
	var calls int
	var weights, trained map[string][]float64
	opts := Options{StopAfter: 2, OnEnd: func(w, tr []model.Param) {
		calls++
		weights, trained = namedValues(w), namedValues(tr)
	}}
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, opts); err != nil {
		t.Fatal(err)
	}
	if calls != 0 {
		t.Fatalf("OnEnd called %d times by a run StopAfter ended at step 2 of 4", calls)
	}
	opts.StopAfter = 0
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, opts); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("OnEnd called %d times by the resumed run, want once", calls)
	}
	if len(weights) == 0 || !reflect.DeepEqual(weights, testrun.Weights(t, dir)) {
		t.Error("OnEnd's weights are not the final checkpoint's")
	}
	// Full fine-tuning trains every weight.
	if !reflect.DeepEqual(trained, weights) {
		t.Errorf("OnEnd's trained parameters (%d) are not the weights (%d)", len(trained), len(weights))
	}
}

// namedValues is ps's values by name.
func namedValues(ps []model.Param) map[string][]float64 {
	out := make(map[string][]float64, len(ps))
	for _, v := range ps {
		out[v.Name] = v.Tensor.MustDetach(false).MustView([]int64{-1}, true).Float64Values()
	}
	return out
}
