package engine

import (
	"math"
	"runtime"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"
)

// TestScoreWindowsMatchesTokenNLLAndLogits: ScoreWindows' NLL is TokenNLL's
// bit for bit, its logits are Forward's at the positions asked for, and its
// moments are those of log-softmax over those logits, computed here in Go.
func TestScoreWindowsMatchesTokenNLLAndLogits(t *testing.T) {
	g := newTest(t, model.Config{Preset: "nano", Vocab: 61, Context: 32, Seed: 3})
	// Moments in chunks of 4 positions of the batch's 3 × 6: chunks span
	// windows, and a window of 6 positions spans two.
	defer func(n int) { momentElems = n }(momentElems)
	momentElems = 4 * 61
	windows := [][]int32{{1, 5, 9, 2, 7, 7, 3}, {4}, {8, 8, 60, 0}}
	spans := [][2]int{{2, 6}, {0, 0}, {0, 3}}
	want, err := TokenNLL(g, windows)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ScoreWindows(g, windows, spans, SpanOptions{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range windows {
		if len(got[i].NLL) != len(want[i]) {
			t.Fatalf("window %d: %d NLLs, TokenNLL %d", i, len(got[i].NLL), len(want[i]))
		}
		for j := range want[i] {
			if math.Float32bits(got[i].NLL[j]) != math.Float32bits(want[i][j]) {
				t.Errorf("window %d position %d: NLL %v, TokenNLL %v (not bit-identical)", i, j, got[i].NLL[j], want[i][j])
			}
		}
		if len(w) < 2 {
			if got[i].Logits != nil || got[i].Mean != nil {
				t.Errorf("window %d of one token: got logits or moments", i)
			}
			continue
		}
		// The window alone through Forward: its logits and their moments.
		in := make([]int64, len(w)-1)
		for j := range in {
			in[j] = int64(w[j])
		}
		var rows [][]float32
		torchx.NoGrad(func() {
			lg := g.Forward(ids(t, [][]int64{in}))
			rows = model.RowsOf(lg.MustView([]int64{int64(len(in)), -1}, true), len(in))
		})
		if n := spans[i][1] - spans[i][0]; len(got[i].Logits) != n {
			t.Fatalf("window %d: %d logit rows, want %d", i, len(got[i].Logits), n)
		}
		for k, row := range got[i].Logits {
			for v := range row {
				if d := math.Abs(float64(row[v] - rows[spans[i][0]+k][v])); d > 1e-4 {
					t.Fatalf("window %d position %d token %d: logit %v, Forward alone %v", i, spans[i][0]+k, v, row[v], rows[spans[i][0]+k][v])
				}
			}
		}
		for j, row := range rows {
			mx := math.Inf(-1)
			for _, x := range row {
				mx = math.Max(mx, float64(x))
			}
			var z float64
			for _, x := range row {
				z += math.Exp(float64(x) - mx)
			}
			var mu, m2 float64
			for _, x := range row {
				lp := float64(x) - mx - math.Log(z)
				mu += math.Exp(lp) * lp
				m2 += math.Exp(lp) * lp * lp
			}
			if d := math.Abs(got[i].Mean[j] - mu); d > 1e-4 {
				t.Errorf("window %d position %d: mean log p %v, want %v", i, j, got[i].Mean[j], mu)
			}
			if d := math.Abs(got[i].Var[j] - (m2 - mu*mu)); d > 1e-4 {
				t.Errorf("window %d position %d: variance %v, want %v", i, j, got[i].Var[j], m2-mu*mu)
			}
			// -NLL is log p of the true token under the same distribution.
			lpTrue := float64(row[w[j+1]]) - mx - math.Log(z)
			if d := math.Abs(lpTrue + float64(got[i].NLL[j])); d > 1e-4 {
				t.Errorf("window %d position %d: NLL %v, -log p %v", i, j, got[i].NLL[j], -lpTrue)
			}
		}
	}
	if _, err := ScoreWindows(g, windows, [][2]int{{0, 7}, {0, 0}, {0, 0}}, SpanOptions{}); err == nil {
		t.Error("a span past the window's positions was accepted")
	}
}

// TestGradNormIsTheGradientsNorm checks GradNorm against a finite
// difference: moving the weights by ε along the unit gradient direction u
// changes the loss at rate ‖∇L‖ (the directional derivative along ∇L/‖∇L‖
// is ‖∇L‖), measured by the central difference (L(θ+εu) − L(θ−εu)) / 2ε.
func TestGradNormIsTheGradientsNorm(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g := newTest(t, model.Config{Preset: "nano", Vocab: 61, Context: 32, Seed: 5})
	w := []int32{3, 14, 15, 9, 26, 5, 35, 8, 9, 7, 9, 3}
	norms, err := GradNorm(g, [][]int32{w, {4}})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(norms[1]) {
		t.Errorf("a one-token window has no loss: norm %v, want NaN", norms[1])
	}
	norm := norms[0]
	if !(norm > 0) {
		t.Fatalf("gradient norm %v", norm)
	}
	// The direction: the gradient again, from an ordinary backward.
	in := make([]int64, len(w)-1)
	tg := make([]int64, len(w)-1)
	for j := range in {
		in[j], tg[j] = int64(w[j]), int64(w[j+1])
	}
	lossAt := func() float64 {
		var l float64
		torchx.NoGrad(func() {
			lg := g.Forward(ids(t, [][]int64{in}))
			lf := lg.MustView([]int64{int64(len(in)), -1}, true)
			x, err := lf.CrossEntropyLoss(ts.MustOfSlice(tg), ts.NewTensor(), ts.ReductionMean, -100, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			l = x.Float64Values()[0]
		})
		return l
	}
	lg := g.Forward(ids(t, [][]int64{in}))
	lf := lg.MustView([]int64{int64(len(in)), -1}, true)
	x, err := lf.CrossEntropyLoss(ts.MustOfSlice(tg), ts.NewTensor(), ts.ReductionMean, -100, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	x.MustBackward()
	var dirs []*ts.Tensor
	var sq float64
	for _, p := range g.Params() {
		gr := p.Tensor.MustGrad(false).MustDetach(false).MustTotype(gotch.Double, true)
		sq += gr.MustSquare(false).MustSum(gotch.Double, true).Float64Values()[0]
		dirs = append(dirs, gr)
	}
	if d := math.Abs(math.Sqrt(sq)-norm) / norm; d > 1e-4 {
		t.Errorf("GradNorm %v, norm of an ordinary backward's gradient %v", norm, math.Sqrt(sq))
	}
	const eps = 1e-2
	step := func(sign float64) {
		torchx.NoGrad(func() {
			for i, p := range g.Params() {
				d := dirs[i].MustMulScalar(ts.FloatScalar(sign*eps/norm), false).MustTotype(p.Tensor.DType(), true)
				p.Tensor.MustAdd_(d)
				d.MustDrop()
			}
		})
	}
	step(1)
	up := lossAt()
	step(-2)
	down := lossAt()
	step(1)
	fd := (up - down) / (2 * eps)
	if d := math.Abs(fd-norm) / norm; d > 0.02 {
		t.Errorf("central difference along the gradient %.5g, GradNorm %.5g (relative gap %.3g > 2 %%)", fd, norm, d)
	}
	t.Logf("GradNorm %.6g, finite difference %.6g", norm, fd)
}

// BenchmarkGradNormSmall times GradNorm of 8 windows of 256 tokens on the
// small preset (vocab 4096), the per-document cost of extract.grad_norm.
func BenchmarkGradNormSmall(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	vs := nn.NewVarStore(gotch.CPU)
	g, err := model.New(vs.Root(), model.Config{Preset: "small", Vocab: 4096})
	if err != nil {
		b.Fatal(err)
	}
	windows := make([][]int32, 8)
	for i := range windows {
		for j := 0; j < 256; j++ {
			windows[i] = append(windows[i], int32((i*31+j*7)%4096))
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := GradNorm(g, windows); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Seconds())/float64(b.N*len(windows)), "s/window")
}
