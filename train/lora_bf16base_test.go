package train

import (
	"context"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/precision"
)

// A LoRA run with train.lora.base_precision = "bf16" trains (the loss
// falls), records the base's precision in its checkpoint, and resumes
// bit for bit; the same directory refuses to go on with an fp32 base.
func TestLoRABF16Base(t *testing.T) {
	cfg, mcfg, lcfg := loraRun()
	cfg.LoRA.BasePrecision = precision.BF16
	if err := precision.Check(precision.BF16, false, gotch.CPU); err != nil {
		t.Skip(err)
	}
	checkResumeExact(t, cfg, mcfg, lcfg)
	dir := t.TempDir()
	src := textSource{ids: opticks(t, 2000), rows: 24}
	cfg.Steps = 8
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	m := readMetrics(t, dir)
	if len(m) != 8 || !(m[7].LossKept < m[0].LossKept) {
		t.Errorf("bf16-base LoRA metrics: first %+v, last %+v; want 8 steps and a falling loss", m[0], m[len(m)-1])
	}
	_, st, err := checkpoint.LatestGood(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.LoRABase == nil || st.LoRABase.Precision != precision.BF16 {
		t.Errorf("checkpoint's base record %+v: want precision bf16", st.LoRABase)
	}
	checkBF16BaseLoads(t, dir, mcfg)
	cfg.LoRA.BasePrecision = ""
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{}); err == nil || !strings.Contains(err.Error(), "holds adapters of the base") {
		t.Errorf("fp32-base run resuming a bf16-base checkpoint: %v", err)
	}
}

// checkBF16BaseLoads: memo's loader of a bf16-base LoRA run (the attacks'
// model: base rounded to bf16, adapters merged in float32) gives the
// logits of the model that trained (the base held in bf16, adapters
// unmerged) to 1e-5, and not those of the adapters on the float32 base.
func checkBF16BaseLoads(t *testing.T, runDir string, mcfg model.Config) {
	t.Helper()
	loaded, _, _, err := checkpoint.Load(runDir, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	adapted := func(base gotch.DType) []float64 {
		ad := savedAdapter(t, runDir, mcfg)
		if err := ad.HoldBase(base); err != nil {
			t.Fatal(err)
		}
		return fixedLogits(ad.Forward)
	}
	got := fixedLogits(loaded.Forward)
	if rel := relDiff(got, adapted(gotch.BFloat16)); !(rel <= 1e-5) {
		t.Errorf("loaded bf16-base LoRA run differs from the trained model by %.3g relative, want <= 1e-5", rel)
	}
	if rel := relDiff(got, adapted(gotch.Float)); !(rel > 1e-5) {
		t.Errorf("loaded bf16-base LoRA run is the fp32-base model (%.3g relative): the base was not rounded", rel)
	}
}

// fixedLogits is forward's logits of a fixed batch of ids, flattened.
func fixedLogits(forward func(*ts.Tensor) *ts.Tensor) []float64 {
	ids := ts.MustOfSlice([]int64{5, 17, 99, 3, 200, 45, 7, 8}).MustView([]int64{1, 8}, true)
	defer ids.MustDrop()
	out := logitsOf(forward, ids)
	defer out.MustDrop()
	return out.Float64Values()
}
