package train

import (
	"context"
	"math"
	"runtime"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
)

// dpLoRARun is loraRun with DP-SGD on: σ = 1, C = 1, q = batch_size / N.
func dpLoRARun() (Config, model.Config, loss.Config) {
	cfg, mcfg, lcfg := loraRun()
	cfg.DP = DefaultDPConfig()
	cfg.DP.Enabled = true
	cfg.DP.NoiseMultiplier = 1
	return cfg, mcfg, lcfg
}

// adapterWeights is the adapters of runDir's newest checkpoint, flattened
// in PEFT's name order.
func adapterWeights(t *testing.T, runDir string, mcfg model.Config) []float64 {
	t.Helper()
	var out []float64
	for _, v := range paramValues(savedAdapter(t, runDir, mcfg).Params()) {
		out = append(out, v...)
	}
	return out
}

// With σ = 0, C = 1e30 and q = 1, DP-SGD over LoRA adapters is plain LoRA
// training over the whole training set, as TestDPNoNoiseNoClipIsPlainTraining
// shows for the full model: the same losses, adapter gradient norms and
// validation losses each step, and the same adapters at the end, to 1e-6
// relative (rows one at a time against one batched pass).
func TestDPLoRANoNoiseNoClipIsPlainLoRA(t *testing.T) {
	cfg, mcfg, _ := loraRun()
	lcfg := loss.Config{Strategy: loss.StrategyNone}
	const n = 8
	src := textSource{ids: opticks(t, 2000), rows: n}
	cfg.Steps, cfg.BatchSize, cfg.GradAccum, cfg.CheckpointEvery, cfg.EvalEvery = 4, n, 1, 4, 2
	plain, dp := t.TempDir(), t.TempDir()
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, plain, Options{}); err != nil {
		t.Fatal(err)
	}
	cfg.DP = DPConfig{Enabled: true, MaxGradNorm: 1e30, Delta: 1e-5, SampleRate: 1, Sampling: SamplingPoisson}
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, dp, Options{}); err != nil {
		t.Fatal(err)
	}
	mp, md := readMetrics(t, plain), readMetrics(t, dp)
	if len(mp) != len(md) || len(mp) != 4 {
		t.Fatalf("%d plain and %d DP metric rows, want 4", len(mp), len(md))
	}
	for i := range mp {
		for _, c := range []struct {
			name     string
			got, ref float64
		}{{"loss", md[i].LossKept, mp[i].LossKept}, {"grad norm", md[i].GradNorm, mp[i].GradNorm}, {"val loss", md[i].ValLoss, mp[i].ValLoss}} {
			if math.IsNaN(c.ref) && math.IsNaN(c.got) {
				continue
			}
			if d := math.Abs(c.got-c.ref) / math.Abs(c.ref); !(d <= 1e-6) {
				t.Errorf("step %d %s: DP+LoRA %v, LoRA %v (%.2g relative)", i+1, c.name, c.got, c.ref, d)
			}
		}
	}
	rel := relDiff(adapterWeights(t, dp, mcfg), adapterWeights(t, plain, mcfg))
	t.Logf("final adapters agree to %.2g relative (L2)", rel)
	if !(rel <= 1e-6) {
		t.Errorf("final adapters differ by %.2g relative, want <= 1e-6", rel)
	}
	if st := dpReportOf(t, dp); st.Steps != 4 || !math.IsInf(st.Eps(), 1) || st.Rows != n {
		t.Errorf("DP report %+v: want 4 steps, ε = +Inf (σ = 0), N = %d", st, n)
	}
}

// loraFixture is dpFixture's nano model and rows with rank-4 adapters on
// every linear layer, B drawn non-zero (as after some training) so that
// both A's and B's gradients are non-zero.
func loraFixture(t *testing.T) (*model.LoRA, []DPRow, int) {
	t.Helper()
	g, rows, block := dpFixture(t)
	ad, err := model.NewLoRA(g, model.LoRAOptions{Rank: 4, Alpha: 8, Seed: 11,
		Targets: []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}})
	if err != nil {
		t.Fatal(err)
	}
	torchx.NoGrad(func() {
		for _, p := range ad.Params() {
			r := ts.MustRandn(p.Tensor.MustSize(), gotch.Float, gotch.CPU).MustMulScalar(ts.FloatScalar(0.05), true)
			p.Tensor.Copy_(r)
			r.MustDrop()
		}
	})
	return ad, rows, block
}

// The clipped sum of the adapters' per-row gradients equals a loop that
// runs each row alone through the adapted model, reads its adapter
// gradients, clips and sums them in float64, to 1e-6 relative, with C
// between the rows' norms; the base gets no gradient.
func TestDPLoRAClippedSumMatchesPerRowReference(t *testing.T) {
	ad, rows, block := loraFixture(t)
	params := ad.Params()
	var ref [][]float64
	var norms []float64
	for _, r := range rows {
		zeroGrads(params)
		if !backwardAlone(t, ad, r, block) {
			continue
		}
		var f []float64
		for _, p := range params {
			gr := p.Tensor.MustGrad(false)
			f = append(f, gr.Float64Values()...)
			gr.MustDrop()
		}
		var sq float64
		for _, x := range f {
			sq += x * x
		}
		ref = append(ref, f)
		norms = append(norms, math.Sqrt(sq))
	}
	zeroGrads(params)
	if len(ref) != 5 {
		t.Fatalf("%d rows keep targets, want 5", len(ref))
	}
	lo, hi := math.Inf(1), 0.0
	for _, n := range norms {
		lo, hi = math.Min(lo, n), math.Max(hi, n)
	}
	clip := (lo + hi) / 2
	want := make([]float64, len(ref[0]))
	clipped := 0
	for i, f := range ref {
		factor := math.Min(1, clip/(norms[i]+1e-6))
		if factor < 1 {
			clipped++
		}
		for j, x := range f {
			want[j] += factor * x
		}
	}
	sum, st, err := ClippedNoisedSum(ad, params, rows, block, clip, 0, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer drop(sum)
	if rel := relDiff(flat(sum), want); !(rel <= 1e-6) {
		t.Errorf("clipped adapter sum differs from the per-row reference by %.3g relative, want <= 1e-6", rel)
	}
	if st.Rows != 5 || st.Clipped != clipped || clipped == 0 || clipped == 5 {
		t.Errorf("stats %+v: want 5 rows, %d clipped (some, not all)", st, clipped)
	}
	if len(sum) != len(params) {
		t.Errorf("%d summed tensors for %d adapters", len(sum), len(params))
	}
}

// In the loop, DP-SGD over adapters moves every adapter and no base
// weight, with two workers whose adapters stay the master's.
func TestDPLoRAOnlyAdaptersMove(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cfg, mcfg, lcfg := dpLoRARun()
	l := testLoop(t, cfg, mcfg, lcfg)
	if err := l.setupDP(); err != nil {
		t.Fatal(err)
	}
	if l.dp == nil || len(l.lora) != 2 {
		t.Fatalf("DP state %v, %d adapter sets; want DP on and 2 sets", l.dp, len(l.lora))
	}
	frozen := paramValues(l.g.Params())
	ad0 := paramValues(l.lora[0].Params())
	for s := 0; s < 3; s++ {
		if _, err := l.trainStep(); err != nil {
			t.Fatal(err)
		}
		l.step++
	}
	checkOnlyAdaptersMoved(t, l, frozen, ad0)
	if got := l.dp.acct.Steps(); got != 3 {
		t.Errorf("accountant has %d steps, want 3", got)
	}
}

// A DP-SGD run over LoRA adapters stopped after step 6 and resumed ends
// bit-identical to the uninterrupted one (adapters, moments, metrics).
func TestDPLoRAResumeIsExact(t *testing.T) {
	cfg, mcfg, lcfg := dpLoRARun()
	checkResumeExact(t, cfg, mcfg, lcfg)
}

// checkOnlyAdaptersMoved fails t unless, since frozen and ad0 were read,
// every base weight of l stayed bit for bit, every adapter moved, and the
// second worker's adapters are the master's.
func checkOnlyAdaptersMoved(t *testing.T, l *loop, frozen, ad0 [][]float64) {
	t.Helper()
	for i, v := range paramValues(l.g.Params()) {
		if !sameValues(v, frozen[i]) {
			t.Errorf("base weight %s moved", l.g.Params()[i].Name)
		}
	}
	after := paramValues(l.lora[0].Params())
	for i, p := range l.lora[0].Params() {
		if sameValues(after[i], ad0[i]) {
			t.Errorf("adapter %s did not move in 3 steps", p.Name)
		}
	}
	for i, v := range paramValues(l.lora[1].Params()) {
		if !sameValues(v, after[i]) {
			t.Errorf("worker 1's %s is not the master's", l.lora[1].Params()[i].Name)
		}
	}
}
