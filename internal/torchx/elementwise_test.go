package torchx_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// kernelDevices are the devices memo's elementwise kernels are checked on:
// the CPU running their per-element code on the host, and the first GPU in
// a CUDA build that sees one, which must have compiled and checked them.
// Each test gets the kernels' code on the host and turns it off after.
func kernelDevices(t *testing.T) []gotch.Device {
	t.Helper()
	torchx.SetElementwiseOnHost(true)
	t.Cleanup(func() { torchx.SetElementwiseOnHost(false) })
	devs := fusedDevices()
	if len(devs) > 1 {
		if on := torchx.ElementwiseKernels(0); on != "on" {
			t.Fatalf("cuda:0's elementwise kernels: %s", on)
		}
	}
	return devs
}

// countsCalls runs f and reports how many kernel calls it made.
func countsCalls(f func()) int64 {
	before := torchx.ElementwiseCalls()
	f()
	return torchx.ElementwiseCalls() - before
}

// The start-up check a GPU runs before its first kernel call must pass
// with the kernels' code on the host.
func TestElementwiseCheckOnHost(t *testing.T) {
	torchx.Init(1, 7)
	if why := torchx.ElementwiseCheckOnHost(); why != "" {
		t.Fatal(why)
	}
}

// The rotary kernel must give the composition's output, cast to the
// requested dtype, and x's gradient bit for bit: every pairing of float32
// and bfloat16 in and out, for x contiguous and for x as attention holds q
// (a transposed view of [B,T,H,D]), with tables that take no gradient.
func TestRopeKernelMatchesComposition(t *testing.T) {
	torchx.Init(1, 7)
	for _, dev := range kernelDevices(t) {
		for _, xdt := range []gotch.DType{gotch.Float, gotch.BFloat16} {
			for _, out := range []gotch.DType{gotch.Float, gotch.BFloat16} {
				for _, transposed := range []bool{false, true} {
					name := fmt.Sprintf("%v-%v-to-%v-transposed=%v", dev, xdt, out, transposed)
					t.Run(name, func(t *testing.T) {
						torchx.Seed(5)
						x := randnOf([]int64{2, 3, 5, 8}, xdt, dev)
						if transposed {
							x = randnOf([]int64{2, 5, 3, 8}, xdt, dev).MustTranspose(1, 2, true)
						}
						cos := randnOf([]int64{5, 8}, gotch.Float, dev)
						sin := randnOf([]int64{5, 8}, gotch.Float, dev)
						calls := countsCalls(func() {
							compareFused(t,
								func(in []*ts.Tensor) *ts.Tensor { return torchx.RopeTo(in[0], cos, sin, 8, out) },
								func(in []*ts.Tensor) *ts.Tensor {
									return composedRope(in[0], cos, sin, 8).MustTotype(out, true)
								},
								[]*ts.Tensor{x}, []string{"x"})
						})
						if calls != 1 {
							t.Fatalf("%d kernel calls, want 1", calls)
						}
					})
				}
			}
		}
	}
}

// Per-row tables ([B,1,T,D], a padded batch's own positions, as a cached
// decode step has them) go through the kernel too, bit for bit.
func TestRopeKernelPerRowTables(t *testing.T) {
	torchx.Init(1, 7)
	for _, dev := range kernelDevices(t) {
		t.Run(fmt.Sprint(dev), func(t *testing.T) {
			torchx.Seed(5)
			x := randnOf([]int64{3, 2, 5, 8}, gotch.BFloat16, dev)
			cos := randnOf([]int64{3, 1, 5, 8}, gotch.Float, dev)
			sin := randnOf([]int64{3, 1, 5, 8}, gotch.Float, dev)
			calls := countsCalls(func() {
				compareFused(t,
					func(in []*ts.Tensor) *ts.Tensor { return torchx.Rope(in[0], cos, sin, 8) },
					func(in []*ts.Tensor) *ts.Tensor { return composedRope(in[0], cos, sin, 8) },
					[]*ts.Tensor{x}, []string{"x"})
			})
			if calls != 1 {
				t.Fatalf("%d kernel calls, want 1", calls)
			}
		})
	}
}

// Where the kernel does not apply, RopeTo is the composition: a partial
// rotary dimension, tables broadcast over the batch's rows ([1,1,T,D]),
// tables that take a gradient, a 3-D x.
func TestRopeKernelLeavesTheRest(t *testing.T) {
	torchx.Init(1, 7)
	for _, dev := range kernelDevices(t) {
		for _, c := range []struct {
			name      string
			x, table  []int64
			rot       int64
			tableGrad bool
		}{
			{"partial", []int64{2, 3, 5, 16}, []int64{5, 8}, 8, false},
			{"broadcast-rows", []int64{2, 3, 5, 8}, []int64{1, 1, 5, 8}, 8, false},
			{"table-grad", []int64{2, 3, 5, 8}, []int64{5, 8}, 8, true},
			{"3-D", []int64{3, 5, 8}, []int64{5, 8}, 8, false},
		} {
			t.Run(fmt.Sprintf("%v-%s", dev, c.name), func(t *testing.T) {
				torchx.Seed(5)
				x := randnOf(c.x, gotch.Float, dev)
				cos := randnOf(c.table, gotch.Float, dev)
				sin := randnOf(c.table, gotch.Float, dev)
				inputs, names := []*ts.Tensor{x}, []string{"x"}
				if c.tableGrad {
					inputs, names = []*ts.Tensor{x, cos, sin}, []string{"x", "cos", "sinSigned"}
				}
				pick := func(in []*ts.Tensor) (*ts.Tensor, *ts.Tensor, *ts.Tensor) {
					if c.tableGrad {
						return in[0], in[1], in[2]
					}
					return in[0], cos, sin
				}
				calls := countsCalls(func() {
					compareFused(t,
						func(in []*ts.Tensor) *ts.Tensor {
							x, cos, sin := pick(in)
							return torchx.RopeTo(x, cos, sin, c.rot, gotch.Float)
						},
						func(in []*ts.Tensor) *ts.Tensor {
							x, cos, sin := pick(in)
							return composedRope(x, cos, sin, c.rot)
						},
						inputs, names)
				})
				if calls != 0 {
					t.Fatalf("%d kernel calls, want none", calls)
				}
			})
		}
	}
}

func composedSwiGLU(gate, up *ts.Tensor) *ts.Tensor {
	return gate.MustSilu(false).MustMul(up, true)
}

// composedSwiGLUFloat32 is composedSwiGLU as a GPU computes a bfloat16
// one: each op in float32, its result rounded to the dtype. The CPU's
// bfloat16 ops round after every step inside SiLU as well (libtorch's
// vectorized bfloat16 arithmetic), which the kernel, made for the GPU,
// does not reproduce; casts around float32 ops give the GPU's roundings
// on the CPU, and the same gradients through autograd.
func composedSwiGLUFloat32(gate, up *ts.Tensor) *ts.Tensor {
	dt := gate.DType()
	g32 := gate.MustTotype(gotch.Float, false)
	u32 := up.MustTotype(gotch.Float, false)
	act := g32.MustSilu(true).MustTotype(dt, true).MustTotype(gotch.Float, true)
	return act.MustMul(u32, true).MustTotype(dt, true)
}

// requireWithinRounding fails unless a and b have one dtype and shape and
// each element of a is within a few roundings of b's: float32 4 ulps (the
// CPU's libm exp and libtorch's vectorized one differ by an ulp, which
// SiLU's sum and quotient grow), bfloat16 two ulps (SiLU's result rounds
// the other way, and so then may the product), each
// relative to the larger of the element and a sixteenth of b's largest
// (SiLU's slope 1 + g·(1 − σ) cancels near g = −1.28).
func requireWithinRounding(t *testing.T, what string, a, b *ts.Tensor) {
	t.Helper()
	if a.DType() != b.DType() || fmt.Sprint(a.MustSize()) != fmt.Sprint(b.MustSize()) {
		t.Fatalf("%s: %v %v, composed %v %v", what, a.DType(), a.MustSize(), b.DType(), b.MustSize())
	}
	rel := 1.0 / (1 << 21)
	if b.DType() == gotch.BFloat16 {
		rel = 1.0 / (1 << 6)
	}
	af, bf := a.MustTotype(gotch.Float, false).Float64Values(), b.MustTotype(gotch.Float, false).Float64Values()
	largest := 0.0
	for _, v := range bf {
		largest = max(largest, abs(v))
	}
	differ := 0
	for i := range af {
		d := abs(af[i] - bf[i])
		if d > 0 {
			differ++
		}
		if d > rel*max(abs(bf[i]), largest/16) {
			t.Fatalf("%s: element %d is %g, the composition's %g", what, i, af[i], bf[i])
		}
	}
	t.Logf("%s: %d of %d elements differ from the composition's", what, differ, len(af))
}

// requireNear fails unless a and b have one dtype and shape and every
// element of a is within rel of b's largest magnitude of b's.
func requireNear(t *testing.T, what string, a, b *ts.Tensor, rel float64) {
	t.Helper()
	if a.DType() != b.DType() || fmt.Sprint(a.MustSize()) != fmt.Sprint(b.MustSize()) {
		t.Fatalf("%s: %v %v, composed %v %v", what, a.DType(), a.MustSize(), b.DType(), b.MustSize())
	}
	af, bf := a.MustTotype(gotch.Float, false).Float64Values(), b.MustTotype(gotch.Float, false).Float64Values()
	largest, worst := 0.0, 0.0
	for i := range bf {
		largest = max(largest, abs(bf[i]))
		worst = max(worst, abs(af[i]-bf[i]))
	}
	if worst > rel*largest {
		t.Fatalf("%s differs from the composition's by %g, of values up to %g", what, worst, largest)
	}
	t.Logf("%s: within %.2g of the composition's largest value", what, worst/largest)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// The SwiGLU kernel must give the composition's output and both gradients
// within requireWithinRounding's bounds (the CPU's libm and libtorch's
// vectorized exp differ in last bits; on a GPU both use CUDA's expf, but
// libtorch's compiled SiLU backward may contract its products), in
// float32 and bfloat16; on the CPU, bfloat16 against the GPU's roundings
// (composedSwiGLUFloat32).
func TestSwiGLUKernelMatchesComposition(t *testing.T) {
	torchx.Init(1, 7)
	for _, dev := range kernelDevices(t) {
		for _, dt := range []gotch.DType{gotch.Float, gotch.BFloat16} {
			t.Run(fmt.Sprintf("%v-%v", dev, dt), func(t *testing.T) {
				torchx.Seed(5)
				gate := randnOf([]int64{3, 7, 40}, dt, dev).MustMulScalar(ts.FloatScalar(3), true)
				up := randnOf([]int64{3, 7, 40}, dt, dev)
				var gotOut, wantOut *ts.Tensor
				var gotGrads, wantGrads []*ts.Tensor
				calls := countsCalls(func() {
					gotOut, gotGrads = run(t, func(in []*ts.Tensor) *ts.Tensor { return torchx.SwiGLU(in[0], in[1]) },
						[]*ts.Tensor{gate, up}, 11)
				})
				if calls != 1 {
					t.Fatalf("%d kernel calls, want 1", calls)
				}
				composed := composedSwiGLU
				if dev == gotch.CPU && dt == gotch.BFloat16 {
					composed = composedSwiGLUFloat32
				}
				wantOut, wantGrads = run(t, func(in []*ts.Tensor) *ts.Tensor { return composed(in[0], in[1]) },
					[]*ts.Tensor{gate, up}, 11)
				requireWithinRounding(t, "output", gotOut, wantOut)
				requireWithinRounding(t, "gradient of gate", gotGrads[0], wantGrads[0])
				requireWithinRounding(t, "gradient of up", gotGrads[1], wantGrads[1])
			})
		}
	}
}

// SwiGLUJoined, the halves of one gate|up product's rows, goes through the
// kernel with one gradient for the product, within the same bounds as
// SwiGLU's; a gate|up product that is not contiguous takes the
// composition, bit for bit.
func TestSwiGLUJoinedKernel(t *testing.T) {
	torchx.Init(1, 7)
	half := func(in *ts.Tensor, i int64) *ts.Tensor { return in.MustNarrow(2, 40*i, 40, false) }
	for _, dev := range kernelDevices(t) {
		for _, dt := range []gotch.DType{gotch.Float, gotch.BFloat16} {
			t.Run(fmt.Sprintf("%v-%v", dev, dt), func(t *testing.T) {
				torchx.Seed(5)
				both := randnOf([]int64{3, 7, 80}, dt, dev).MustMulScalar(ts.FloatScalar(3), true)
				composed := composedSwiGLU
				if dev == gotch.CPU && dt == gotch.BFloat16 {
					composed = composedSwiGLUFloat32
				}
				var gotOut *ts.Tensor
				var gotGrads []*ts.Tensor
				calls := countsCalls(func() {
					gotOut, gotGrads = run(t, func(in []*ts.Tensor) *ts.Tensor { return torchx.SwiGLUJoined(in[0]) },
						[]*ts.Tensor{both}, 11)
				})
				if calls != 1 {
					t.Fatalf("%d kernel calls, want 1", calls)
				}
				wantOut, wantGrads := run(t, func(in []*ts.Tensor) *ts.Tensor { return composed(half(in[0], 0), half(in[0], 1)) },
					[]*ts.Tensor{both}, 11)
				requireWithinRounding(t, "output", gotOut, wantOut)
				requireWithinRounding(t, "gradient of gate|up", gotGrads[0], wantGrads[0])
			})
		}
		t.Run(fmt.Sprintf("%v-not-contiguous", dev), func(t *testing.T) {
			torchx.Seed(5)
			rows := randnOf([]int64{80, 7, 3}, gotch.Float, dev)
			joined := func(in []*ts.Tensor) *ts.Tensor { return in[0].MustPermute([]int64{2, 1, 0}, false) }
			calls := countsCalls(func() {
				compareFused(t,
					func(in []*ts.Tensor) *ts.Tensor { return torchx.SwiGLUJoined(joined(in)) },
					func(in []*ts.Tensor) *ts.Tensor { return composedSwiGLU(half(joined(in), 0), half(joined(in), 1)) },
					[]*ts.Tensor{rows}, []string{"gate|up"})
			})
			if calls != 0 {
				t.Fatalf("%d kernel calls, want none", calls)
			}
		})
	}
}

// Gate and up that are views of one gate|up product (not contiguous) take
// the composition, bit for bit.
func TestSwiGLUKernelLeavesViews(t *testing.T) {
	torchx.Init(1, 7)
	for _, dev := range kernelDevices(t) {
		t.Run(fmt.Sprint(dev), func(t *testing.T) {
			torchx.Seed(5)
			both := randnOf([]int64{3, 7, 80}, gotch.Float, dev)
			half := func(in *ts.Tensor, i int64) *ts.Tensor { return in.MustNarrow(2, 40*i, 40, false) }
			calls := countsCalls(func() {
				compareFused(t,
					func(in []*ts.Tensor) *ts.Tensor { return torchx.SwiGLU(half(in[0], 0), half(in[0], 1)) },
					func(in []*ts.Tensor) *ts.Tensor { return composedSwiGLU(half(in[0], 0), half(in[0], 1)) },
					[]*ts.Tensor{both}, []string{"gate|up"})
			})
			if calls != 0 {
				t.Fatalf("%d kernel calls, want none", calls)
			}
		})
	}
}

// castCopiesPass is copies(x)'s copies, and x's gradient of Σⱼ copyⱼ·wⱼ
// (w in bfloat16, one per copy): what n products reading x hand back.
func castCopiesPass(t *testing.T, x *ts.Tensor, w []*ts.Tensor, copies func(x *ts.Tensor) []*ts.Tensor) ([]*ts.Tensor, *ts.Tensor) {
	t.Helper()
	in := leaf(x)
	ys := copies(in)
	copiesLoss(ys, w).MustBackward()
	return ys, in.MustGrad(false)
}

// copiesLoss is Σⱼ Σ copyⱼ·wⱼ, one w per copy.
func copiesLoss(ys, w []*ts.Tensor) *ts.Tensor {
	loss := ys[0].MustMul(w[0], false).MustSum(gotch.Float, true)
	for j, y := range ys[1:] {
		loss = loss.MustAdd(y.MustMul(w[j+1], false).MustSum(gotch.Float, true), true)
	}
	return loss
}

// requireOneBuffer fails unless the kernel's copies lie in one buffer:
// they hold the same values, and each product that reads one keeps it for
// its backward pass, so k buffers would hold k − 1 needless copies.
func requireOneBuffer(t *testing.T, ys []*ts.Tensor) {
	t.Helper()
	for j, y := range ys[1:] {
		if y.MustDataPtr() != ys[0].MustDataPtr() {
			t.Fatalf("copy %d has a buffer of its own", j+1)
		}
	}
}

// The copies are the casts' bit for bit, and x's gradient is the copies'
// gradients widened to float32 and summed in copy order, bit for bit, in
// one kernel call; the composition's autograd sum agrees to float32's
// rounding.
func TestCastCopiesKernel(t *testing.T) {
	torchx.Init(1, 7)
	for _, dev := range kernelDevices(t) {
		for n := 1; n <= 3; n++ {
			t.Run(fmt.Sprintf("%v-%d", dev, n), func(t *testing.T) {
				torchx.Seed(5)
				x := randnOf([]int64{3, 7, 40}, gotch.Float, dev).MustMulScalar(ts.FloatScalar(3), true)
				w := make([]*ts.Tensor, n)
				for j := range w {
					w[j] = randnOf([]int64{3, 7, 40}, gotch.BFloat16, dev)
				}
				var ys []*ts.Tensor
				var dx *ts.Tensor
				calls := countsCalls(func() {
					ys, dx = castCopiesPass(t, x, w, func(x *ts.Tensor) []*ts.Tensor { return torchx.CastCopies(x, gotch.BFloat16, n) })
				})
				if calls != 1 {
					t.Fatalf("%d kernel calls, want 1", calls)
				}
				if len(ys) != n {
					t.Fatalf("%d copies, want %d", len(ys), n)
				}
				requireOneBuffer(t, ys)
				cast := x.MustTotype(gotch.BFloat16, false)
				for j, y := range ys {
					requireSame(t, fmt.Sprintf("copy %d", j), y, cast)
				}
				want := w[0].MustTotype(gotch.Float, false)
				for _, wj := range w[1:] {
					want = want.MustAdd(wj.MustTotype(gotch.Float, false), true)
				}
				requireSame(t, "x's gradient", dx, want)

				composed := func(x *ts.Tensor) []*ts.Tensor {
					out := make([]*ts.Tensor, n)
					for j := range out {
						out[j] = x.MustTotype(gotch.BFloat16, false)
					}
					return out
				}
				_, dxComposed := castCopiesPass(t, x, w, composed)
				requireWithinRounding(t, "x's gradient against autograd's sum", dx, dxComposed)
			})
		}
		// What the kernel does not take is n casts: another dtype pair, a
		// view that is not contiguous.
		for _, tc := range []struct {
			name string
			x    func() *ts.Tensor
			dt   gotch.DType
		}{
			{"to float32", func() *ts.Tensor { return randnOf([]int64{4, 6}, gotch.Float, dev) }, gotch.Float},
			{"from bfloat16", func() *ts.Tensor { return randnOf([]int64{4, 6}, gotch.BFloat16, dev) }, gotch.BFloat16},
			{"a transposed view", func() *ts.Tensor { return randnOf([]int64{4, 6}, gotch.Float, dev).MustT(true) }, gotch.BFloat16},
		} {
			t.Run(fmt.Sprintf("%v-%s", dev, tc.name), func(t *testing.T) {
				x := tc.x()
				var ys []*ts.Tensor
				calls := countsCalls(func() { ys = torchx.CastCopies(x, tc.dt, 2) })
				if calls != 0 {
					t.Fatalf("%d kernel calls, want none", calls)
				}
				for j, y := range ys {
					requireSame(t, fmt.Sprintf("copy %d", j), y, x.MustTotype(tc.dt, false))
				}
			})
		}
	}
	for _, n := range []int{0, 4} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "want 1 to 3") {
					t.Errorf("CastCopies(x, bf16, %d): %v, want a panic naming the range", n, r)
				}
			}()
			torchx.CastCopies(ts.MustOnes([]int64{2}, gotch.Float, gotch.CPU), gotch.BFloat16, n)
		}()
	}
}

// The RMSNorm-copies kernel gives RMSNorm's copies (RMSNorm, then
// CastCopies) within bfloat16's rounding, and x's and w's gradients within
// float32's, in one kernel call: one to three copies, Gemma's offset gain,
// rows shorter and longer than a block's lanes, more rows than the
// backward pass has blocks (so blocks sum several rows' gain gradients).
// With a residual sum (AddRMSNormCopies) it gives libtorch's x + delta bit
// for bit and the copies of the sum, and x's gradient adds the one from
// the sum's other readers; delta's is within a bfloat16 rounding.
func TestRMSNormCopiesKernel(t *testing.T) {
	torchx.Init(1, 7)
	for _, dev := range kernelDevices(t) {
		for _, tc := range []struct {
			name   string
			dims   []int64
			n      int
			offset bool
			sum    bool // AddRMSNormCopies of x + delta
		}{
			{"one copy", []int64{3, 7, 40}, 1, false, false},
			{"two copies", []int64{3, 7, 40}, 2, false, false},
			{"three copies", []int64{3, 7, 40}, 3, false, false},
			{"offset gain", []int64{2, 5, 40}, 3, true, false},
			{"rows longer than a block", []int64{2, 3, 600}, 2, false, false},
			{"more rows than blocks", []int64{1030, 16}, 3, false, false},
			{"sum one copy", []int64{3, 7, 40}, 1, false, true},
			{"sum three copies", []int64{3, 7, 40}, 3, false, true},
			{"sum offset gain", []int64{2, 5, 40}, 2, true, true},
			{"sum rows longer than a block", []int64{2, 3, 600}, 2, false, true},
			{"sum more rows than blocks", []int64{1030, 16}, 3, false, true},
		} {
			t.Run(fmt.Sprintf("%v-%s", dev, tc.name), func(t *testing.T) {
				torchx.Seed(5)
				d := tc.dims[len(tc.dims)-1]
				x := randnOf(tc.dims, gotch.Float, dev).MustMulScalar(ts.FloatScalar(3), true)
				w := randnOf([]int64{d}, gotch.Float, dev).MustMulScalar(ts.FloatScalar(0.5), true).MustAddScalar(ts.FloatScalar(1), true)
				// The products reading the copies and, with a sum, its other
				// reader (the next residual) weigh the loss.
				up := make([]*ts.Tensor, tc.n)
				for j := range up {
					up[j] = randnOf(tc.dims, gotch.BFloat16, dev)
				}
				var delta, onH *ts.Tensor
				if tc.sum {
					delta = randnOf(tc.dims, gotch.BFloat16, dev)
					onH = randnOf(tc.dims, gotch.Float, dev)
				}
				// pass is norm's outputs and x's, delta's and w's gradients.
				pass := func(norm func(x, delta, w *ts.Tensor) (*ts.Tensor, []*ts.Tensor)) (h *ts.Tensor, ys []*ts.Tensor, grads [3]*ts.Tensor) {
					xl, wl := leaf(x), leaf(w)
					var dl *ts.Tensor
					if tc.sum {
						dl = leaf(delta)
					}
					h, ys = norm(xl, dl, wl)
					loss := copiesLoss(ys, up)
					if tc.sum {
						loss = loss.MustAdd(h.MustMul(onH, false).MustSum(gotch.Float, true), true)
					}
					loss.MustBackward()
					grads = [3]*ts.Tensor{xl.MustGrad(false), nil, wl.MustGrad(false)}
					if tc.sum {
						grads[1] = dl.MustGrad(false)
					}
					return h, ys, grads
				}
				var h *ts.Tensor
				var ys []*ts.Tensor
				var got [3]*ts.Tensor
				calls := countsCalls(func() {
					h, ys, got = pass(func(x, delta, w *ts.Tensor) (*ts.Tensor, []*ts.Tensor) {
						if !tc.sum {
							ys, ok := torchx.RMSNormCopies(x, w, 1e-5, tc.offset, gotch.BFloat16, tc.n)
							if !ok {
								t.Fatal("the kernel did not take a contiguous float32 x")
							}
							return nil, ys
						}
						h, ys, ok := torchx.AddRMSNormCopies(x, delta, w, 1e-5, tc.offset, gotch.BFloat16, tc.n)
						if !ok {
							t.Fatal("the kernel did not take a contiguous float32 x and bfloat16 delta")
						}
						return h, ys
					})
				})
				kind := map[bool]string{false: "rms-copies", true: "add-rms-copies"}[tc.sum]
				if calls != 1 || torchx.ElementwiseCallsOf(kind) == 0 {
					t.Fatalf("%d kernel calls, want 1 of %s", calls, kind)
				}
				requireOneBuffer(t, ys)
				was := torchx.SetKernels(false)
				wantH, wantYs, want := pass(func(x, delta, w *ts.Tensor) (*ts.Tensor, []*ts.Tensor) {
					h := x
					if tc.sum {
						h = x.MustAdd(delta, false)
					}
					return h, torchx.CastCopies(torchx.RMSNorm(h, w, 1e-5, tc.offset), gotch.BFloat16, tc.n)
				})
				torchx.SetKernels(was)
				if tc.sum && !h.MustEqual(wantH, false) {
					t.Fatal("the sum differs from libtorch's x + delta")
				}
				for j := range ys {
					requireWithinRounding(t, fmt.Sprintf("copy %d", j), ys[j], wantYs[j])
				}
				// The gradients are RMSNorm's backward formula, not autograd's
				// chain through its ops: they agree to float32's rounding of
				// the sums, some ulps.
				requireNear(t, "x's gradient", got[0], want[0], 1e-5)
				if tc.sum {
					requireWithinRounding(t, "delta's gradient", got[1], want[1])
				}
				requireNear(t, "w's gradient", got[2], want[2], 1e-5)
			})
		}
		// A frozen gain (LoRA's base, a fine-tune that leaves the norms
		// alone) takes no gradient; x's is still RMSNorm's.
		t.Run(fmt.Sprintf("%v-frozen-gain", dev), func(t *testing.T) {
			torchx.Seed(6)
			x := randnOf([]int64{4, 40}, gotch.Float, dev)
			w := randnOf([]int64{40}, gotch.Float, dev)
			up := []*ts.Tensor{randnOf([]int64{4, 40}, gotch.BFloat16, dev), randnOf([]int64{4, 40}, gotch.BFloat16, dev)}
			_, dx := castCopiesPass(t, x, up, func(x *ts.Tensor) []*ts.Tensor {
				out, ok := torchx.RMSNormCopies(x, w, 1e-6, true, gotch.BFloat16, 2)
				if !ok {
					t.Fatal("the kernel did not take a contiguous float32 x")
				}
				return out
			})
			was := torchx.SetKernels(false)
			_, want := castCopiesPass(t, x, up, func(x *ts.Tensor) []*ts.Tensor {
				return torchx.CastCopies(torchx.RMSNorm(x, w, 1e-6, true), gotch.BFloat16, 2)
			})
			torchx.SetKernels(was)
			requireNear(t, "x's gradient", dx, want, 1e-5)
			if w.MustRequiresGrad() {
				t.Fatal("the frozen gain requires a gradient")
			}
		})
		t.Run(fmt.Sprintf("%v-not-taken", dev), func(t *testing.T) {
			w := ts.MustOnes([]int64{6}, gotch.Float, dev)
			for name, x := range map[string]*ts.Tensor{
				"bfloat16 x":        randnOf([]int64{4, 6}, gotch.BFloat16, dev),
				"a transposed view": randnOf([]int64{6, 4}, gotch.Float, dev).MustT(true),
			} {
				if _, ok := torchx.RMSNormCopies(x, w, 1e-5, false, gotch.BFloat16, 2); ok {
					t.Errorf("%s: the kernel took it", name)
				}
			}
			if _, ok := torchx.RMSNormCopies(randnOf([]int64{4, 6}, gotch.Float, dev), w, 1e-5, false, gotch.Float, 2); ok {
				t.Error("float32 copies: the kernel took them")
			}
		})
		t.Run(fmt.Sprintf("%v-sum-not-taken", dev), func(t *testing.T) {
			w := ts.MustOnes([]int64{6}, gotch.Float, dev)
			x := randnOf([]int64{4, 6}, gotch.Float, dev)
			for name, delta := range map[string]*ts.Tensor{
				"a float32 delta":   randnOf([]int64{4, 6}, gotch.Float, dev),
				"a transposed view": randnOf([]int64{6, 4}, gotch.BFloat16, dev).MustT(true),
				"another shape":     randnOf([]int64{2, 2, 6}, gotch.BFloat16, dev),
			} {
				if _, _, ok := torchx.AddRMSNormCopies(x, delta, w, 1e-5, false, gotch.BFloat16, 2); ok {
					t.Errorf("%s: the kernel took it", name)
				}
			}
		})
	}
}

// crossEntropyPass is the per-row losses of logits against targets through
// CrossEntropy and the logits' gradient of their sum weighted by w.
func crossEntropyPass(t *testing.T, logits, targets, w *ts.Tensor) (*ts.Tensor, *ts.Tensor) {
	t.Helper()
	in := leaf(logits)
	nll, err := torchx.CrossEntropy(in, targets, -100)
	if err != nil {
		t.Fatal(err)
	}
	nll.MustMul(w, false).MustSum(gotch.Float, true).MustBackward()
	return nll, in.MustGrad(false)
}

// The cross-entropy kernel on bfloat16 logits gives libtorch's losses of
// their float32 values within float32 rounding, and their gradient in
// bfloat16 within one rounding of the composition's (the float32 gradient
// cast back), in one kernel call: rows of a vocabulary smaller and larger
// than a block's lanes, ignored targets (loss 0, no gradient), a row whose
// logits are all equal. A target outside the vocabulary gives NaN. Float32
// logits, and a view that is not contiguous, take libtorch's loss.
func TestCrossEntropyKernel(t *testing.T) {
	torchx.Init(1, 7)
	for _, dev := range kernelDevices(t) {
		for _, tc := range []struct {
			name        string
			rows, vocab int64
		}{
			{"a small vocabulary", 9, 50},
			{"a vocabulary of blocks", 7, 2000},
			{"a vocabulary of Llama's", 3, 32000},
		} {
			t.Run(fmt.Sprintf("%v-%s", dev, tc.name), func(t *testing.T) {
				torchx.Seed(3)
				logits := randnOf([]int64{tc.rows, tc.vocab}, gotch.Float, dev).MustMulScalar(ts.FloatScalar(4), true).MustTotype(gotch.BFloat16, true)
				tv := make([]int64, tc.rows)
				for i := range tv {
					tv[i] = (int64(i)*7919 + 13) % tc.vocab
				}
				tv[1] = -100
				targets := ts.MustOfSlice(tv).MustTo(dev, true)
				w := randnOf([]int64{tc.rows}, gotch.Float, dev)
				var nll, dx *ts.Tensor
				calls := countsCalls(func() { nll, dx = crossEntropyPass(t, logits, targets, w) })
				if calls != 1 {
					t.Fatalf("%d kernel calls, want 1", calls)
				}
				if nll.DType() != gotch.Float || dx.DType() != gotch.BFloat16 {
					t.Fatalf("losses %v, gradient %v: want float32 and bfloat16", nll.DType(), dx.DType())
				}
				was := torchx.SetKernels(false)
				wantNLL, wantDx := crossEntropyPass(t, logits, targets, w)
				torchx.SetKernels(was)
				requireNear(t, "losses", nll, wantNLL, 1e-6)
				requireWithinRounding(t, "the logits' gradient", dx, wantDx)
				if v := nll.MustSelect(0, 1, false).Float64Values()[0]; v != 0 {
					t.Errorf("an ignored row's loss is %g", v)
				}
				if s := dx.MustSelect(0, 1, false).MustAbs(false).MustSum(gotch.Float, true).Float64Values()[0]; s != 0 {
					t.Errorf("an ignored row's gradient sums to %g in magnitude", s)
				}
			})
		}
		t.Run(fmt.Sprintf("%v-equal-logits", dev), func(t *testing.T) {
			logits := ts.MustOnes([]int64{2, 1000}, gotch.BFloat16, dev).MustMulScalar(ts.FloatScalar(3), true)
			nll, err := torchx.CrossEntropy(logits, ts.MustOfSlice([]int64{0, 999}).MustTo(dev, true), -100)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range nll.Float64Values() {
				if d := v - 6.907755278982137; abs(d) > 2e-6 { // two float32 roundings near 10, and logf's
					t.Errorf("row %d: loss %.9g, want log 1000", i, v)
				}
			}
		})
		t.Run(fmt.Sprintf("%v-target-outside", dev), func(t *testing.T) {
			logits := randnOf([]int64{2, 10}, gotch.BFloat16, dev)
			nll, err := torchx.CrossEntropy(logits, ts.MustOfSlice([]int64{3, 10}).MustTo(dev, true), -100)
			if err != nil {
				t.Fatal(err)
			}
			v := nll.Float64Values()
			if !(v[0] > 0) || v[1] == v[1] {
				t.Errorf("losses %v: want a finite first and NaN for the target outside", v)
			}
		})
		t.Run(fmt.Sprintf("%v-not-taken", dev), func(t *testing.T) {
			targets := ts.MustOfSlice([]int64{1, 2, 3, 4}).MustTo(dev, true)
			for name, x := range map[string]*ts.Tensor{
				"float32 logits":    randnOf([]int64{4, 6}, gotch.Float, dev),
				"a transposed view": randnOf([]int64{6, 4}, gotch.BFloat16, dev).MustT(true),
			} {
				var nll *ts.Tensor
				calls := countsCalls(func() {
					var err error
					if nll, err = torchx.CrossEntropy(x, targets, -100); err != nil {
						t.Fatal(err)
					}
				})
				if calls != 0 {
					t.Errorf("%s: %d kernel calls, want none", name, calls)
				}
				weight := ts.NewTensor()
				want := x.MustTotype(gotch.Float, false).MustCrossEntropyLoss(targets, weight, ts.ReductionNone, -100, 0, false)
				requireSame(t, name, nll, want)
			}
		})
	}
	// libtorch's error for a target outside the vocabulary is returned.
	if _, err := torchx.CrossEntropy(ts.MustOnes([]int64{2, 5}, gotch.Float, gotch.CPU), ts.MustOfSlice([]int64{1, 7}), -100); err == nil || !strings.Contains(err.Error(), "cross-entropy") {
		t.Errorf("a target outside the vocabulary: %v", err)
	}
}
