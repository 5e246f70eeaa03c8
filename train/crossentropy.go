package train

import (
	"fmt"
	"math"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Losses is the goldfish loss of one micro-batch and its logging companions.
// It lives beside the trainer, not in package loss, so that loss (masks and
// their config) stays pure Go and eval, plots and memo mask build without
// libtorch.
type Losses struct {
	// Kept is the training loss: the sum of cross-entropy over kept targets
	// divided by their number, a differentiable scalar. With no kept target
	// it is a graph-connected 0 (zero gradient), as the reference's
	// sum / max(1, n) gives.
	Kept *ts.Tensor
	// All and Dropped are detached means over every non-padding target and
	// over the dropped ones, for logging; NaN when there are none.
	All, Dropped float64
	// NKept and NDropped count targets; padding is in neither.
	NKept, NDropped int64
}

// MaskedCrossEntropy computes the goldfish loss: logits [B,T,V] (float32,
// or bfloat16 as a GPU's bf16 head leaves them for the loss: see
// model.GPT.ForwardForLoss), targets [B,T] (int64; ignoreIndex marks
// padding, which is neither kept nor dropped whatever dropped says) and
// dropped [B,T] (bool). Each target's cross-entropy is
// torchx.CrossEntropy's: libtorch's of the logits' float32 values, or on
// a GPU memo's kernel on bfloat16 logits.
func MaskedCrossEntropy(logits, targets, dropped *ts.Tensor, ignoreIndex int64) (Losses, error) {
	ls, err := maskedCrossEntropy(logits, targets, dropped, ignoreIndex)
	if err != nil {
		return Losses{}, fmt.Errorf("masked cross-entropy: %w", err)
	}
	return ls, nil
}

func maskedCrossEntropy(logits, targets, dropped *ts.Tensor, ignoreIndex int64) (Losses, error) {
	ls, ts2, ds := logits.MustSize(), targets.MustSize(), dropped.MustSize()
	if len(ls) != 3 || len(ts2) != 2 || len(ds) != 2 || ls[0] != ts2[0] || ls[1] != ts2[1] || ds[0] != ts2[0] || ds[1] != ts2[1] {
		return Losses{}, fmt.Errorf("shapes logits %v, targets %v, dropped %v: want [B,T,V], [B,T], [B,T]", ls, ts2, ds)
	}
	if k := targets.DType(); k != gotch.Int64 {
		return Losses{}, fmt.Errorf("targets dtype %v: want int64", k)
	}
	if k := dropped.DType(); k != gotch.Bool {
		return Losses{}, fmt.Errorf("dropped dtype %v: want bool", k)
	}
	v := ls[2]
	flat := logits.MustReshape([]int64{-1, v}, false)
	tflat := targets.MustReshape([]int64{-1}, false)
	dflat := dropped.MustReshape([]int64{-1}, false)
	defer flat.MustDrop()
	defer tflat.MustDrop()
	defer dflat.MustDrop()

	// Per-target cross-entropy; 0 at padding.
	nll, err := torchx.CrossEntropy(flat, tflat, ignoreIndex)
	if err != nil {
		return Losses{}, err
	}
	defer nll.MustDrop()

	valid := tflat.MustNe(ts.IntScalar(ignoreIndex), false)
	defer valid.MustDrop()
	notDropped := dflat.MustLogicalNot(false)
	defer notDropped.MustDrop()
	keep := valid.MustLogicalAnd(notDropped, false)
	defer keep.MustDrop()
	drop := valid.MustLogicalAnd(dflat, false)
	defer drop.MustDrop()
	nKept := countTrue(keep)
	nDropped := countTrue(drop)

	// masked_fill rather than a multiply, so an inf at a dropped target
	// cannot turn the kept sum into NaN.
	notKeep := keep.MustLogicalNot(false)
	defer notKeep.MustDrop()
	keptOnly := nll.MustMaskedFill(notKeep, ts.FloatScalar(0), false)
	defer keptOnly.MustDrop()
	keptSum := keptOnly.MustSum(nll.DType(), false)
	defer keptSum.MustDrop()
	kept := keptSum.MustDivScalar(ts.FloatScalar(float64(max(nKept, 1))), false)

	detached := nll.MustDetach(false)
	defer detached.MustDrop()
	return Losses{
		Kept:     kept,
		All:      maskedMean(detached, valid, nKept+nDropped),
		Dropped:  maskedMean(detached, drop, nDropped),
		NKept:    nKept,
		NDropped: nDropped,
	}, nil
}

func countTrue(mask *ts.Tensor) int64 {
	s := mask.MustSum(gotch.Int64, false)
	defer s.MustDrop()
	return s.Int64Values()[0]
}

// maskedMean is the float64 mean of x where mask holds, NaN over nothing.
func maskedMean(x, mask *ts.Tensor, n int64) float64 {
	if n == 0 {
		return math.NaN()
	}
	notMask := mask.MustLogicalNot(false)
	defer notMask.MustDrop()
	sel := x.MustMaskedFill(notMask, ts.FloatScalar(0), false)
	defer sel.MustDrop()
	s := sel.MustSum(gotch.Double, false)
	defer s.MustDrop()
	return s.Float64Values()[0] / float64(n)
}
