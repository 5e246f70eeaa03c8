package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// topFirst must be the first w of a stable descending sort, values and
// indices, on rows full of ties (values rounded to halves, ±0 among
// them), at widths 1 to 7, on the CPU and, where one is, on a GPU
// (scripts/gpu/issue41-next.sh runs it there).
func TestTopFirst(t *testing.T) {
	const rows, v = 40, 300
	rng := rand.New(rand.NewPCG(7, 8))
	flat := make([]float64, rows*v)
	for i := range flat {
		flat[i] = math.Round(rng.NormFloat64()*4) / 2
		if flat[i] == 0 && rng.IntN(2) == 0 {
			flat[i] = math.Copysign(0, -1)
		}
	}
	devs := testDevices()
	for _, dev := range devs {
		x := ts.MustOfSlice(flat).MustView([]int64{rows, v}, true).MustTo(dev, true)
		for _, w := range []int{1, 2, 4, 7} {
			torchx.NoGrad(func() {
				sv, si := x.MustSortStable(true, 1, true, false)
				wantV := sv.MustNarrow(1, 0, int64(w), true).MustTo(gotch.CPU, true).Float64Values(true)
				wantI := si.MustNarrow(1, 0, int64(w), true).MustTo(gotch.CPU, true).Int64Values(true)
				gv, gi := topFirst(x, w)
				gotV := gv.MustTo(gotch.CPU, true).Float64Values(true)
				gotI := gi.MustTo(gotch.CPU, true).Int64Values(true)
				if !slices.Equal(gotV, wantV) || !slices.Equal(gotI, wantI) {
					t.Errorf("%v, w %d: topFirst %v at %v, the stable sort %v at %v", dev, w, gotV, gotI, wantV, wantI)
				}
			})
		}
		x.MustDrop()
	}
}
