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
// a GPU memo's kernel on bfloat16 logits. It reads the counts and the
// logging means back to the host; the trainer's step takes the same loss
// without those reads (goldfishTerms).
func MaskedCrossEntropy(logits, targets, dropped *ts.Tensor, ignoreIndex int64) (Losses, error) {
	gl, err := goldfishTerms(logits, targets, dropped, ignoreIndex, nil)
	if err != nil {
		return Losses{}, fmt.Errorf("masked cross-entropy: %w", err)
	}
	defer gl.stats.MustDrop()
	st := gl.partStats(gl.stats.Float64Values())
	return Losses{Kept: gl.kept, All: st.allMean, Dropped: st.droppedMean, NKept: gl.n.kept, NDropped: gl.n.dropped}, nil
}

// targetCounts are a part's kept and dropped targets (padding is in
// neither).
type targetCounts struct{ kept, dropped int64 }

// countTargets counts rows' targets (each row's ids 1..block) on the host
// as the loss's masks count them on the device: a target is kept when it
// is not PadID and its dropped flag (block flags a row) is false, dropped
// when it is not PadID and the flag is true.
func countTargets(rows [][]int32, dropped []bool, block int) targetCounts {
	var n targetCounts
	for i, r := range rows {
		for j, id := range r[1 : block+1] {
			switch {
			case id == PadID:
			case dropped[i*block+j]:
				n.dropped++
			default:
				n.kept++
			}
		}
	}
	return n
}

// goldfishLoss is one part's goldfish loss with its logging statistics
// still on the device, so that a training step can launch its backward
// pass without waiting for the forward one and read every part's
// statistics at once, after the last backward pass (step.go).
type goldfishLoss struct {
	// kept is Losses.Kept: the differentiable mean over kept targets.
	kept *ts.Tensor
	// stats is detached float64 [3]: kept's value, and the CE summed over
	// every non-padding target and over the dropped ones.
	stats *ts.Tensor
	n     targetCounts
}

// partStats turns stats' three values, read back, into the part's
// statistics.
func (gl goldfishLoss) partStats(v []float64) partStats {
	return partStats{
		targetCounts: gl.n,
		keptMean:     v[0],
		allMean:      meanOf(v[1], gl.n.kept+gl.n.dropped),
		droppedMean:  meanOf(v[2], gl.n.dropped),
	}
}

// meanOf is sum / n, NaN over nothing.
func meanOf(sum float64, n int64) float64 {
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// goldfishTerms is MaskedCrossEntropy's loss with its statistics left on
// the device. With counts nil it counts the kept and dropped targets on
// the device (a read); a caller that knows them from the host passes them
// (countTargets) and the function reads nothing.
func goldfishTerms(logits, targets, dropped *ts.Tensor, ignoreIndex int64, counts *targetCounts) (goldfishLoss, error) {
	ls, ts2, ds := logits.MustSize(), targets.MustSize(), dropped.MustSize()
	if len(ls) != 3 || len(ts2) != 2 || len(ds) != 2 || ls[0] != ts2[0] || ls[1] != ts2[1] || ds[0] != ts2[0] || ds[1] != ts2[1] {
		return goldfishLoss{}, fmt.Errorf("shapes logits %v, targets %v, dropped %v: want [B,T,V], [B,T], [B,T]", ls, ts2, ds)
	}
	if k := targets.DType(); k != gotch.Int64 {
		return goldfishLoss{}, fmt.Errorf("targets dtype %v: want int64", k)
	}
	if k := dropped.DType(); k != gotch.Bool {
		return goldfishLoss{}, fmt.Errorf("dropped dtype %v: want bool", k)
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
		return goldfishLoss{}, err
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
	var n targetCounts
	if counts != nil {
		n = *counts
	} else {
		n = targetCounts{kept: countTrue(keep), dropped: countTrue(drop)}
	}

	// masked_fill rather than a multiply, so an inf at a dropped target
	// cannot turn the kept sum into NaN.
	notKeep := keep.MustLogicalNot(false)
	defer notKeep.MustDrop()
	keptOnly := nll.MustMaskedFill(notKeep, ts.FloatScalar(0), false)
	defer keptOnly.MustDrop()
	keptSum := keptOnly.MustSum(nll.DType(), false)
	defer keptSum.MustDrop()
	kept := keptSum.MustDivScalar(ts.FloatScalar(float64(max(n.kept, 1))), false)

	detached := nll.MustDetach(false)
	defer detached.MustDrop()
	keptValue := kept.MustDetach(false).MustTotype(gotch.Double, true)
	defer keptValue.MustDrop()
	allSum := maskedSum(detached, valid)
	defer allSum.MustDrop()
	droppedSum := maskedSum(detached, drop)
	defer droppedSum.MustDrop()
	stats := ts.MustStack([]*ts.Tensor{keptValue, allSum, droppedSum}, 0)
	return goldfishLoss{kept: kept, stats: stats, n: n}, nil
}

func countTrue(mask *ts.Tensor) int64 {
	s := mask.MustSum(gotch.Int64, false)
	defer s.MustDrop()
	return s.Int64Values()[0]
}

// maskedSum is the float64 sum of x where mask holds, a 0-d tensor.
func maskedSum(x, mask *ts.Tensor) *ts.Tensor {
	notMask := mask.MustLogicalNot(false)
	defer notMask.MustDrop()
	sel := x.MustMaskedFill(notMask, ts.FloatScalar(0), false)
	return sel.MustSum(gotch.Double, true)
}
