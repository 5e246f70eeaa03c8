package engine

import (
	"fmt"
	"math"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Beam is one of a prompt's beams after ContinueBeams.
type Beam struct {
	// IDs are the beam's n tokens.
	IDs []int32
	// LogProb is the sum of their log-probabilities, in float64.
	LogProb float64
}

// ContinueBeams runs beam search of the given width for n tokens from
// the prompts StartOnDevice fed (with one row a prompt), ranking the
// candidates where the logits are, and returns prompt p's width beams,
// best first, at p·width … p·width+width−1. It is extract's host beam
// search (its beamGuesses) step for step: each beam offers its width
// most likely next tokens (the lower id first among equal
// log-probabilities; at the first step only the prompt's own row), each
// candidate scores its beam's sum plus the token's float64 log-softmax,
// and a prompt keeps its width best candidates, ties going to the lower
// beam, then the lower id (a stable sort of the candidates in that
// order). The log-softmax sums in another order than the host's, so a
// beam's LogProb differs from the host's in its last bits, and two
// candidates whose scores are within rounding may rank the other way.
//
// The cache is reordered to the kept beams and fed their tokens on the
// device, and every step's choices come back once, at the end. ok is
// false, with nothing decoded, under an approximation (whose state
// follows reordered rows on the host), where the vocabulary is smaller
// than width, or where a row's largest log-probability is not finite
// (libtorch and the host order NaN differently); the caller then
// searches the host's way.
func (s *Stepper) ContinueBeams(n, width int) (beams []Beam, ok bool, err error) {
	logits := s.pending
	if logits == nil {
		return nil, false, fmt.Errorf("beam search on the device: ContinueBeams without StartOnDevice")
	}
	s.pending = nil
	b := len(s.seqs)
	if n < 1 || n > s.maxLen-s.promptLen+1 || width < 1 {
		logits.MustDrop()
		return nil, false, fmt.Errorf("beam search on the device: %d tokens, width %d: want 1 to the %d started for, width >= 1", n, width, s.maxLen-s.promptLen+1)
	}
	if s.cache.approx != nil || int(logits.MustSize()[1]) < width {
		logits.MustDrop()
		return nil, false, nil
	}
	dev := s.g.Device()
	first := make([]int64, b*width) // the first step's parents: each prompt's row
	base := make([]int64, b)        // prompt p's first beam's row
	starts := make([]int, b*width)
	for r := range first {
		first[r], starts[r] = int64(r/width), s.starts[r/width]
	}
	for p := range base {
		base[p] = int64(p * width)
	}
	firstT, err := model.TensorOf(first, []int64{int64(b * width)}, dev)
	if err != nil {
		logits.MustDrop()
		return nil, false, fmt.Errorf("beam search on the device: %w", err)
	}
	defer firstT.MustDrop()
	baseT, err := model.TensorOf(base, []int64{int64(b), 1}, dev)
	if err != nil {
		logits.MustDrop()
		return nil, false, fmt.Errorf("beam search on the device: %w", err)
	}
	defer baseT.MustDrop()
	var vals []float64 // row r: each step's parent, then each step's token, then the final score
	var finite bool    // every step's rows had a finite largest log-probability
	torchx.NoGrad(func() {
		var parents, toks []*ts.Tensor // each step's [b·width, 1], as float64 columns
		var best []*ts.Tensor          // each step's sum of its rows' largest log-probabilities, [1, 1]
		var score *ts.Tensor           // [b·width, 1] float64
		s.stepOnDevice(logits, n, false, func(step int, logits *ts.Tensor) *ts.Tensor {
			lp := logits.MustLogSoftmax(1, gotch.Double, false)
			top, ids := topFirst(lp, width)
			lp.MustDrop()
			// Each row's largest log-probability, summed: finite only if every one is.
			best = append(best, top.MustNarrow(1, 0, 1, false).MustSumDimIntlist([]int64{0}, true, gotch.Double, true))
			var parent, tok *ts.Tensor // [b·width] int64
			if step == 0 {
				parent = firstT.MustShallowClone()
				score = top.MustReshape([]int64{int64(b * width), 1}, true)
				tok = ids.MustReshape([]int64{int64(b * width)}, true)
			} else {
				cand := score.MustAdd(top, true).MustView([]int64{int64(b), int64(width * width)}, true)
				top.MustDrop()
				kept, at := cand.MustSortStable(true, 1, true, true)
				kept = kept.MustNarrow(1, 0, int64(width), true)
				at = at.MustNarrow(1, 0, int64(width), true)
				score = kept.MustReshape([]int64{int64(b * width), 1}, true)
				parent = at.MustDivScalarMode(ts.IntScalar(int64(width)), "floor", false).MustAdd(baseT, true).MustReshape([]int64{int64(b * width)}, true)
				tok = ids.MustReshape([]int64{int64(b), int64(width * width)}, true).MustGather(1, at, false, true).MustReshape([]int64{int64(b * width)}, true)
				at.MustDrop()
			}
			parents = append(parents, parent.MustTotype(gotch.Double, false).MustView([]int64{-1, 1}, true))
			toks = append(toks, tok.MustTotype(gotch.Double, false).MustView([]int64{-1, 1}, true))
			if step < n-1 { // the kept beams' histories, for the next step's pass
				s.cache.reorderBy(parent, starts)
			}
			parent.MustDrop()
			return tok.MustView([]int64{-1, 1}, true)
		})
		vals = readColumns(append(append(parents, toks...), score))
		finite = allFinite(best)
	})
	if !finite {
		return nil, false, nil
	}
	rows := b * width
	beams = make([]Beam, rows)
	cols := 2*n + 1
	for r := range beams {
		beams[r].IDs = make([]int32, n)
		beams[r].LogProb = vals[r*cols+2*n]
		at := r
		for k := n - 1; k >= 0; k-- {
			beams[r].IDs[k] = int32(vals[at*cols+n+k])
			at = int(vals[at*cols+k])
		}
	}
	// The stepper's rows are the beams, holding every token but the last,
	// as after the host's search.
	seqs := make([][]int64, rows)
	for r := range seqs {
		seqs[r] = append(make([]int64, 0, s.maxLen+1), s.seqs[r/width][:s.promptLen]...)
		for _, t := range beams[r].IDs[:n-1] {
			seqs[r] = append(seqs[r], int64(t))
		}
	}
	s.seqs, s.starts = seqs, starts
	s.fed = len(s.seqs[0])
	return beams, true, nil
}

// topFirst is the w largest values of each row of x [R, V] (float64)
// and their indices, largest first and the lower index first among
// equals (extract's topIndices), without sorting the row: the w-th
// largest value comes from torch.topk (a value is a value, whatever order
// topk leaves ties in), then every index above it and the lowest indices
// equal to it, as many as make w, are ordered by a stable sort of those w.
func topFirst(x *ts.Tensor, w int) (vals, ids *ts.Tensor) {
	size := x.MustSize()
	kv, ki := x.MustTopk(int64(w), 1, true, true, false)
	ki.MustDrop()
	kth := kv.MustNarrow(1, int64(w-1), 1, true)
	above := x.MustGtTensor(kth, false)
	tie := x.MustEqTensor(kth, false)
	kth.MustDrop()
	// need = w − (how many are above): the ties to take, lowest index first.
	need := above.MustSumDimIntlist([]int64{1}, true, gotch.Int64, false).MustMulScalar(ts.IntScalar(-1), true).MustAddScalar(ts.IntScalar(int64(w)), true)
	rank := tie.MustCumsum(1, gotch.Int64, false).MustLeTensor(need, true)
	need.MustDrop()
	take := tie.MustLogicalAnd(rank, true).MustLogicalOr(above, true)
	rank.MustDrop()
	above.MustDrop()
	// The taken indices, lowest first: the w largest of −index among them.
	key := ts.MustArange(ts.IntScalar(size[1]), gotch.Double, x.MustDevice()).MustNeg(true).MustUnsqueeze(0, true).MustExpand(size, true, true)
	key = key.MustMaskedFill(take.MustLogicalNot(true), ts.FloatScalar(math.Inf(-1)), true)
	_, ids = key.MustTopk(int64(w), 1, true, true, true)
	vals = x.MustGather(1, ids, false, false)
	vals, at := vals.MustSortStable(true, 1, true, true)
	ids = ids.MustGather(1, at, false, true)
	at.MustDrop()
	return vals, ids
}

// allFinite reports whether every value of the float64 columns [1, 1]
// is finite, and frees them: ContinueSampled's and ContinueBeams' check,
// one sum a step, that no row's largest value was NaN or infinite (a sum
// of finite log-probabilities or logits stays finite).
func allFinite(cols []*ts.Tensor) bool {
	if len(cols) == 0 {
		return true
	}
	for _, v := range readColumns(cols) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
