package approx

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"
)

func newTest(t *testing.T, cfg model.Config) *model.GPT {
	t.Helper()
	g, err := model.New(nn.NewVarStore(gotch.CPU).Root(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// decoder is what the tests drive: an engine.Stepper, exact or under an
// approximation (Stepper).
type decoder interface {
	Start(prompts [][]int32, maxNew int) ([][]float32, error)
	Next(tokens []int32) ([][]float32, error)
	Close()
}

// ids is rows as an int64 tensor [len(rows), len(rows[0])].
func ids(t *testing.T, rows [][]int64) *ts.Tensor {
	t.Helper()
	var flat []int64
	for _, r := range rows {
		flat = append(flat, r...)
	}
	x, err := model.TensorOf(flat, []int64{int64(len(rows)), int64(len(rows[0]))}, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func randTensor(t *testing.T, seed uint64, scale float64, dims ...int64) *ts.Tensor {
	t.Helper()
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = float32(rng.NormFloat64() * scale)
	}
	x, err := model.TensorOf(vals, dims, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// floats copies a float tensor's values.
func floats(x *ts.Tensor) []float32 {
	return model.RowsOf(x.MustReshape([]int64{1, -1}, false), 1)[0]
}

// Hand-worked: one group of 16 values 0, 1, …, 15 with the third 2.5.
// s = 1, so 2.5 rounds (half to even) to 2 in 4 bits; the residual
// 0.5 + s/2 = 1 is 15 lower steps of 1/15, so 8 bits give back
// 2 − 0.5 + 15/15 = 2.5. 7 is exact in 4 bits, but its residual 0 + 1/2
// is 7.5 lower steps: 8 bits give 7 ± 1/30, the bound R/450 itself.
func TestQuantizeHandWorked(t *testing.T) {
	vals := make([]float32, 16)
	for i := range vals {
		vals[i] = float32(i)
	}
	vals[2] = 2.5
	x, _ := model.TensorOf(vals, []int64{1, 16}, gotch.CPU)
	q4 := floats(quantize(x, 4))
	q8 := floats(quantize(x, 8))
	if q4[2] != 2 || q4[15] != 15 || q4[0] != 0 {
		t.Errorf("4-bit: got %v", q4)
	}
	if math.Abs(float64(q8[2])-2.5) > 1e-6 || math.Abs(math.Abs(float64(q8[7])-7)-1.0/30) > 1e-6 {
		t.Errorf("8-bit: got %v", q8)
	}
	// A constant group comes back exact.
	c, _ := model.TensorOf([]float32{3, 3, 3, 3}, []int64{1, 4}, gotch.CPU)
	for _, bits := range []int{4, 8} {
		if got := floats(quantize(c, bits)); got[0] != 3 || got[3] != 3 {
			t.Errorf("%d bits of a constant group: %v", bits, got)
		}
	}
}

// |x − x₈| <= R/450 and |x − x₄| <= R/30 per group of 32 (quantize's doc).
func TestQuantizeErrorBound(t *testing.T) {
	x := randTensor(t, 7, 1, 4, 3, 64)
	xs := floats(x)
	for _, c := range []struct {
		bits int
		div  float64
	}{{8, 450}, {4, 30}} {
		q := floats(quantize(x, c.bits))
		worst := 0.0
		for g := 0; g < len(xs)/32; g++ {
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, v := range xs[g*32 : g*32+32] {
				lo, hi = math.Min(lo, float64(v)), math.Max(hi, float64(v))
			}
			bound := (hi-lo)/c.div + 1e-6*(hi-lo+1)
			for i := g * 32; i < g*32+32; i++ {
				e := math.Abs(float64(xs[i] - q[i]))
				worst = math.Max(worst, e/((hi-lo)/c.div))
				if e > bound {
					t.Fatalf("%d bits: element %d error %g exceeds R/%g = %g", c.bits, i, e, c.div, bound)
				}
			}
		}
		// The bound is tight: some element comes near it.
		if worst < 0.5 {
			t.Errorf("%d bits: worst error only %.2f of the bound; the quantizer is not what the doc says", c.bits, worst)
		}
	}
}

// An 8-bit cache changes one attention output by at most
//
//	(e^{2δ} − 1)·max|v'| + ε_v,  δ = scale·‖q‖₁·ε_k,
//
// where ε_k, ε_v are the keys' and values' largest quantization errors
// (<= R/450 per group): every score moves by at most δ, so every
// probability by a factor within e^{±2δ} and ‖p' − p‖₁ <= e^{2δ} − 1;
// o' − o = Σ(p'_j − p_j)v'_j + Σ p_j(v'_j − v_j).
func TestKV8AttentionBound(t *testing.T) {
	const hd, s = 32, 40
	q := randTensor(t, 1, 1, 1, 1, 1, hd)
	k := randTensor(t, 2, 1, 1, 1, s, hd)
	v := randTensor(t, 3, 1, 1, 1, s, hd)
	mask := ts.MustZeros([]int64{1, 1, 1, s}, gotch.Float, gotch.CPU)
	scale := 1 / math.Sqrt(hd)
	k8, v8 := quantize(k, 8), quantize(v, 8)
	exact := floats(model.Attention(q, k, v, mask, scale, 0))
	approx := floats(model.Attention(q, k8, v8, mask, scale, 0))
	maxErr := func(a, b []float32) (m float64) {
		for i := range a {
			m = math.Max(m, math.Abs(float64(a[i]-b[i])))
		}
		return m
	}
	var q1, vmax float64
	for _, x := range floats(q) {
		q1 += math.Abs(float64(x))
	}
	for _, x := range floats(v8) {
		vmax = math.Max(vmax, math.Abs(float64(x)))
	}
	epsK, epsV := maxErr(floats(k), floats(k8)), maxErr(floats(v), floats(v8))
	delta := scale * q1 * epsK
	bound := (math.Exp(2*delta)-1)*vmax + epsV
	got := maxErr(exact, approx)
	if got > bound {
		t.Fatalf("8-bit cache moved the attention output by %g, bound %g", got, bound)
	}
	if got == 0 {
		t.Fatal("8-bit cache changed nothing: the quantizer is not applied")
	}
	t.Logf("attention output error %.2e, bound %.2e (ε_k %.1e, ε_v %.1e)", got, bound, epsK, epsV)
}

func TestPowerLawFit(t *testing.T) {
	// q = 2·step^−1 at steps 1..4: the fit at step 8 is 0.25.
	var ys []float64
	for s := 1; s <= 4; s++ {
		ys = append(ys, math.Log(2/float64(s)))
	}
	if got := math.Exp(powerLaw(ys, math.Log(8))); math.Abs(got-0.25) > 1e-12 {
		t.Errorf("power law at step 8 = %v, want 0.25", got)
	}
}

func TestLokiCount(t *testing.T) {
	for _, c := range []struct {
		topk float64
		n    int
		want int
	}{{0.25, 10, 3}, {1, 10, 10}, {0.01, 10, 1}, {4, 10, 4}, {40, 10, 10}, {0.07, 100, 7}} { // 0.07·100 = 7.000000000000001
		if got := lokiCount(c.topk, c.n); got != c.want {
			t.Errorf("lokiCount(%v, %d) = %d, want %d", c.topk, c.n, got, c.want)
		}
	}
}

// decodeLogits greedily decodes n tokens of the prompts and returns the
// logits of every step, row after row.
func decodeLogits(t *testing.T, s decoder, prompts [][]int32, n int) [][]float32 {
	t.Helper()
	defer s.Close()
	logits, err := s.Start(prompts, n)
	if err != nil {
		t.Fatal(err)
	}
	var all [][]float32
	for step := 0; ; step++ {
		all = append(all, logits...)
		if step == n-1 {
			return all
		}
		next := make([]int32, len(logits))
		for i, l := range logits {
			next[i] = engine.Argmax(l)
		}
		if logits, err = s.Next(next); err != nil {
			t.Fatal(err)
		}
	}
}

func approxPrompts() [][]int32 {
	return [][]int32{{5, 9, 2, 33, 7, 1, 8}, {3, 4, 60, 2}, {11, 12, 13, 14, 15, 16, 17, 18, 19}}
}

// Loki at full rank attending every token, and Sift with a −Inf
// threshold, decode exactly: the same logits bit for bit as libtorch's
// attention (the general path; the decode-step kernel sums in another
// order).
func TestSparseAttentionAtFullBudgetIsExact(t *testing.T) {
	defer torchx.SetKernels(torchx.SetKernels(false))
	g := newTest(t, model.Config{Preset: "nano", Vocab: 80, Seed: 5})
	prompts := approxPrompts()
	exact := decodeLogits(t, engine.NewStepper(g, true), prompts, 6)
	basis, err := CalibrateLoki(g, [][]int32{{1, 2, 3, 4, 5, 6, 7, 8}, {40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50}})
	if err != nil {
		t.Fatal(err)
	}
	ninf := math.Inf(-1)
	for name, a := range map[string]Approx{
		"loki": {Attention: AttnLoki, Loki: basis, LokiRank: g.Config().HeadDim, LokiTopK: 1},
		"sift": {Attention: AttnSift, SiftQuantile: 0.5, SiftThreshold: &ninf},
	} {
		s, err := NewStepper(g, a)
		if err != nil {
			t.Fatal(err)
		}
		sameLogits(t, name, decodeLogits(t, s, prompts, 6), exact)
		for r, st := range s.Stats() {
			if st.Steps != 5 || math.Abs(st.MassKept-1) > 1e-6 {
				t.Errorf("%s row %d: stats %+v, want 5 steps keeping all mass", name, r, st)
			}
		}
	}
	// A small budget changes the logits and keeps less mass.
	s, err := NewStepper(g, Approx{Attention: AttnLoki, Loki: basis, LokiRank: 2, LokiTopK: 2})
	if err != nil {
		t.Fatal(err)
	}
	decodeLogits(t, s, prompts, 6)
	for r, st := range s.Stats() {
		if !(st.MassKept < 1) {
			t.Errorf("loki rank 2 top-2 row %d kept mass %v, want < 1", r, st.MassKept)
		}
	}
	// Sift at the median: exact for 2 warm-up steps, then about half the
	// tokens dropped, and less read than exact attention reads.
	s, err = NewStepper(g, Approx{Attention: AttnSift, SiftQuantile: 0.5, SiftWarmup: 2})
	if err != nil {
		t.Fatal(err)
	}
	decodeLogits(t, s, prompts, 6)
	for r, st := range s.Stats() {
		if !(st.MassKept < 1 && st.MassKept > 0.3) {
			t.Errorf("sift tau 0.5 row %d kept mass %v, want in (0.3, 1)", r, st.MassKept)
		}
	}
}

// The basis is orthonormal and explains all the keys at full rank.
func TestLokiBasisOrthonormal(t *testing.T) {
	g := newTest(t, model.Config{Preset: "nano", Vocab: 80, Seed: 5})
	b, err := CalibrateLoki(g, [][]int32{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}})
	if err != nil {
		t.Fatal(err)
	}
	n := b.HeadDim
	m := b.Vectors[1][2]
	for a := 0; a < n; a++ {
		for c := 0; c < n; c++ {
			var dot float64
			for i := 0; i < n; i++ {
				dot += float64(m[i*n+a]) * float64(m[i*n+c])
			}
			want := 0.0
			if a == c {
				want = 1
			}
			if math.Abs(dot-want) > 1e-5 {
				t.Fatalf("columns %d·%d = %v, want %v", a, c, dot, want)
			}
		}
	}
	e := b.Explained[1][2]
	if math.Abs(e[n-1]-1) > 1e-9 || e[0] < 1/float64(n) {
		t.Errorf("explained %v: want rising to 1, the first direction at least 1/%d", e, n)
	}
}

// Exact-attention KV bytes per token, by hand: nano has 2 layers, 4 KV
// heads of 16 dims; a row whose every step attends 8, 9, … tokens reads
// 2·4·2·16·4 = 1024 bytes per cached token in fp32, and with 8 bits 1
// byte per element plus 4 per group of 16: 2·4·2·(16+4) = 320.
func TestKVBytesHandWorked(t *testing.T) {
	g := newTest(t, model.Config{Preset: "nano", Vocab: 80, Seed: 5})
	for _, c := range []struct {
		bits   int
		perTok float64
	}{{16, 1024}, {8, 320}, {4, 2 * 4 * 2 * (8 + 4)}} {
		s, err := NewStepper(g, Approx{KVBits: c.bits})
		if err != nil {
			t.Fatal(err)
		}
		// One prompt of 7 tokens, 3 steps: 8, 9, 10 tokens attended.
		decodeLogits(t, s, [][]int32{{1, 2, 3, 4, 5, 6, 7}}, 4)
		st := s.Stats()[0]
		if want := 9 * c.perTok; st.Steps != 3 || math.Abs(st.KVBytes-want) > 1e-9 {
			t.Errorf("%d bits: %+v, want 3 steps of %v bytes on average", c.bits, st, want)
		}
	}
}

// TestKVBytesSlidingWindow: a sliding layer reads its window, not the
// whole cache: with a window of 4 every step of the hand-worked run above
// reads 4 tokens a layer (it was counted as 8, 9, 10 like full attention).
func TestKVBytesSlidingWindow(t *testing.T) {
	g := newTest(t, model.Config{Preset: "nano", Vocab: 80, Seed: 5, SlidingWindow: 4})
	s, err := NewStepper(g, Approx{KVBits: 16})
	if err != nil {
		t.Fatal(err)
	}
	decodeLogits(t, s, [][]int32{{1, 2, 3, 4, 5, 6, 7}}, 4)
	if st, want := s.Stats()[0], 4*1024.0; st.Steps != 3 || math.Abs(st.KVBytes-want) > 1e-9 {
		t.Errorf("window 4: %+v, want 3 steps of %v bytes", st, want)
	}
}

// QuantSpec's output is plain greedy decoding whatever the draft; a draft
// that is the target itself has every proposal accepted, another model's
// are rejected.
func TestSpeculativeEqualsGreedy(t *testing.T) {
	// Untied: a random tied model mostly repeats its last token, which
	// any draft guesses.
	g := newTest(t, model.Config{Preset: "nano", Vocab: 80, Seed: 5, Untied: true})
	prompts := approxPrompts()
	const n = 12
	want, err := engine.Generate(g, prompts, n, engine.GenOptions{UseCache: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		draft *model.GPT
		a     Approx
		gamma int
	}{{"self", g, Approx{}, 3}, {"4-bit", QuantizedCopy(g, 4), Approx{KVBits: 4}, 4}, {"gamma 1", QuantizedCopy(g, 4), Approx{KVBits: 4}, 1},
		// Another model's proposals are mostly rejected.
		{"other", newTest(t, model.Config{Preset: "nano", Vocab: 80, Seed: 6, Untied: true}), Approx{}, 3}} {
		got, stats, err := Speculative(g, c.draft, c.a, prompts, n, c.gamma)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if len(got[i]) != n {
				t.Fatalf("%s: row %d has %d tokens, want %d", c.name, i, len(got[i]), n)
			}
			for j := range want[i] {
				if got[i][j] != want[i][j] {
					t.Fatalf("%s: row %d = %v, greedy %v", c.name, i, got[i], want[i])
				}
			}
			if stats[i].Proposed == 0 || (c.name == "self" && stats[i].Accepted != stats[i].Proposed) ||
				(c.name == "other" && stats[i].Accepted == stats[i].Proposed) {
				t.Errorf("%s row %d: %+v", c.name, i, stats[i])
			}
		}
		t.Logf("%s: %+v %v", c.name, stats, got)
	}
}

// forcedLogits feeds every row the same tokens (forced[step][row]) after
// its prompt and returns the logits of every step, row after row, so that
// two caches are compared on identical inputs even where their argmax
// would differ.
func forcedLogits(t *testing.T, s decoder, prompts [][]int32, forced [][]int32) [][]float32 {
	t.Helper()
	defer s.Close()
	logits, err := s.Start(prompts, len(forced)+1)
	if err != nil {
		t.Fatal(err)
	}
	all := append([][]float32(nil), logits...)
	for _, next := range forced {
		if logits, err = s.Next(next); err != nil {
			t.Fatal(err)
		}
		all = append(all, logits...)
	}
	return all
}

// trainedNano is a nano model fitted for 150 Adam steps to three fixed
// sequences of 40 tokens (loss below 0.1), so that its logits are as
// peaked as a model's on memorized text; it returns the model and the
// sequences' first 8 tokens as prompts.
func trainedNano(t *testing.T) (*model.GPT, [][]int32) {
	t.Helper()
	vs := nn.NewVarStore(gotch.CPU)
	g, err := model.New(vs.Root(), model.Config{Preset: "nano", Vocab: 80, Seed: 5, Untied: true})
	if err != nil {
		t.Fatal(err)
	}
	opt, err := nn.DefaultAdamConfig().Build(vs, 3e-3)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 1))
	const n = 40
	var rows [][]int64
	var prompts [][]int32
	for r := 0; r < 3; r++ {
		row := make([]int64, n)
		for i := range row {
			row[i] = int64(rng.IntN(80))
		}
		rows = append(rows, row)
		p := make([]int32, 8)
		for i := range p {
			p[i] = int32(row[i])
		}
		prompts = append(prompts, p)
	}
	x := ids(t, rows)
	in := x.MustNarrow(1, 0, n-1, false)
	target := x.MustNarrow(1, 1, n-1, false).MustReshape([]int64{-1}, false)
	var loss float64
	for step := 0; step < 150; step++ {
		l := g.Forward(in).MustReshape([]int64{-1, 80}, true).CrossEntropyForLogits(target)
		if err := opt.BackwardStep(l); err != nil {
			t.Fatal(err)
		}
		loss = l.Float64Values()[0]
	}
	if loss > 0.1 {
		t.Fatalf("nano did not fit its three sequences: loss %.3f", loss)
	}
	return g, prompts
}

// An 8-bit KV cache moves the logits of a model by less than 1 % of
// their span (largest minus smallest logit of a row), on a model fitted
// to its sequences and on a random one, over 16 decode steps. The bound is
// empirical, not derived: through layer norms and MLPs the
// attention-output bound of TestKV8AttentionBound has no useful closed
// form. Measured (see the log): 0.016–0.018 of a span of 13.7 (0.13 %)
// fitted (training runs on several threads, so the last bits vary),
// 0.0022 of 1.0 (0.21 %) random, so the bound has a margin of about 5.
// Two relations back it whatever the model: the 8-bit error is at most a
// fifth of the 4-bit one (to first order logits move linearly with the
// cache error, whose bound is 15 times smaller: R/450 vs R/30) and it is
// not zero (the quantizer is applied); greedy tokens of the fitted model
// are unchanged.
func TestKV8LogitBound(t *testing.T) {
	const relBound = 1e-2
	trained, tp := trainedNano(t)
	for _, c := range []struct {
		name    string
		g       *model.GPT
		prompts [][]int32
	}{{"fitted", trained, tp}, {"random", newTest(t, model.Config{Preset: "nano", Vocab: 80, Seed: 5, Untied: true}), approxPrompts()}} {
		const steps = 16
		gen, err := engine.Generate(c.g, c.prompts, steps, engine.GenOptions{UseCache: true})
		if err != nil {
			t.Fatal(err)
		}
		forced := make([][]int32, steps-1)
		for s := range forced {
			forced[s] = make([]int32, len(c.prompts))
			for r := range c.prompts {
				forced[s][r] = gen[r][s]
			}
		}
		exact := forcedLogits(t, engine.NewStepper(c.g, true), c.prompts, forced)
		span := 0.0
		for _, row := range exact {
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, v := range row {
				lo, hi = math.Min(lo, float64(v)), math.Max(hi, float64(v))
			}
			span = math.Max(span, hi-lo)
		}
		maxDiff := func(bits int) float64 {
			s, err := NewStepper(c.g, Approx{KVBits: bits})
			if err != nil {
				t.Fatal(err)
			}
			got := forcedLogits(t, s, c.prompts, forced)
			m := 0.0
			for i := range exact {
				for j := range exact[i] {
					m = math.Max(m, math.Abs(float64(got[i][j]-exact[i][j])))
				}
				if bits == 8 && c.name == "fitted" && engine.Argmax(got[i]) != engine.Argmax(exact[i]) {
					t.Errorf("fitted: 8-bit cache changed the greedy token of logits row %d", i)
				}
			}
			return m
		}
		e8, e4 := maxDiff(8), maxDiff(4)
		t.Logf("%s: max |Δlogit| 8-bit %.2e (%.1e of the span %.2f), 4-bit %.2e", c.name, e8, e8/span, span, e4)
		if e8 == 0 {
			t.Fatalf("%s: 8-bit cache left the logits unchanged: the quantizer is not applied", c.name)
		}
		if e8 > relBound*span {
			t.Errorf("%s: 8-bit cache moved a logit by %.2e, more than %.0f %% of the span %.2f", c.name, e8, 100*relBound, span)
		}
		if e8 > e4/5 {
			t.Errorf("%s: 8-bit logit error %.2e is not below a fifth of 4-bit's %.2e", c.name, e8, e4)
		}
	}
}

// Approximate decoding of more rows than the prompt pass ran (beam
// search's beams, a prompt's samples): the step's measurements follow
// Reorder, and each row's stats count the steps after it. Reorder used
// to leave the per-step sums at the prompt count, and the first step of
// a wider batch indexed past them.
func TestApproxStatsFollowReorder(t *testing.T) {
	g := newTest(t, model.Config{Preset: "nano", Vocab: 80, Seed: 5})
	for _, a := range []Approx{{KVBits: 4}, {Attention: AttnSift, SiftQuantile: 0.5, SiftWarmup: 2}} {
		s, err := NewStepper(g, a)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Start([][]int32{{1, 2, 3}, {4, 5, 6, 7}}, 5); err != nil {
			t.Fatal(err)
		}
		if err := s.Reorder([]int{0, 0, 1, 1, 1}); err != nil {
			t.Fatal(err)
		}
		for step := 0; step < 4; step++ {
			if _, err := s.Next([]int32{8, 9, 10, 11, 12}); err != nil {
				t.Fatalf("%+v step %d: %v", a, step, err)
			}
		}
		st := s.Stats()
		if len(st) != 5 {
			t.Fatalf("%+v: stats of %d rows, want 5", a, len(st))
		}
		for r, x := range st {
			if x.Steps != 4 || !(x.KVBytes > 0) {
				t.Errorf("%+v row %d: %+v, want 4 steps and bytes read", a, r, x)
			}
		}
		s.Close()
	}
}

// A measured exact approximation (and a 16-bit cache) keeps the model's
// attention soft-cap: its logits are exact decoding's to the bit on a
// soft-capped model, padded rows included. The approximations' attention
// used to drop the cap.
func TestApproxKeepsSoftcap(t *testing.T) {
	defer torchx.SetKernels(torchx.SetKernels(false))
	g := newTest(t, model.Config{Preset: "nano", Vocab: 80, Seed: 5, AttnSoftcap: 0.5})
	prompts := approxPrompts()
	exact := decodeLogits(t, engine.NewStepper(g, true), prompts, 5)
	s, err := NewStepper(g, Approx{KVBits: 16})
	if err != nil {
		t.Fatal(err)
	}
	sameLogits(t, "kv16 measured", decodeLogits(t, s, prompts, 5), exact)
}

// sameLogits fails unless got equals exact to the bit.
func sameLogits(t *testing.T, name string, got, exact [][]float32) {
	t.Helper()
	for i := range exact {
		for j := range exact[i] {
			if got[i][j] != exact[i][j] {
				t.Fatalf("%s: logits row %d [%d] = %v, exact %v", name, i, j, got[i][j], exact[i][j])
			}
		}
	}
}
