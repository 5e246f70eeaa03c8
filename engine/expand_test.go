package engine

import (
	"testing"

	"github.com/memo-research/memo/model"
)

// TestCacheExpand: a cache reordered to more rows than it held (a prompt
// run once, expanded into its samples) continues each copy exactly as the
// row it copies, and as recomputation from scratch.
func TestCacheExpand(t *testing.T) {
	g := newTest(t, model.Config{Preset: "nano", Vocab: 61, Context: 16, Seed: 5})
	c, _ := NewCache(g, 2, 8)
	c.Forward(ids(t, [][]int64{{1, 2, 3}, {9, 8, 7}}))
	if err := c.Reorder([]int{0, 0, 0, 1, 1, 1}); err != nil {
		t.Fatal(err)
	}
	if c.Batch() != 6 {
		t.Fatalf("expanded cache has %d rows, want 6", c.Batch())
	}
	out := c.Forward(ids(t, [][]int64{{5}, {5}, {6}, {5}, {6}, {6}}))
	full := g.Forward(ids(t, [][]int64{{1, 2, 3, 5}, {1, 2, 3, 6}, {9, 8, 7, 5}, {9, 8, 7, 6}}))
	want := []int{0, 0, 1, 2, 3, 3} // row of full that each expanded row must equal
	for r, w := range want {
		got := out.MustSelect(0, int64(r), false)
		ref := full.MustSelect(0, int64(w), false).MustNarrow(0, 3, 1, false)
		if d := maxAbsDiff(got, ref); d > 1e-5 {
			t.Errorf("expanded row %d differs from recomputation by %g", r, d)
		}
	}
	if err := c.Reorder(nil); err == nil {
		t.Error("reorder to no rows did not fail")
	}
	c.Drop()
}
