package torchx

import (
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// A product and a sum through autograd: the counter sees aten::matmul as
// memo's call, the aten::mm inside it as nested, the backward pass's
// products as its nodes' calls, and the nodes themselves; the same work
// counted twice gives the same counts, and work outside the count is not
// counted.
func TestCountOps(t *testing.T) {
	work := func() error {
		a := ts.MustRandn([]int64{4, 5}, gotch.Float, gotch.CPU).MustSetRequiresGrad(true, true)
		b := ts.MustRandn([]int64{5, 3}, gotch.Float, gotch.CPU)
		y := a.MustMatmul(b, false).MustSum(gotch.Float, true)
		if err := y.Backward(); err != nil {
			return err
		}
		for _, x := range []*ts.Tensor{a, b, y} {
			x.MustDrop()
		}
		return nil
	}
	first, err := CountOps(work)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]OpCount{}
	for _, o := range first.Ops {
		byName[o.Name] = o
	}
	if mat := byName["aten::matmul"]; mat.Calls != 1 || mat.Outer != 1 {
		t.Errorf("aten::matmul %+v: want memo's one call", mat)
	}
	// One mm inside matmul (not outer), one in MmBackward0 for a's
	// gradient (outer: the node is not an operator).
	if mm := byName["aten::mm"]; mm.Calls != 2 || mm.Outer != 1 {
		t.Errorf("aten::mm %+v: want 2 calls, 1 of them outer", mm)
	}
	calls, outer, nodes := first.Calls()
	if outer >= calls || nodes < 2 {
		t.Errorf("%d calls, %d outer, %d autograd nodes: want fewer outer calls than calls and the backward pass's nodes (%+v)", calls, outer, nodes, first.Nodes)
	}
	second, err := CountOps(work)
	if err != nil {
		t.Fatal(err)
	}
	if c2, o2, n2 := second.Calls(); c2 != calls || o2 != outer || n2 != nodes {
		t.Errorf("the same work counted again: %d, %d, %d; first %d, %d, %d", c2, o2, n2, calls, outer, nodes)
	}
	if err := work(); err != nil {
		t.Fatal(err)
	}
	empty, err := CountOps(func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if c, _, n := empty.Calls(); c != 0 || n != 0 {
		t.Errorf("nothing run while counting: %d calls, %d nodes counted", c, n)
	}
}

// An OpCounter adds the calls of memo's own kernels (here their host
// spelling), which libtorch does not see, and a Stop without a Start, or
// a second Stop, is nil.
func TestOpCounterCountsKernelCalls(t *testing.T) {
	SetElementwiseOnHost(true)
	t.Cleanup(func() { SetElementwiseOnHost(false) })
	var c OpCounter
	if got, err := c.Stop(); got != nil || err != nil {
		t.Fatalf("Stop before Start: %v, %v; want nil, nil", got, err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	g := ts.MustRandn([]int64{3, 8}, gotch.Float, gotch.CPU)
	u := ts.MustRandn([]int64{3, 8}, gotch.Float, gotch.CPU)
	SwiGLU(g, u).MustDrop()
	got, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || got.KernelCalls != 1 {
		t.Fatalf("counts %+v: want one call of memo's kernels", got)
	}
	if again, err := c.Stop(); again != nil || err != nil {
		t.Errorf("a second Stop: %v, %v; want nil, nil", again, err)
	}
}
