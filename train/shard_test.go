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
			p, err := newShardPlan(ShardOptimizer, params, nil, r, n, 0)
			if err != nil {
				t.Fatal(err)
			}
			if p.units[0].per != per || p.total != total || p.local != per {
				t.Fatalf("N=%d rank %d: per %d total %d local %d, want %d %d %d", n, r, p.units[0].per, p.total, p.local, per, total, per)
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
	_, err := newShardPlan(ShardOptimizer, []model.Param{{Name: "a", Tensor: a}, {Name: "b", Tensor: b}}, nil, 0, 2, 0)
	if err == nil {
		t.Fatal("a plan over float32 and float64 parameters was accepted")
	}
}

// Under "full" every unit is cut on its own; with groups of K ranks the
// ranges of the ranks at place j of every group are adjacent and make up
// the j-th secondary range, and every element is still owned once.
func TestShardPlanUnitsAndGroups(t *testing.T) {
	params := []model.Param{
		{Name: "a", Tensor: tensor32(make([]float64, 7), 7)},
		{Name: "b", Tensor: tensor32(make([]float64, 12), 3, 4)},
		{Name: "c", Tensor: tensor32(make([]float64, 2), 2)},
		{Name: "d", Tensor: tensor32(make([]float64, 5), 5)},
	}
	units := [][]int{{0}, {1, 2}, {3}}
	sizes := []int64{7, 14, 5}
	for _, tc := range []struct{ n, k int }{{2, 0}, {4, 0}, {4, 2}, {4, 1}, {6, 3}, {6, 2}} {
		owner := map[[2]int64]int{} // (unit, element) -> rank
		for r := 0; r < tc.n; r++ {
			p, err := newShardPlan(ShardFull, params, units, r, tc.n, tc.k)
			if err != nil {
				t.Fatal(err)
			}
			groups := int64(p.groups())
			for ui, u := range p.units {
				if want := (sizes[ui] + int64(tc.n) - 1) / int64(tc.n); u.per != max(1, want) {
					t.Fatalf("N=%d K=%d unit %d: per %d, want %d", tc.n, tc.k, ui, u.per, want)
				}
				// This rank's range lies inside its secondary range.
				j := int64(r % p.group)
				lo := int64(p.slot) * u.per
				if lo < j*groups*u.per || lo+u.per > (j+1)*groups*u.per {
					t.Errorf("N=%d K=%d rank %d: range %d of unit %d outside secondary range %d", tc.n, tc.k, r, p.slot, ui, j)
				}
				var start int64
				first := map[int]int64{}
				for _, i := range u.params {
					first[i] = start
					start += p.numel(i)
				}
				for _, s := range u.segs {
					if s.off < u.off || s.off+s.n > u.off+u.per {
						t.Errorf("segment %+v outside the unit's local range [%d, %d)", s, u.off, u.off+u.per)
					}
					for e := int64(0); e < s.n; e++ {
						key := [2]int64{int64(ui), first[s.param] + s.lo + e}
						if q, dup := owner[key]; dup {
							t.Errorf("N=%d K=%d: element %v owned by ranks %d and %d", tc.n, tc.k, key, q, r)
						}
						owner[key] = r
					}
				}
			}
			if slots := p.slots(); tc.k > 0 && tc.k < tc.n && slots[r] != p.slot {
				t.Errorf("slots()[%d] = %d, plan slot %d", r, slots[r], p.slot)
			}
		}
		if len(owner) != 26 {
			t.Errorf("N=%d K=%d: %d elements owned, want 26", tc.n, tc.k, len(owner))
		}
	}
}
