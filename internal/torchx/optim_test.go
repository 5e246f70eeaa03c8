package torchx

import (
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// ClearGrads must leave a tensor with no gradient, and the next backward
// pass must give it exactly the new gradient (not added to the old one).
func TestClearGrads(t *testing.T) {
	w := ts.MustOnes([]int64{3}, gotch.Float, gotch.CPU).MustSetRequiresGrad(true, false)
	backward := func(scale float64) {
		loss := w.MustMulScalar(ts.FloatScalar(scale), false).MustSum(gotch.Float, true)
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		loss.MustDrop()
	}
	backward(2)
	backward(3) // accumulates: 5
	g := w.MustGrad(false)
	if v := g.Float64Values(); v[0] != 5 {
		t.Fatalf("accumulated gradient %v, want 5s", v)
	}
	g.MustDrop()
	ClearGrads([]*ts.Tensor{w})
	g = w.MustGrad(false)
	if g.MustDefined() {
		t.Errorf("gradient still defined after ClearGrads: %v", g.Float64Values())
	}
	g.MustDrop()
	backward(7)
	g = w.MustGrad(false)
	if v := g.Float64Values(); v[0] != 7 || v[2] != 7 {
		t.Errorf("gradient after clearing and one backward %v, want 7s", v)
	}
}
