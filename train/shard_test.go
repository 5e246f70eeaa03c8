package train

import (
	"slices"
	"testing"

	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
)

// The flat cut gives every rank S = ceil(P/N) elements but the last, which
// is short by the padding N·S - P < N; the ranks' segments tile the
// parameters exactly once, in order.
func TestShardPlanCut(t *testing.T) {
	params := []model.Param{
		{Name: "a", Tensor: tensor32(make([]float64, 7), 7)},
		{Name: "b", Tensor: tensor32(make([]float64, 12), 3, 4)},
		{Name: "c", Tensor: tensor32(make([]float64, 2), 2)},
	}
	const total = 21
	for _, n := range []int{1, 2, 3, 4, 5, 8} {
		per := int64((total + n - 1) / n)
		var seen []int64 // global flat index of every owned element, in order
		for r := 0; r < n; r++ {
			p, err := newShardPlan(ShardOptimizer, params, r, n)
			if err != nil {
				t.Fatal(err)
			}
			if p.per != per || p.total != total {
				t.Fatalf("N=%d rank %d: per %d total %d, want %d %d", n, r, p.per, p.total, per, total)
			}
			if got, want := p.owned(), min(per, max(0, total-int64(r)*per)); got != want {
				t.Errorf("N=%d rank %d owns %d elements, want %d", n, r, got, want)
			}
			starts := []int64{0, 7, 19}
			var off int64
			for _, s := range p.segs {
				if s.off != off {
					t.Errorf("N=%d rank %d: segment of %s at shard offset %d, want %d", n, r, params[s.param].Name, s.off, off)
				}
				off += s.n
				for i := int64(0); i < s.n; i++ {
					seen = append(seen, starts[s.param]+s.lo+i)
				}
			}
		}
		want := make([]int64, total)
		for i := range want {
			want[i] = int64(i)
		}
		if !slices.Equal(seen, want) {
			t.Errorf("N=%d: the ranks own %v, want each element once in order", n, seen)
		}
	}
}

// Parameters of two dtypes cannot share one flat cut.
func TestShardPlanOneDtype(t *testing.T) {
	a := tensor32([]float64{1, 2}, 2)
	b := a.MustTotype(gotch.Double, false)
	_, err := newShardPlan(ShardOptimizer, []model.Param{{Name: "a", Tensor: a}, {Name: "b", Tensor: b}}, 0, 2)
	if err == nil {
		t.Fatal("a plan over float32 and float64 parameters was accepted")
	}
}
