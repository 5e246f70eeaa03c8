package train

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"

	"github.com/memo-research/memo/model"
)

// dpFixture is a nano model and six rows of real text with goldfish-style
// masks: every 4th target dropped in some rows, one row half padding, one
// row with every target dropped (which must contribute nothing).
func dpFixture(t testing.TB) (*model.GPT, []DPRow, int) {
	t.Helper()
	const block = 24
	g, err := model.New(nn.NewVarStore(gotch.CPU).Root(), model.Config{Preset: "nano", Vocab: 256, Context: 32, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	text := opticks(t, 6*(block+1))
	rows := make([]DPRow, 6)
	for i := range rows {
		ids := slices.Clone(text[i*(block+1) : (i+1)*(block+1)])
		dropped := make([]bool, block)
		switch i {
		case 1, 3:
			for j := 3; j < block; j += 4 {
				dropped[j] = true
			}
		case 4:
			for j := block / 2; j <= block; j++ {
				ids[j] = PadID
			}
		case 5:
			for j := range dropped {
				dropped[j] = true
			}
		}
		rows[i] = DPRow{IDs: ids, Dropped: dropped}
	}
	return g, rows, block
}

// rowGrad is one row's gradient computed alone, the reference's way: a
// batch of one, the masked cross-entropy's mean, backward, copied out to
// float64. nil for a row that keeps no target.
func rowGrad(t *testing.T, g *model.GPT, row DPRow, block int) [][]float64 {
	t.Helper()
	params := g.Params()
	zeroGrads(params)
	if !backwardAlone(t, g, row, block) {
		return nil
	}
	out := make([][]float64, len(params))
	for i, p := range params {
		gr := p.Tensor.MustGrad(false)
		out[i] = gr.Float64Values()
		gr.MustDrop()
	}
	zeroGrads(params)
	return out
}

// backwardAlone is the reference's backward pass of one row: a batch of
// one, the masked cross-entropy's mean, accumulated into the gradients;
// false (and no backward) for a row that keeps no target.
func backwardAlone(t *testing.T, g RowModel, row DPRow, block int) bool {
	t.Helper()
	inp, tgt, _ := batchTensors([][]int32{row.IDs}, block, gotch.CPU)
	dt, err := boolTensor(row.Dropped, []int64{1, int64(block)}, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	logits := g.ForwardForLoss(inp)
	ls, err := MaskedCrossEntropy(logits, tgt, dt, PadID)
	if err != nil {
		t.Fatal(err)
	}
	defer drop([]*ts.Tensor{inp, tgt, dt, logits, ls.Kept})
	if ls.NKept == 0 {
		return false
	}
	if err := ls.Kept.Backward(); err != nil {
		t.Fatal(err)
	}
	return true
}

func flat(xs []*ts.Tensor) []float64 {
	var out []float64
	for _, x := range xs {
		out = append(out, x.Float64Values()...)
	}
	return out
}

// relDiff is ‖got − want‖₂ / ‖want‖₂.
func relDiff(got, want []float64) float64 {
	var diff, norm float64
	for j := range want {
		diff += (got[j] - want[j]) * (got[j] - want[j])
		norm += want[j] * want[j]
	}
	return math.Sqrt(diff / norm)
}

func drop(xs []*ts.Tensor) {
	for _, x := range xs {
		x.MustDrop()
	}
}

// TestClippedSumMatchesPerRowReference: the clipped sum before noise equals
// a loop that computes each row's gradient alone and clips and sums it in
// float64 (Opacus's factor min(1, C/(‖g‖+1e-6))), to 1e-6 relative, with C
// chosen so that some rows are clipped and some are not.
func TestClippedSumMatchesPerRowReference(t *testing.T) {
	g, rows, block := dpFixture(t)
	var ref [][]float64 // per row, flattened
	var norms []float64
	for _, r := range rows {
		gr := rowGrad(t, g, r, block)
		if gr == nil {
			continue
		}
		var f []float64
		for _, p := range gr {
			f = append(f, p...)
		}
		var sq float64
		for _, x := range f {
			sq += x * x
		}
		ref = append(ref, f)
		norms = append(norms, math.Sqrt(sq))
	}
	if len(ref) != 5 {
		t.Fatalf("%d rows keep targets, want 5", len(ref))
	}
	sorted := slices.Clone(norms)
	sort.Float64s(sorted)
	clip := (sorted[1] + sorted[2]) / 2 // clips three rows, leaves two
	want := make([]float64, len(ref[0]))
	for i, f := range ref {
		factor := math.Min(1, clip/(norms[i]+1e-6))
		for j, x := range f {
			want[j] += factor * x
		}
	}

	sum, st, err := ClippedNoisedSum(g, g.Params(), rows, block, clip, 0, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer drop(sum)
	if rel := relDiff(flat(sum), want); !(rel <= 1e-6) {
		t.Errorf("clipped sum differs from the per-row reference by %.3g relative, want <= 1e-6", rel)
	}
	if st.Rows != 5 || st.Clipped != 3 {
		t.Errorf("stats %+v: want 5 rows, 3 clipped", st)
	}
	for _, p := range g.Params() {
		gr := p.Tensor.MustGrad(false)
		if gr.MustDefined() && gr.MustAbs(false).MustMax(true).Float64Values()[0] != 0 {
			t.Errorf("%s: gradient left non-zero", p.Name)
		}
		gr.MustDrop()
	}
}

// TestUnclippedNoiselessIsAccumulatedGradient: with C = ∞ and σ = 0 the sum
// is the gradient backward accumulates over the same rows run one at a
// time, the plain gradient of Σ_i L_i: to 1e-6 relative, and almost always
// bit for bit. Not always: libtorch's CPU backward of the same row, run
// twice in one process, differed in the last bits in about one process of
// ten here (suspected: a buffer's alignment picking another kernel), so
// "bit for bit" holds only against a reference that shares those passes.
func TestUnclippedNoiselessIsAccumulatedGradient(t *testing.T) {
	g, rows, block := dpFixture(t)
	params := g.Params()
	zeroGrads(params)
	for _, r := range rows {
		backwardAlone(t, g, r, block)
	}
	gs, err := grads(params)
	if err != nil {
		t.Fatal(err)
	}
	want := flat(gs)
	drop(gs)
	zeroGrads(params)

	sum, _, err := ClippedNoisedSum(g, params, rows, block, math.Inf(1), 0, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer drop(sum)
	if rel := relDiff(flat(sum), want); !(rel <= 1e-6) {
		t.Errorf("unclipped, noiseless sum differs from the accumulated gradient by %.3g relative, want <= 1e-6", rel)
	}
}

// TestNoiseScaleAndDeterminism: the noise is N(0, σ²C²) per element (its
// sample mean and standard deviation over the nano model's ~10⁵ elements
// within a few standard errors), the same for the same (seed, step) and
// different for another step.
func TestNoiseScaleAndDeterminism(t *testing.T) {
	g, rows, block := dpFixture(t)
	const clip, sigma = 0.5, 1.3
	clean, _, err := ClippedNoisedSum(g, g.Params(), rows, block, clip, 0, 9, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer drop(clean)
	noised := func(step int64) []float64 {
		s, _, err := ClippedNoisedSum(g, g.Params(), rows, block, clip, sigma, 9, step)
		if err != nil {
			t.Fatal(err)
		}
		defer drop(s)
		return flat(s)
	}
	a := noised(4)
	base := flat(clean)
	// The draws themselves, apart from the gradients (whose last bits
	// libtorch's backward may vary): a function of (seed, step).
	draw := func(step int64) []float64 {
		z := []*ts.Tensor{ts.MustZeros([]int64{1000}, gotch.Float, gotch.CPU)}
		defer drop(z)
		if err := addNoise(z, sigma*clip, stepRNG(9, step, dpStreamNoise), gotch.CPU); err != nil {
			t.Fatal(err)
		}
		return flat(z)
	}
	if !slices.Equal(draw(4), draw(4)) {
		t.Error("the same seed and step drew different noise")
	}
	if slices.Equal(draw(4), draw(5)) {
		t.Error("steps 4 and 5 drew the same noise")
	}
	var mean, sq float64
	for j := range a {
		d := a[j] - base[j]
		mean += d
		sq += d * d
	}
	n := float64(len(a))
	mean /= n
	std := math.Sqrt(sq/n - mean*mean)
	want := sigma * clip
	if se := want / math.Sqrt(n); math.Abs(mean) > 5*se || math.Abs(std-want) > 5*want/math.Sqrt(2*n) {
		t.Errorf("noise mean %.4g std %.4g over %d elements, want 0 and %.4g", mean, std, len(a), want)
	}
}

func TestClippedNoisedSumBadInput(t *testing.T) {
	g, rows, block := dpFixture(t)
	for _, c := range []struct{ clip, sigma float64 }{{0, 1}, {-1, 1}, {1, -1}, {1, math.Inf(1)}, {math.NaN(), 1}} {
		if s, _, err := ClippedNoisedSum(g, g.Params(), rows, block, c.clip, c.sigma, 1, 1); err == nil {
			drop(s)
			t.Errorf("C = %v, σ = %v: no error", c.clip, c.sigma)
		}
	}
	bad := []DPRow{{IDs: rows[0].IDs[:block], Dropped: rows[0].Dropped}}
	if s, _, err := ClippedNoisedSum(g, g.Params(), bad, block, 1, 1, 1, 1); err == nil {
		drop(s)
		t.Error("a short row: no error")
	}
}

func TestPoissonSample(t *testing.T) {
	const n, q = 10000, 0.01
	a, err := PoissonSample(n, q, 3, 17)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := PoissonSample(n, q, 3, 17)
	c, _ := PoissonSample(n, q, 3, 18)
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Fatal("not a function of (seed, step)")
	}
	for i, x := range a {
		if x < 0 || x >= n || (i > 0 && x <= a[i-1]) {
			t.Fatalf("draw %d = %d: want increasing rows in [0, %d)", i, x, n)
		}
	}
	// Each row is drawn with probability q at every step: over 400 steps
	// the draws per step average q·n and each row's frequency averages q.
	const steps = 400
	hits := make([]int, n)
	total := 0
	for s := int64(0); s < steps; s++ {
		d, _ := PoissonSample(n, q, 3, s)
		total += len(d)
		for _, x := range d {
			hits[x]++
		}
	}
	mean := float64(total) / steps
	if se := math.Sqrt(n * q * (1 - q) / steps); math.Abs(mean-n*q) > 5*se {
		t.Errorf("mean batch %.2f, want %v ± %.2f", mean, n*q, 5*se)
	}
	// The first and last tenth of the rows are drawn as often (no bias by
	// position from the geometric skips).
	var lo, hi int
	for i := 0; i < n/10; i++ {
		lo += hits[i]
		hi += hits[n-1-i]
	}
	exp := float64(steps) * q * n / 10
	if se := math.Sqrt(exp); math.Abs(float64(lo)-exp) > 5*se || math.Abs(float64(hi)-exp) > 5*se {
		t.Errorf("draws of the first and last tenth %d and %d, want %.0f ± %.0f", lo, hi, exp, 5*se)
	}
	all, _ := PoissonSample(5, 1, 3, 1)
	if !slices.Equal(all, []int64{0, 1, 2, 3, 4}) {
		t.Errorf("q = 1 drew %v, want every row", all)
	}
	for _, bad := range []float64{0, -0.1, 1.1, math.NaN()} {
		if _, err := PoissonSample(n, bad, 1, 1); err == nil {
			t.Errorf("q = %v: no error", bad)
		}
	}
}

// BenchmarkDPSGDRows and BenchmarkPlainRows compare the cost of a DP-SGD
// gradient (six rows one at a time, clipped, noised) with the plain one
// (the same six rows in one forward and backward) on nano: the ratio is
// DP-SGD's cost per step beside plain training at this size.
// Its sub-benchmark sigma=0 leaves out the Go-drawn noise.
func BenchmarkDPSGDRows(b *testing.B) {
	g, rows, block := dpFixture(b)
	for _, sigma := range []float64{1, 0} {
		b.Run(fmt.Sprintf("sigma=%g", sigma), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				s, _, err := ClippedNoisedSum(g, g.Params(), rows, block, 1, sigma, 1, int64(i))
				if err != nil {
					b.Fatal(err)
				}
				drop(s)
			}
		})
	}
}

func BenchmarkPlainRows(b *testing.B) {
	g, rows, block := dpFixture(b)
	ids := make([][]int32, len(rows))
	var dropped []bool
	for i, r := range rows {
		ids[i] = r.IDs
		dropped = append(dropped, r.Dropped...)
	}
	params := g.Params()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		zeroGrads(params)
		inp, tgt, _ := batchTensors(ids, block, gotch.CPU)
		dt, err := boolTensor(dropped, []int64{int64(len(rows)), int64(block)}, gotch.CPU)
		if err != nil {
			b.Fatal(err)
		}
		logits := g.Forward(inp)
		ls, err := MaskedCrossEntropy(logits, tgt, dt, PadID)
		if err != nil {
			b.Fatal(err)
		}
		if err := ls.Kept.Backward(); err != nil {
			b.Fatal(err)
		}
		for _, x := range []*ts.Tensor{inp, tgt, dt, logits, ls.Kept} {
			x.MustDrop()
		}
	}
}
