package train

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

const pad = PadID

// ceBatch is a small batch with everything computed by hand in Go.
type ceBatch struct {
	b, t, v int
	logits  []float32 // [b][t][v]
	targets []int64   // [b][t]
	dropped []bool    // [b][t]
}

func newBatch(seed uint64, b, t, v int, targets []int64, dropped []bool) ceBatch {
	r := rand.New(rand.NewPCG(seed, 1))
	logits := make([]float32, b*t*v)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 2)
	}
	return ceBatch{b, t, v, logits, targets, dropped}
}

// ce is -log softmax(logits[i])[target], in float64.
func (c ceBatch) ce(i int) float64 {
	row := c.logits[i*c.v : (i+1)*c.v]
	m := math.Inf(-1)
	for _, x := range row {
		m = math.Max(m, float64(x))
	}
	var s float64
	for _, x := range row {
		s += math.Exp(float64(x) - m)
	}
	return m + math.Log(s) - float64(row[c.targets[i]])
}

// want returns the hand-computed kept mean, all mean, dropped mean, counts.
func (c ceBatch) want() (kept, all, dropped float64, nk, nd int64) {
	var sk, sd float64
	for i, tg := range c.targets {
		if tg == pad {
			continue
		}
		if c.dropped[i] {
			sd += c.ce(i)
			nd++
		} else {
			sk += c.ce(i)
			nk++
		}
	}
	all = math.NaN()
	if nk+nd > 0 {
		all = (sk + sd) / float64(nk+nd)
	}
	dropped = math.NaN()
	if nd > 0 {
		dropped = sd / float64(nd)
	}
	return sk / float64(max(nk, 1)), all, dropped, nk, nd
}

func (c ceBatch) tensors(t *testing.T) (logits, targets, dropped *ts.Tensor) {
	t.Helper()
	logits = ts.MustOfSlice(c.logits).MustReshape([]int64{int64(c.b), int64(c.t), int64(c.v)}, true).MustSetRequiresGrad(true, true)
	targets = ts.MustOfSlice(c.targets).MustReshape([]int64{int64(c.b), int64(c.t)}, true)
	dropped = ts.MustOfSlice(c.dropped).MustReshape([]int64{int64(c.b), int64(c.t)}, true)
	return logits, targets, dropped
}

func approxEqual(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-5*math.Max(1, math.Abs(b))
}

func TestMaskedCrossEntropy(t *testing.T) {
	tests := []struct {
		name    string
		targets []int64
		dropped []bool
	}{
		{"mixed with padding", []int64{1, 4, 0, pad, 2, 3, 3, 0}, []bool{false, true, false, true, false, false, true, false}},
		{"nothing dropped", []int64{1, 2, 3, 4, 0, 1, 2, 3}, make([]bool, 8)},
		{"all dropped", []int64{1, 2, 3, pad, 0, 1, pad, 3}, []bool{true, true, true, true, true, true, true, true}},
		{"all padding", []int64{pad, pad, pad, pad, pad, pad, pad, pad}, []bool{true, false, true, false, true, false, true, false}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newBatch(uint64(i), 2, 4, 5, tt.targets, tt.dropped)
			logits, targets, dropped := c.tensors(t)
			got, err := MaskedCrossEntropy(logits, targets, dropped, pad)
			if err != nil {
				t.Fatal(err)
			}
			kept, all, drop, nk, nd := c.want()
			gk := got.Kept.Float64Values()[0]
			if !approxEqual(gk, kept) || !approxEqual(got.All, all) || !approxEqual(got.Dropped, drop) || got.NKept != nk || got.NDropped != nd {
				t.Fatalf("got kept %.7g all %.7g dropped %.7g n %d/%d\nwant kept %.7g all %.7g dropped %.7g n %d/%d",
					gk, got.All, got.Dropped, got.NKept, got.NDropped, kept, all, drop, nk, nd)
			}
			// Gradient flows to kept targets' logits only.
			got.Kept.MustBackward()
			grad := logits.MustGrad(false).Float64Values()
			for p := range c.targets {
				var norm float64
				for _, g := range grad[p*c.v : (p+1)*c.v] {
					norm += math.Abs(g)
				}
				isKept := c.targets[p] != pad && !c.dropped[p]
				if isKept != (norm > 0) {
					t.Errorf("target %d (kept=%v): gradient norm %g", p, isKept, norm)
				}
			}
		})
	}
}

func TestMaskedCrossEntropyBadInput(t *testing.T) {
	c := newBatch(9, 2, 4, 5, []int64{1, 4, 0, pad, 2, 3, 3, 0}, make([]bool, 8))
	logits, targets, dropped := c.tensors(t)
	flatTargets := targets.MustReshape([]int64{-1}, false)
	if _, err := MaskedCrossEntropy(logits, flatTargets, dropped, pad); err == nil || !strings.Contains(err.Error(), "shapes") {
		t.Errorf("wrong target shape: err = %v", err)
	}
	if _, err := MaskedCrossEntropy(logits, targets, targets, pad); err == nil || !strings.Contains(err.Error(), "dropped dtype") {
		t.Errorf("int dropped: err = %v", err)
	}
	outOfRange := ts.MustOfSlice([]int64{1, 4, 0, 7, 2, 3, 3, 0}).MustReshape([]int64{2, 4}, true)
	if _, err := MaskedCrossEntropy(logits, outOfRange, dropped, pad); err == nil {
		t.Errorf("target 7 with 5 classes: no error")
	}
}

// Bfloat16 logits (a GPU's bf16 head leaves them so for the loss: see
// model.GPT.ForwardForLoss) give the loss of their float32 values: bit for
// bit through libtorch's loss, which casts them, and within float32
// rounding through memo's cross-entropy kernel (its host code here), the
// logits' gradient in bfloat16 within one rounding of the cast of
// float32's.
func TestMaskedCrossEntropyBF16Logits(t *testing.T) {
	c := newBatch(3, 2, 4, 300, []int64{1, 299, 0, pad, 2, 150, 3, 0}, []bool{false, true, false, true, false, false, true, false})
	f32, targets, dropped := c.tensors(t)
	bf := f32.MustDetach(false).MustTotype(gotch.BFloat16, true).MustSetRequiresGrad(true, true)
	rounded := bf.MustDetach(false).MustTotype(gotch.Float, true).MustSetRequiresGrad(true, true)
	loss := func(logits *ts.Tensor) (Losses, *ts.Tensor) {
		t.Helper()
		ls, err := MaskedCrossEntropy(logits, targets, dropped, pad)
		if err != nil {
			t.Fatal(err)
		}
		ls.Kept.MustBackward()
		g := logits.MustGrad(false)
		logits.ZeroGrad()
		return ls, g
	}
	want, wantGrad := loss(rounded)
	got, gotGrad := loss(bf)
	if got.Kept.Float64Values()[0] != want.Kept.Float64Values()[0] || got.All != want.All || got.Dropped != want.Dropped {
		t.Errorf("bfloat16 logits: kept %v all %v dropped %v; their float32 values: %v %v %v",
			got.Kept.Float64Values()[0], got.All, got.Dropped, want.Kept.Float64Values()[0], want.All, want.Dropped)
	}
	wantBF := wantGrad.MustTotype(gotch.BFloat16, false)
	if gotGrad.DType() != gotch.BFloat16 || !gotGrad.MustEqual(wantBF, false) {
		t.Errorf("the bfloat16 logits' gradient (%v) is not the float32 gradient's cast", gotGrad.DType())
	}

	defer torchx.ElementwiseOnHostForTest()()
	before := torchx.ElementwiseCallsOf("cross-entropy")
	k, kGrad := loss(bf)
	if n := torchx.ElementwiseCallsOf("cross-entropy") - before; n != 1 {
		t.Fatalf("%d cross-entropy kernel calls, want 1", n)
	}
	if !approxEqual(k.Kept.Float64Values()[0], want.Kept.Float64Values()[0]) || !approxEqual(k.All, want.All) || !approxEqual(k.Dropped, want.Dropped) {
		t.Errorf("through the kernel: kept %v all %v dropped %v; want %v %v %v",
			k.Kept.Float64Values()[0], k.All, k.Dropped, want.Kept.Float64Values()[0], want.All, want.Dropped)
	}
	a, b := kGrad.MustTotype(gotch.Float, false).Float64Values(), wantBF.MustTotype(gotch.Float, false).Float64Values()
	for i := range a {
		if math.Abs(a[i]-b[i]) > math.Abs(b[i])/64+1e-9 {
			t.Fatalf("through the kernel: the gradient's element %d is %g, want %g", i, a[i], b[i])
		}
	}
}
