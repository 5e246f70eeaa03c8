package engine

import (
	"fmt"
	"math"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Warpers are sampling's logits warpers, applied in Hugging Face's order:
// temperature, then top-k, then top-p on the distribution renormalized
// after top-k (extract.Config's keys of the same names).
type Warpers struct {
	// Temperature divides the logits (> 0).
	Temperature float64
	// TopK keeps the TopK largest scaled logits and every one tied with
	// the K-th; 0 keeps all.
	TopK int
	// TopP keeps, in decreasing probability, the fewest tokens whose
	// probability reaches TopP (the most likely always stays); 1 keeps all.
	TopP float64
}

// Sampled is what ContinueSampled drew for one row.
type Sampled struct {
	// IDs are the row's n tokens.
	IDs []int32
	// LogProbs are each token's log-probability under the model's
	// untruncated distribution at temperature 1, in float64.
	LogProbs []float64
}

// StartOnDevice feeds the prompts and gives prompt p the rows p·per …
// p·per+per−1 (the prompt runs once and its KV cache is copied, as
// Reorder does), keeping their next-token logits on the device for
// ContinueSampled or ContinueBeams, which choose the tokens there. ok is
// false, with nothing started, without the cache: they feed each step's
// tokens through it.
func (s *Stepper) StartOnDevice(prompts [][]int32, per, maxNew int) (ok bool, err error) {
	if !s.useCache {
		return false, nil
	}
	if per < 1 {
		return false, fmt.Errorf("decode on the device: %d rows a prompt: want >= 1", per)
	}
	if err := s.begin(prompts, maxNew); err != nil {
		return false, err
	}
	logits, err := s.pass(true)
	if err != nil {
		return false, err
	}
	if per > 1 {
		if logits, err = s.expand(logits, len(prompts), per); err != nil {
			return false, err
		}
	}
	s.pending = logits
	return true, nil
}

// ContinueSampled extends every row started by StartOnDevice by n sampled
// tokens, drawn where the logits are: row r's token at step j is the
// candidate (by the warpers, most likely first, lower id first among
// equals) at which the cumulative probability first exceeds u[r][j], a
// uniform draw in [0, 1). That is the inverse-CDF draw extract's host
// sampler makes with the same u from the same candidates; the two differ
// only where rounding moves a cumulative sum across u (the device sums
// in another order), and a token's log-probability differs from the
// host's in its last bits.
//
// Each step's token is fed to the next on the device, and every row's
// tokens and log-probabilities come back once, at the end: on a GPU the
// host neither copies b rows of logits a step (32 MB at batch 256 and a
// 32,000-token vocabulary) nor sorts them, and it queues the steps
// without waiting for one. ok is false where warped's guard is not
// finite for some row at some step (a scaled logit NaN or infinite, which
// libtorch and the host order differently, or top-k's ties reaching past
// what was ordered): nothing is returned and the caller samples the host
// way, from a new Start.
func (s *Stepper) ContinueSampled(n int, w Warpers, u [][]float64) (rows []Sampled, ok bool, err error) {
	logits := s.pending
	if logits == nil {
		return nil, false, fmt.Errorf("sample on the device: ContinueSampled without StartOnDevice")
	}
	s.pending = nil
	b := len(s.seqs)
	if n < 1 || n > s.maxLen-s.promptLen+1 {
		logits.MustDrop()
		return nil, false, fmt.Errorf("sample on the device: %d tokens: want 1 to the %d started for", n, s.maxLen-s.promptLen+1)
	}
	flat := make([]float64, 0, b*n)
	if len(u) != b {
		logits.MustDrop()
		return nil, false, fmt.Errorf("sample on the device: %d rows of draws for %d rows", len(u), b)
	}
	for r, ur := range u {
		if len(ur) != n {
			logits.MustDrop()
			return nil, false, fmt.Errorf("sample on the device: row %d has %d draws for %d tokens", r, len(ur), n)
		}
		flat = append(flat, ur...)
	}
	draws, err := model.TensorOf(flat, []int64{int64(b), int64(n)}, s.g.Device())
	if err != nil {
		logits.MustDrop()
		return nil, false, fmt.Errorf("sample on the device: %w", err)
	}
	var vals []float64 // row r: n tokens, then their log-probabilities
	var finite bool    // every step's rows had a finite guard
	torchx.NoGrad(func() {
		var toks, lps, guards []*ts.Tensor // guards: each step's rows' guards (warped's), summed ([1, 1])
		s.stepOnDevice(logits, n, false, func(step int, logits *ts.Tensor) *ts.Tensor {
			uc := draws.MustNarrow(1, int64(step), 1, false)
			tok, tokCol, lpCol, guard := sampleColumns(logits, uc, w)
			uc.MustDrop()
			toks, lps = append(toks, tokCol), append(lps, lpCol)
			guards = append(guards, guard.MustSumDimIntlist([]int64{0}, true, gotch.Double, true))
			return tok
		})
		vals = readColumns(append(toks, lps...))
		finite = allFinite(guards)
	})
	draws.MustDrop()
	if !finite {
		return nil, false, nil
	}
	rows = make([]Sampled, b)
	for r := range rows {
		row := vals[r*2*n : (r+1)*2*n]
		rows[r].IDs = make([]int32, n)
		for j, t := range row[:n] {
			rows[r].IDs[j] = int32(t)
		}
		rows[r].LogProbs = append([]float64(nil), row[n:]...)
	}
	// The cache holds every token but the last, as after a step loop.
	for r := range rows {
		for _, t := range rows[r].IDs[:n-1] {
			s.seqs[r] = append(s.seqs[r], int64(t))
		}
	}
	s.fed = len(s.seqs[0])
	return rows, true, nil
}

// expand is Reorder's expansion of every one of the b rows into per rows
// (row p to rows p·per … p·per+per−1), applied to the rows' logits too.
func (s *Stepper) expand(logits *ts.Tensor, b, per int) (*ts.Tensor, error) {
	src := make([]int, b*per)
	idx := make([]int64, b*per)
	for r := range src {
		src[r], idx[r] = r/per, int64(r/per)
	}
	if err := s.Reorder(src); err != nil {
		logits.MustDrop()
		return nil, err
	}
	it, err := model.TensorOf(idx, []int64{int64(len(idx))}, s.g.Device())
	if err != nil {
		logits.MustDrop()
		return nil, fmt.Errorf("sample on the device: %w", err)
	}
	defer it.MustDrop()
	return logits.MustIndexSelect(0, it, true), nil
}

// tieSlack is how many positions past the k-th top-k's candidates take
// when warped finds them without sorting the vocabulary: room for the
// tokens tied with the k-th value, which top-k keeps and which are many
// where logits are bfloat16. A row with more ties than that is flagged
// (warped's guard) and the caller makes the host's choice instead.
const tieSlack = 64

// warped applies the warpers, in extract's order (its candidatesOf, in
// float64), to each row of logits [R, V] on their device:
//
//  1. x = float64(logits) / T, ordered most likely first, lower id first
//     among equals (a stable descending sort; with top-k, the first
//     k+tieSlack of that order by topFirst, without sorting the row);
//  2. top-k: the sorted values at least the k-th;
//  3. e = exp(x − max) over those kept, p = e / Σe;
//  4. top-p: from the least likely end, every kept token but the first
//     whose tail sum (itself and all less likely) is <= 1 − P is dropped,
//     and p renormalized over the rest.
//
// It returns the candidates' probabilities in that order (0 where
// dropped; [R, C] float64, C the positions ordered: V, or k+tieSlack),
// their ids in that order, the position of the last candidate kept
// ([R, 1] int64; the candidates are a prefix) and a guard ([R, 1]
// float64) that a caller checks is finite: it is not where a row's
// values are not all finite (libtorch sorts NaN first where the host
// sorts it last, and topk may pass over a NaN) or where the ties at the
// k-th value may reach past the k+tieSlack positions ordered.
func warped(logits *ts.Tensor, w Warpers) (probs, order, last, guard *ts.Tensor) {
	c := logits.MustSize()[1]
	if k := int64(w.TopK); k > 0 && k+tieSlack < c {
		c = k + tieSlack
	}
	return warpedFirst(logits, w, c)
}

// warpedFirst is warped ordering the first c positions of each row: all
// of them (a sort) where c is V, else topFirst's c (c >= top-k's k).
func warpedFirst(logits *ts.Tensor, w Warpers, c int64) (probs, order, last, guard *ts.Tensor) {
	v := logits.MustSize()[1]
	scaled := logits.MustTotype(gotch.Double, false)
	if w.Temperature != 1 {
		scaled = scaled.MustDivScalar(ts.FloatScalar(w.Temperature), true)
	}
	k := int64(w.TopK)
	var sorted *ts.Tensor
	if c < v {
		sorted, order = topFirst(scaled, int(c))
		// Finite exactly where every value of the row is: a sum of finite
		// float64s of logits' range does not overflow.
		guard = scaled.MustSumDimIntlist([]int64{1}, true, gotch.Double, true)
	} else {
		sorted, order = scaled.MustSortStable(true, 1, true, true)
	}
	top := sorted.MustNarrow(1, 0, 1, false)
	probs = sorted.MustSub(top, false).MustExp(true)
	if guard == nil {
		guard = top // NaN sorts first, so the largest is finite only where all are
	} else {
		top.MustDrop()
	}
	var keep *ts.Tensor // which sorted positions are candidates; nil: all
	if k > 0 && k < v {
		kth := sorted.MustNarrow(1, k-1, 1, false)
		keep = sorted.MustGeTensor(kth, false)
		if c < v {
			// The last position ordered tied with the k-th: more ties may
			// lie past it.
			past := sorted.MustNarrow(1, c-1, 1, false).MustGeTensor(kth, true)
			guard = guard.MustMaskedFill(past, ts.FloatScalar(math.NaN()), true)
			past.MustDrop()
		}
		kth.MustDrop()
		probs = probs.MustMaskedFill(keep.MustLogicalNot(false), ts.FloatScalar(0), true)
	}
	sorted.MustDrop()
	probs = normalize(probs)
	if w.TopP < 1 {
		tail := probs.MustFlip([]int64{1}, false).MustCumsum(1, gotch.Double, true).MustFlip([]int64{1}, true)
		drop := tail.MustLe(ts.FloatScalar(1-w.TopP), true)
		first := drop.MustNarrow(1, 0, 1, false) // the most likely token always stays
		first.MustFill_(ts.IntScalar(0))
		first.MustDrop()
		probs = normalize(probs.MustMaskedFill(drop, ts.FloatScalar(0), true))
		kept := drop.MustLogicalNot(true)
		if keep != nil {
			kept = kept.MustLogicalAnd(keep, true)
			keep.MustDrop()
		}
		keep = kept
	}
	if keep == nil {
		last = ts.MustFull(guard.MustSize(), ts.IntScalar(c-1), gotch.Int64, guard.MustDevice())
	} else {
		// At least 0: a row with a NaN keeps none (its guard is NaN and the
		// caller discards it), and a gather at −1 would fail (on a GPU, a
		// device-side assert that ends the process's CUDA work).
		last = keep.MustSumDimIntlist([]int64{1}, true, gotch.Int64, true).MustSubScalar(ts.IntScalar(1), true).MustClampMin(ts.IntScalar(0), true)
	}
	return probs, order, last, guard
}

// sampleColumns draws one token for each row of logits [b, V] with the
// uniforms u [b, 1] (float64), on their device: the first of warped's
// candidates whose cumulative probability exceeds u, or the last kept
// where rounding leaves the sum at most u (extract's draw).
//
// It returns the tokens [b, 1] (int64, to feed the next step) and, as
// float64 columns for readColumns, the tokens, their log-probabilities
// under log_softmax(float64(logits)) (temperature 1, no warpers) and
// warped's guard, which the caller checks is finite.
func sampleColumns(logits, u *ts.Tensor, w Warpers) (tok, tokCol, lpCol, guard *ts.Tensor) {
	probs, order, last, guard := warped(logits, w)
	// The first position whose cumulative probability exceeds u is the
	// number of positions at most u.
	below := probs.MustCumsum(1, gotch.Double, true).MustLeTensor(u, true)
	pos := below.MustSumDimIntlist([]int64{1}, true, gotch.Int64, true).MustMinimum(last, true)
	last.MustDrop()
	tok = order.MustGather(1, pos, false, true)
	pos.MustDrop()
	lpCol = logits.MustLogSoftmax(1, gotch.Double, false).MustGather(1, tok, false, true)
	return tok, tok.MustTotype(gotch.Double, false), lpCol, guard
}

// warpedLogProbs is, for each row of logits [R, V], the natural log of
// the probability of targets[r] ([R, 1] int64) among warped's candidates
// (−Inf where they drop it), as a float64 column [R, 1]: Hayes et al.
// 2024's per-token factor of a sampled suffix's probability (extract's
// suffixLogProb). guard is warped's.
func warpedLogProbs(logits, targets *ts.Tensor, w Warpers) (lp, guard *ts.Tensor) {
	probs, order, last, guard := warped(logits, w)
	last.MustDrop()
	byID := ts.MustZeros(logits.MustSize(), gotch.Double, logits.MustDevice()).MustScatter(1, order, probs, true)
	probs.MustDrop()
	order.MustDrop()
	return byID.MustGather(1, targets, false, true).MustLog(true), guard
}

// normalize divides each row of p by its sum, taking ownership of p.
func normalize(p *ts.Tensor) *ts.Tensor {
	z := p.MustSumDimIntlist([]int64{1}, true, gotch.Double, false)
	defer z.MustDrop()
	return p.MustDiv(z, true)
}

// dropPending frees logits StartOnDevice kept that nothing took.
func (s *Stepper) dropPending() {
	if s.pending != nil {
		s.pending.MustDrop()
		s.pending = nil
	}
}
