package torchx_test

import (
	"fmt"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// The compositions RMSNorm and Rope replace, op for op as model ran them
// through gotch before they moved into one C++ call each: the reference
// the fused ops must match bit for bit.

func composedRMSNorm(x, w *ts.Tensor, eps float64, offset bool) *ts.Tensor {
	if offset {
		w = w.MustAddScalar(ts.FloatScalar(1), false)
		defer w.MustDrop()
	}
	ms := x.MustSquare(false).MustMeanDim([]int64{-1}, true, gotch.Float, true)
	inv := ms.MustAddScalar(ts.FloatScalar(eps), true).MustRsqrt(true)
	y := x.MustMul(inv, false)
	inv.MustDrop()
	return y.MustMul(w, true)
}

func composedRotateHalf(x, cos, sinSigned *ts.Tensor) *ts.Tensor {
	half := x.MustSize()[x.Dim()-1] / 2
	x1 := x.MustNarrow(-1, 0, half, false)
	x2 := x.MustNarrow(-1, half, half, false)
	swapped := ts.MustCat([]*ts.Tensor{x2, x1}, -1)
	x1.MustDrop()
	x2.MustDrop()
	a := x.MustMul(cos, false)
	bsin := swapped.MustMul(sinSigned, true)
	out := a.MustAdd(bsin, true)
	bsin.MustDrop()
	return out
}

func composedRope(x, cos, sinSigned *ts.Tensor, rot int64) *ts.Tensor {
	hd := x.MustSize()[x.Dim()-1]
	if rot == hd {
		return composedRotateHalf(x, cos, sinSigned)
	}
	head := x.MustNarrow(-1, 0, rot, false)
	pass := x.MustNarrow(-1, rot, hd-rot, false)
	rotated := composedRotateHalf(head, cos, sinSigned)
	out := ts.MustCat([]*ts.Tensor{rotated, pass}, -1)
	for _, t := range []*ts.Tensor{head, pass, rotated} {
		t.MustDrop()
	}
	return out
}

// leaf is a fresh autograd leaf holding t's values, so each path gets its
// own gradients.
func leaf(t *ts.Tensor) *ts.Tensor {
	return t.MustDetach(false).MustSetRequiresGrad(true, true)
}

// randnOf is a normal tensor of the given shape and dtype on dev.
func randnOf(dims []int64, dt gotch.DType, dev gotch.Device) *ts.Tensor {
	return ts.MustRandn(dims, gotch.Float, dev).MustTotype(dt, true)
}

// fusedDevices are the devices the fused ops are checked on: the CPU, and
// the first GPU in a CUDA build that sees one (its kernels differ from the
// CPU's, and the equality must hold there too).
func fusedDevices() []gotch.Device {
	if gotch.CUDA.IsAvailable() {
		return []gotch.Device{gotch.CPU, gotch.CudaBuilder(0)}
	}
	return []gotch.Device{gotch.CPU}
}

// run is one path's forward and backward: f's output, and the gradients of
// Σ out·up with respect to the inputs, up being a fixed random tensor.
func run(t *testing.T, f func(in []*ts.Tensor) *ts.Tensor, inputs []*ts.Tensor, seed uint64) (*ts.Tensor, []*ts.Tensor) {
	t.Helper()
	in := make([]*ts.Tensor, len(inputs))
	for i, x := range inputs {
		in[i] = leaf(x)
	}
	out := f(in)
	torchx.Seed(seed)
	up := randnOf(out.MustSize(), out.DType(), out.MustDevice())
	out.MustMul(up, false).MustSum(gotch.Float, true).MustBackward()
	grads := make([]*ts.Tensor, len(in))
	for i, x := range in {
		grads[i] = x.MustGrad(false)
	}
	return out.MustDetach(false), grads
}

// requireSame fails unless a and b have one dtype, one shape and equal
// values (exactly, libtorch's equal).
func requireSame(t *testing.T, what string, a, b *ts.Tensor) {
	t.Helper()
	if a.DType() != b.DType() {
		t.Fatalf("%s: dtype %v, composed %v", what, a.DType(), b.DType())
	}
	if fmt.Sprint(a.MustSize()) != fmt.Sprint(b.MustSize()) {
		t.Fatalf("%s: shape %v, composed %v", what, a.MustSize(), b.MustSize())
	}
	if !a.MustEqual(b, false) {
		d := a.MustTotype(gotch.Float, false).MustSub(b.MustTotype(gotch.Float, false), true).MustAbs(true).MustMax(true)
		t.Fatalf("%s differs from the composition: max |Δ| %g", what, d.Float64Values()[0])
	}
}

// compareFused runs the fused and composed paths on the same inputs and
// requires their outputs and every input's gradient to be identical.
func compareFused(t *testing.T, fused, composed func(in []*ts.Tensor) *ts.Tensor, inputs []*ts.Tensor, names []string) {
	t.Helper()
	gotOut, gotGrads := run(t, fused, inputs, 11)
	wantOut, wantGrads := run(t, composed, inputs, 11)
	requireSame(t, "output", gotOut, wantOut)
	for i := range gotGrads {
		requireSame(t, "gradient of "+names[i], gotGrads[i], wantGrads[i])
	}
}

// compareClose is compareFused within float32 rounding: each output and
// gradient within 1e-5 of the composition's largest magnitude.
func compareClose(t *testing.T, fused, composed func(in []*ts.Tensor) *ts.Tensor, inputs []*ts.Tensor, names []string) {
	t.Helper()
	gotOut, gotGrads := run(t, fused, inputs, 11)
	wantOut, wantGrads := run(t, composed, inputs, 11)
	near := func(what string, a, b *ts.Tensor) {
		t.Helper()
		scale := b.MustAbs(false).MustMax(true).Float64Values()[0]
		d := a.MustSub(b, false).MustAbs(true).MustMax(true).Float64Values()[0]
		if d > 1e-5*scale {
			t.Fatalf("%s differs from the composition by %g (largest %g)", what, d, scale)
		}
	}
	near("output", gotOut, wantOut)
	for i := range gotGrads {
		near("gradient of "+names[i], gotGrads[i], wantGrads[i])
	}
}

// RMSNorm must give the composition's output and gradients bit for bit, in
// the dtypes models run it with: float32 throughout; a bfloat16 x with
// float32 gains (bf16 inference and mixed training keep norms float32);
// bfloat16 throughout; and Gemma's offset gains. On a GPU with libtorch's
// fused kernel (2.9 and later) float32 runs through it, equal within
// float32 rounding.
func TestRMSNormMatchesComposition(t *testing.T) {
	torchx.Init(1, 7)
	for _, c := range []struct {
		dims     []int64
		xdt, wdt gotch.DType
		eps      float64
		offset   bool
	}{
		{[]int64{2, 5, 64}, gotch.Float, gotch.Float, 1e-5, false},
		{[]int64{3, 7, 48}, gotch.Float, gotch.Float, 1e-6, true},
		{[]int64{2, 4, 9, 16}, gotch.Float, gotch.Float, 1e-6, false}, // per-head q/k norm
		{[]int64{1, 1, 256}, gotch.Float, gotch.Float, 1e-5, false},   // a decode step
		{[]int64{2, 5, 64}, gotch.BFloat16, gotch.Float, 1e-5, false},
		{[]int64{2, 5, 64}, gotch.BFloat16, gotch.BFloat16, 1e-5, false},
		{[]int64{4, 3, 32}, gotch.BFloat16, gotch.BFloat16, 1e-6, true},
	} {
		for _, dev := range fusedDevices() {
			t.Run(fmt.Sprintf("%v-%v-%v-offset%v-%v", c.dims, c.xdt, c.wdt, c.offset, dev), func(t *testing.T) {
				torchx.Seed(3)
				x := randnOf(c.dims, c.xdt, dev)
				w := randnOf(c.dims[len(c.dims)-1:], c.wdt, dev)
				compare := compareFused
				if dev.IsCuda() && c.xdt == gotch.Float && c.wdt == gotch.Float && torchx.FusedRMSNormAvailable() {
					// libtorch's fused kernel: float32 rounding, not bits
					compare = compareClose
				}
				compare(t,
					func(in []*ts.Tensor) *ts.Tensor { return torchx.RMSNorm(in[0], in[1], c.eps, c.offset) },
					func(in []*ts.Tensor) *ts.Tensor { return composedRMSNorm(in[0], in[1], c.eps, c.offset) },
					[]*ts.Tensor{x, w}, []string{"x", "w"})
			})
		}
	}
}

// Rope must give the composition's output and gradients bit for bit, for
// whole-head and partial rotary dimensions (GPT-NeoX, Phi), with tables
// shared by every row ([T, rot]) or per row ([B, 1, T, rot], a padded
// decode batch), in float32 and with a bfloat16 x.
func TestRopeMatchesComposition(t *testing.T) {
	torchx.Init(1, 7)
	for _, c := range []struct {
		x, table []int64
		rot      int64
		xdt, tdt gotch.DType
	}{
		{[]int64{2, 4, 9, 16}, []int64{9, 16}, 16, gotch.Float, gotch.Float},
		{[]int64{2, 4, 9, 32}, []int64{9, 8}, 8, gotch.Float, gotch.Float},
		{[]int64{3, 2, 5, 24}, []int64{3, 1, 5, 6}, 6, gotch.Float, gotch.Float},
		{[]int64{3, 2, 1, 64}, []int64{3, 1, 1, 64}, 64, gotch.Float, gotch.Float},
		{[]int64{2, 4, 9, 16}, []int64{9, 16}, 16, gotch.BFloat16, gotch.Float},
		{[]int64{2, 4, 9, 32}, []int64{9, 16}, 16, gotch.BFloat16, gotch.BFloat16},
	} {
		for _, dev := range fusedDevices() {
			t.Run(fmt.Sprintf("%v-rot%d-%v-%v-%v", c.x, c.rot, c.xdt, c.tdt, dev), func(t *testing.T) {
				torchx.Seed(5)
				x := randnOf(c.x, c.xdt, dev)
				cos := randnOf(c.table, c.tdt, dev)
				sin := randnOf(c.table, c.tdt, dev)
				compareFused(t,
					func(in []*ts.Tensor) *ts.Tensor { return torchx.Rope(in[0], in[1], in[2], c.rot) },
					func(in []*ts.Tensor) *ts.Tensor { return composedRope(in[0], in[1], in[2], c.rot) },
					[]*ts.Tensor{x, cos, sin}, []string{"x", "cos", "sinSigned"})
			})
		}
	}
}

// BenchmarkFusedHost measures the host's time per call of each fused op
// beside its gotch composition on tensors small enough that the arithmetic
// is negligible: what a GPU's forward pass, whose kernels run
// asynchronously, spends on the host per norm and per rotary embedding.
// Gradients are on, as in training, so autograd's recording is included.
func BenchmarkFusedHost(b *testing.B) {
	torchx.Init(1, 7)
	x := randnOf([]int64{1, 1, 1, 8}, gotch.Float, gotch.CPU).MustSetRequiresGrad(true, true)
	w := randnOf([]int64{8}, gotch.Float, gotch.CPU).MustSetRequiresGrad(true, true)
	cos := randnOf([]int64{1, 8}, gotch.Float, gotch.CPU)
	sin := randnOf([]int64{1, 8}, gotch.Float, gotch.CPU)
	for _, c := range []struct {
		name string
		f    func() *ts.Tensor
	}{
		{"rmsnorm-composed", func() *ts.Tensor { return composedRMSNorm(x, w, 1e-5, false) }},
		{"rmsnorm-fused", func() *ts.Tensor { return torchx.RMSNorm(x, w, 1e-5, false) }},
		{"rope-composed", func() *ts.Tensor { return composedRope(x, cos, sin, 8) }},
		{"rope-fused", func() *ts.Tensor { return torchx.Rope(x, cos, sin, 8) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				c.f().MustDrop()
			}
		})
	}
}
