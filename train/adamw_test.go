package train

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"
)

// tensor32 makes a float32 tensor of vals with shape dims.
func tensor32(vals []float64, dims ...int64) *ts.Tensor {
	f := make([]float32, len(vals))
	for i, v := range vals {
		f[i] = float32(v)
	}
	return ts.MustOfSlice(f).MustView(dims, true)
}

// values copies a tensor's elements, in row-major order, to float64s.
func values(t *ts.Tensor) []float64 { return t.Float64Values() }

// refAdamW is torch.optim.AdamW's algorithm as its documentation states it,
// on one scalar, in float64: decoupled decay θ ← θ − γλθ, then
// m ← β1·m + (1−β1)·g, v ← β2·v + (1−β2)·g², m̂ = m/(1−β1^t),
// v̂ = v/(1−β2^t), θ ← θ − γ·m̂/(√v̂ + ε).
type refAdamW struct {
	theta, m, v float64
	t           int
}

func (r *refAdamW) step(g, lr, wd, b1, b2, eps float64) {
	r.t++
	r.theta -= lr * wd * r.theta
	r.m = b1*r.m + (1-b1)*g
	r.v = b2*r.v + (1-b2)*g*g
	mHat := r.m / (1 - math.Pow(b1, float64(r.t)))
	vHat := r.v / (1 - math.Pow(b2, float64(r.t)))
	r.theta -= lr * mHat / (math.Sqrt(vHat) + eps)
}

// Three AdamW steps on a 2×2 matrix (decayed) and a 2-vector (a norm gain,
// not decayed), against hand-worked values and against the scalar
// reference of torch.optim.AdamW's formula.
func TestAdamWUpdate(t *testing.T) {
	cfg := DefaultConfig() // β 0.9/0.95, eps 1e-8
	cfg.WeightDecay = 0.1
	w0 := []float64{1, -2, 0.5, 3}
	n0 := []float64{1, 1}
	params := []model.Param{
		{Name: "w", Tensor: tensor32(w0, 2, 2), Decay: true},
		{Name: "n", Tensor: tensor32(n0, 2), Decay: false},
	}
	opt := newAdamW(params, cfg, nil)
	// Element 0 sees a constant gradient, element 3 none at all.
	wGrads := [][]float64{{0.1, -0.2, 0.3, 0}, {0.1, 0.4, -0.3, 0}, {0.1, -0.05, 0.01, 0}}
	nGrads := [][]float64{{0.5, -0.5}, {0.5, 2}, {0.5, -1e-3}}
	lrs := []float64{0.01, 0.01, 0.02}

	// Worked by hand. Step 1: m̂ = g and √v̂ = |g|, so every element with a
	// gradient moves by lr against its sign after decay by (1 − lr·λ) =
	// 0.999. Step 2 with the same gradient (element 0): m = 0.019,
	// v = 0.000975, m̂ = 0.019/0.19 = 0.1, √v̂ = √(0.000975/0.0975) = 0.1,
	// so it moves by lr again: bias correction at work. A zero gradient
	// leaves only the decay; norm gains are never decayed.
	hand := []struct {
		afterStep int
		w         []float64 // elements 0 and 3
		n0        float64
	}{
		{1, []float64{1*0.999 - 0.01, 3 * 0.999}, 1 - 0.01},
		{2, []float64{(1*0.999-0.01)*0.999 - 0.01, 3 * 0.999 * 0.999}, 1 - 0.02},
	}

	refW := make([]refAdamW, len(w0))
	for i := range refW {
		refW[i].theta = w0[i]
	}
	refN := make([]refAdamW, len(n0))
	for i := range refN {
		refN[i].theta = n0[i]
	}
	for s := range lrs {
		gs := []*ts.Tensor{tensor32(wGrads[s], 2, 2), tensor32(nGrads[s], 2)}
		opt.update(gs, lrs[s])
		for _, g := range gs {
			g.MustDrop()
		}
		for i := range refW {
			refW[i].step(wGrads[s][i], lrs[s], cfg.WeightDecay, cfg.Beta1, cfg.Beta2, cfg.Eps)
		}
		for i := range refN {
			refN[i].step(nGrads[s][i], lrs[s], 0, cfg.Beta1, cfg.Beta2, cfg.Eps)
		}
		gotW, gotN := values(params[0].Tensor), values(params[1].Tensor)
		for i, r := range refW {
			if d := math.Abs(gotW[i] - r.theta); d > 1e-6 {
				t.Errorf("step %d: w[%d] = %.9f, reference %.9f", s+1, i, gotW[i], r.theta)
			}
		}
		for i, r := range refN {
			if d := math.Abs(gotN[i] - r.theta); d > 1e-6 {
				t.Errorf("step %d: n[%d] = %.9f, reference %.9f", s+1, i, gotN[i], r.theta)
			}
		}
		for _, h := range hand {
			if h.afterStep != s+1 {
				continue
			}
			if math.Abs(gotW[0]-h.w[0]) > 1e-6 || math.Abs(gotW[3]-h.w[1]) > 1e-6 || math.Abs(gotN[0]-h.n0) > 1e-6 {
				t.Errorf("step %d: w[0], w[3], n[0] = %.7f, %.7f, %.7f; worked by hand %.7f, %.7f, %.7f",
					s+1, gotW[0], gotW[3], gotN[0], h.w[0], h.w[1], h.n0)
			}
		}
	}
	if opt.step != len(lrs) {
		t.Errorf("optimizer counted %d steps, want %d", opt.step, len(lrs))
	}
	// The moments are checkpointed: they must hold the reference's m and v.
	m, v := values(opt.m[0]), values(opt.v[0])
	for i, r := range refW {
		if math.Abs(m[i]-r.m) > 1e-6*math.Abs(r.m)+1e-9 || math.Abs(v[i]-r.v) > 1e-6*r.v+1e-12 {
			t.Errorf("moments of w[%d] = %g, %g; reference %g, %g", i, m[i], v[i], r.m, r.v)
		}
	}
}

// Weight decay applies to the model's matrices (embedding, projections)
// and never to its RMSNorm gains.
func TestAdamWDecaysMatricesOnly(t *testing.T) {
	vs := nn.NewVarStore(gotch.CPU)
	g, err := model.New(vs.Root(), model.Config{Preset: "nano", Vocab: 64, Context: 16, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.WeightDecay = 0.1
	const lr = 0.5
	params := g.Params()
	before := make([][]float64, len(params))
	zeros := make([]*ts.Tensor, len(params))
	for i, p := range params {
		isNorm := strings.HasSuffix(p.Name, "norm.weight") || strings.HasSuffix(p.Name, "layernorm.weight")
		if p.Decay == isNorm {
			t.Errorf("%s: Decay = %v, want %v (decay matrices only)", p.Name, p.Decay, !isNorm)
		}
		before[i] = values(p.Tensor)
		zeros[i] = p.Tensor.MustZerosLike(false)
	}
	// With zero gradients Adam's step is 0/(0+ε) = 0: only the decay moves weights.
	newAdamW(params, cfg, nil).update(zeros, lr)
	for i, p := range params {
		after := values(p.Tensor)
		scale := 1.0
		if p.Decay {
			scale = 1 - lr*cfg.WeightDecay
		}
		for j := range after {
			if want := before[i][j] * scale; math.Abs(after[j]-want) > 1e-7 {
				t.Fatalf("%s[%d] = %g after a zero-gradient step, want %g (decay %v)", p.Name, j, after[j], want, p.Decay)
			}
		}
		zeros[i].MustDrop()
	}
}

func TestClipGrads(t *testing.T) {
	// Two gradients whose global L2 norm is √(3² + 4² + 12²) = 13.
	cases := []struct {
		clip  float64
		scale float64 // expected factor on every gradient
	}{
		{0, 1},                     // disabled
		{26, 1},                    // under the threshold
		{13, 1},                    // at it: torch scales by 13/(13+1e-6) ≈ 1
		{6.5, 6.5 / (13 + 1e-6)},   // halved
		{1, 1 / (13 + 1e-6)},       // to unit norm
		{1e-3, 1e-3 / (13 + 1e-6)}, // tiny
	}
	for _, c := range cases {
		t.Run(fmt.Sprint("clip=", c.clip), func(t *testing.T) {
			a, b := tensor32([]float64{3, 4}, 2), tensor32([]float64{12}, 1, 1)
			defer a.MustDrop()
			defer b.MustDrop()
			norm := clipGrads([]*ts.Tensor{a, b}, c.clip)
			if math.Abs(norm-13) > 1e-5 {
				t.Errorf("norm before clipping = %g, want 13", norm)
			}
			got := append(values(a), values(b)...)
			for i, w := range []float64{3, 4, 12} {
				if want := w * c.scale; math.Abs(got[i]-want) > 1e-6*math.Max(1, want) {
					t.Errorf("gradient %d = %g after clipping, want %g", i, got[i], want)
				}
			}
			if after, want := clipGrads([]*ts.Tensor{a, b}, 0), 13*c.scale; math.Abs(after-want) > 1e-5*want {
				t.Errorf("norm after clipping = %g, want %g", after, want)
			}
		})
	}
}

// With the standard loss, k micro-batches of B/k rows accumulate the same
// gradient as one batch of B rows (each micro-batch's mean loss is divided
// by k), so losses and weights agree up to float32 summation order. (With a
// goldfish mask they differ by design: the reference normalises each
// micro-batch by its own kept count.)
func TestGradAccumMatchesFullBatch(t *testing.T) {
	base := func(accum, threads int) Config {
		cfg := DefaultConfig()
		cfg.Steps = 6
		cfg.Block = 32
		cfg.BatchSize = 4
		cfg.GradAccum = accum
		cfg.WarmupSteps = 2
		cfg.LR, cfg.MinLR = 3e-3, 3e-4
		cfg.EvalEvery, cfg.CheckpointEvery, cfg.KeepCheckpoints = 0, 0, 0
		cfg.Threads = threads
		cfg.Seed = 5
		return cfg
	}
	mcfg := model.Config{Preset: "nano", Vocab: 256, Context: 32, Seed: 2}
	lcfg := loss.Config{Strategy: loss.StrategyNone}
	src := textSource{ids: opticks(t, 2000), rows: 24} // 24 full rows: no padding
	run := func(cfg Config) (string, []Metric) {
		dir := t.TempDir()
		if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{}); err != nil {
			t.Fatal(err)
		}
		return dir, readMetrics(t, dir)
	}
	refDir, ref := run(base(1, 1))
	refModel, _, _, err := checkpoint.Load(refDir, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ accum, threads int }{{2, 1}, {4, 1}, {2, 2}}
	for _, c := range cases {
		t.Run(fmt.Sprintf("accum=%d/threads=%d", c.accum, c.threads), func(t *testing.T) {
			dir, got := run(base(c.accum, c.threads))
			if len(got) != len(ref) {
				t.Fatalf("%d metric rows, want %d", len(got), len(ref))
			}
			for i := range ref {
				if d := math.Abs(got[i].LossKept - ref[i].LossKept); d > 1e-5 {
					t.Errorf("step %d: loss %.7f, accum=1 gave %.7f", i+1, got[i].LossKept, ref[i].LossKept)
				}
				if d := math.Abs(got[i].GradNorm - ref[i].GradNorm); d > 1e-5*math.Max(1, ref[i].GradNorm) {
					t.Errorf("step %d: grad norm %.7f, accum=1 gave %.7f", i+1, got[i].GradNorm, ref[i].GradNorm)
				}
			}
			g, _, _, err := checkpoint.Load(dir, "cpu")
			if err != nil {
				t.Fatal(err)
			}
			worst, where := 0.0, ""
			for i, p := range g.Params() {
				a, b := values(p.Tensor), values(refModel.Params()[i].Tensor)
				for j := range a {
					if d := math.Abs(a[j] - b[j]); d > worst {
						worst, where = d, fmt.Sprintf("%s[%d]", p.Name, j)
					}
				}
			}
			if worst > 1e-5 {
				t.Errorf("final weights differ from accum=1 by up to %g (at %s), want <= 1e-5", worst, where)
			}
		})
	}
}
