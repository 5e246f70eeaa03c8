package train

import (
	"math"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// fusedTestDevice is where the fused kernels are tested: the first GPU
// when there is one (where training uses them), else the CPU, whose
// libtorch has them from 2.4 on.
func fusedTestDevice() gotch.Device {
	if gotch.CUDA.IsAvailable() {
		return gotch.CudaBuilder(0)
	}
	return gotch.CPU
}

// randParams makes a decayed matrix and an undecayed gain on dev, the
// same values for the same seed.
func randParams(dev gotch.Device, seed int64) []model.Param {
	torchx.Init(0, uint64(seed))
	w := ts.MustRandn([]int64{64, 48}, gotch.Float, gotch.CPU).MustTo(dev, true)
	n := ts.MustRandn([]int64{48}, gotch.Float, gotch.CPU).MustTo(dev, true)
	return []model.Param{{Name: "w", Tensor: w, Decay: true}, {Name: "n", Tensor: n}}
}

// The fused AdamW step and the foreach gradient norm, which training takes
// on a GPU, must give the per-tensor step's norm, weights and moments
// within float rounding, over three clipped steps with both decay groups.
// Skipped where libtorch lacks the kernels (Debian's 1.13).
func TestFusedAdamWMatchesPerTensor(t *testing.T) {
	if !torchx.FusedAdamWAvailable() {
		t.Skip("this libtorch has no fused AdamW (1.13): training takes the per-tensor step, tested above")
	}
	dev := fusedTestDevice()
	cfg := DefaultConfig()
	cfg.WeightDecay = 0.1
	t.Setenv("MEMO_FUSED_OPTIM", "off") // update and clipGrads: the per-tensor path
	run := func(fused bool) (norms []float64, params []model.Param, opt *adamW) {
		params = randParams(dev, 3)
		opt = newAdamW(params, cfg, nil)
		for s := 0; s < 3; s++ {
			torchx.Init(0, uint64(100+s))
			gs := []*ts.Tensor{
				ts.MustRandn([]int64{64, 48}, gotch.Float, gotch.CPU).MustTo(dev, true),
				ts.MustRandn([]int64{48}, gotch.Float, gotch.CPU).MustTo(dev, true),
			}
			if fused { // what update and clipGrads do on a GPU
				n, ok, err := torchx.ForeachGradNorm(gs, 5)
				if !ok || err != nil {
					t.Fatalf("foreach gradient norm: ran %v, %v", ok, err)
				}
				norms = append(norms, n)
				opt.step++
				if !opt.fusedUpdate(gs, 1e-2) {
					t.Fatal("fused AdamW did not run")
				}
			} else {
				norms = append(norms, clipGrads(gs, 5))
				opt.update(gs, 1e-2)
			}
			for _, g := range gs {
				g.MustDrop()
			}
		}
		return norms, params, opt
	}
	n1, p1, o1 := run(false)
	n2, p2, o2 := run(true)
	for i := range n1 {
		if math.Abs(n1[i]-n2[i]) > 1e-5*n1[i] {
			t.Errorf("step %d: gradient norm %g per tensor, %g foreach", i+1, n1[i], n2[i])
		}
	}
	for i := range p1 {
		for _, pair := range [][2]*ts.Tensor{{p1[i].Tensor, p2[i].Tensor}, {o1.m[i], o2.m[i]}, {o1.v[i], o2.v[i]}} {
			a, b := pair[0].Float64Values(), pair[1].Float64Values()
			// Relative to the tensor's scale, not each element's: an element
			// near zero has a large relative rounding difference (1.3e-3 on
			// an H200) though its absolute one is float32's.
			worst, scale := 0.0, 0.0
			for j := range a {
				worst, scale = max(worst, math.Abs(a[j]-b[j])), max(scale, math.Abs(a[j]))
			}
			if worst > 1e-5*scale {
				t.Errorf("%s: fused and per-tensor AdamW differ by %g, %g of the largest element", p1[i].Name, worst, worst/scale)
			}
		}
	}
}
