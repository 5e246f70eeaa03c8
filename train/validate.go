package train

// Validation: the mean cross-entropy over the validation rows.

import (
	"fmt"
	"math"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// validate is the mean cross-entropy over every non-padding target of the
// validation rows, with no goldfish mask; NaN when there are none. With
// several ranks each scores its share of the rows and the sums are
// all-reduced. Every rank runs the same number of batches (a sharded
// strategy gathers weights for each, a collective), a rank past its rows
// with none.
func (l *loop) validate() (float64, error) {
	if len(l.val) == 0 {
		return math.NaN(), nil
	}
	lo, hi := split(len(l.val), l.size, l.rank)
	mine := l.val[lo:hi]
	micro := max(1, l.cfg.BatchSize/l.size/l.cfg.GradAccum)
	most := (len(l.val) + l.size - 1) / l.size
	var sum, n float64
	for i := 0; i < most; i += micro {
		rows := mine[min(i, len(mine)):min(i+micro, len(mine))]
		parts, err := l.strat.eval(rows)
		if err != nil {
			return 0, fmt.Errorf("validation: %w", err)
		}
		for _, p := range parts {
			sum += p.sum
			n += p.n
		}
		torchx.Collect() // between batches: no libtorch call in flight
	}
	if l.group != nil && l.size > 1 {
		t := ts.MustOfSlice([]float64{sum, n})
		defer t.MustDrop()
		if err := l.group.AllReduceSum([]*ts.Tensor{t}); err != nil {
			return 0, fmt.Errorf("validation: all-reduce: %w", err)
		}
		v := t.Float64Values()
		sum, n = v[0], v[1]
	}
	return ratio(sum, n), nil
}

// evalRows is the CE sum and target count of rows, without gradients.
func evalRows(g *model.GPT, rows [][]int32, block int) (sum, n float64, err error) {
	return evalLogits(func(ids *ts.Tensor) (*ts.Tensor, error) { return g.ForwardForLoss(ids), nil }, rows, block, g.Device())
}

// evalLogits is evalRows with the logits of forward (called without
// gradients): the loss's logits (ForwardForLoss), which MaskedCrossEntropy
// alone reads.
func evalLogits(forward func(ids *ts.Tensor) (*ts.Tensor, error), rows [][]int32, block int, dev gotch.Device) (sum, n float64, err error) {
	torchx.NoGrad(func() {
		inp, tgt, _ := batchTensors(rows, block, dev)
		defer inp.MustDrop()
		defer tgt.MustDrop()
		var logits *ts.Tensor
		if logits, err = forward(inp); err != nil {
			return
		}
		none := ts.MustZeros(tgt.MustSize(), gotch.Bool, dev)
		var ls Losses
		ls, err = MaskedCrossEntropy(logits, tgt, none, PadID)
		if err == nil {
			if ls.NKept > 0 {
				sum, n = ls.All*float64(ls.NKept), float64(ls.NKept)
			}
			ls.Kept.MustDrop()
		}
		for _, t := range []*ts.Tensor{none, logits} {
			t.MustDrop()
		}
	})
	return sum, n, err
}
