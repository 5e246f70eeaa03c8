package train

// One optimizer step: this rank's share of each micro-batch of the global
// batch read and masked (readShares), each share's forward and backward
// (microStep), the gradients reduced, clipped and applied, each as the
// run's strategy does it (strategy.go).

import (
	"fmt"
	"math"
	"time"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch/ts"
)

// trainStep runs one optimizer step over the next global batch: the one
// loop of every strategy (strategy.go), which holds the weights, reduces,
// clips and applies the gradients.
func (l *loop) trainStep() (Metric, error) {
	if l.dp != nil {
		return l.dpStep() // DP-SGD's own step (dpstep.go)
	}
	cfg := l.cfg
	shares, nKept, err := l.readShares()
	if err != nil {
		return Metric{}, err
	}
	l.pos += int64(cfg.BatchSize)
	l.strat.zeroGrads()

	l.phases.mark(0)
	t0 := time.Now()
	parts := make([][]workerLoss, 0, len(shares))
	defer func() { dropStats(parts) }()
	for a, sh := range shares {
		res, err := l.microStep(sh, nKept[a], cfg.GradAccum)
		parts = append(parts, res)
		if err != nil {
			return Metric{}, err
		}
		if a+1 < cfg.GradAccum {
			torchx.Collect() // between micro-batches: no libtorch call in flight
		}
	}
	// The step's one read of its losses, after the last backward pass was
	// launched: no micro-batch waits for its forward pass to end on the
	// host before its backward pass starts.
	sums, err := stepSums(parts, nKept)
	if err != nil {
		return Metric{}, err
	}
	l.phases.mark(1)
	t1 := time.Now()
	l.tModel += t1.Sub(t0)
	defer func() { l.tOpt += time.Since(t1) }()
	if sums, err = l.sumOverRanks(sums); err != nil {
		return Metric{}, err
	}
	if err := l.strat.reduce(); err != nil {
		return Metric{}, err
	}
	lr := cfg.lrAt(l.step+1, l.total)
	gn, err := l.strat.clip(cfg.Clip)
	if err != nil {
		return Metric{}, err
	}
	if err := l.strat.update(lr); err != nil {
		return Metric{}, err
	}
	l.phases.mark(2)
	return l.metric(sums, lr, gn), nil
}

// sumOverRanks is the global batch's loss statistics: each rank's share is
// already normalised by the global kept count, so they add.
func (l *loop) sumOverRanks(sums lossSums) (lossSums, error) {
	if l.group == nil || l.size < 2 {
		return sums, nil
	}
	st := ts.MustOfSlice(sums.vector())
	defer st.MustDrop()
	if err := l.group.AllReduceSum([]*ts.Tensor{st}); err != nil {
		return sums, fmt.Errorf("all-reduce losses: %w", err)
	}
	return lossSumsOf(st.Float64Values()), nil
}

// metric is the step's row of metrics from its loss statistics.
func (l *loop) metric(sums lossSums, lr, gradNorm float64) Metric {
	return Metric{
		Step:        int64(l.step + 1),
		LossKept:    sums.kept / float64(l.cfg.GradAccum),
		LossAll:     ratio(sums.allCE, sums.allN),
		LossDropped: ratio(sums.droppedCE, sums.droppedN),
		LR:          lr,
		GradNorm:    gradNorm,
	}
}

// lossSums are a step's loss statistics as sums, so that micro-batches
// (add) and ranks (AllReduceSum of vector) combine by adding; the step's
// metrics are ratios of them.
type lossSums struct {
	// kept is the goldfish loss: each micro-batch's CE over its kept
	// targets / the global micro-batch's kept count (this rank's part of
	// it), summed over micro-batches. LossKept is kept / grad_accum.
	kept float64
	// allCE and allN are the CE summed over every non-padding target,
	// kept or dropped, and their count: LossAll = allCE / allN.
	allCE, allN float64
	// droppedCE and droppedN are the CE summed over the targets the
	// goldfish mask dropped, and their count: LossDropped.
	droppedCE, droppedN float64
}

// add accumulates o into s, field by field.
func (s *lossSums) add(o lossSums) {
	s.kept += o.kept
	s.allCE += o.allCE
	s.allN += o.allN
	s.droppedCE += o.droppedCE
	s.droppedN += o.droppedN
}

// vector is s as the five float64s ranks all-reduce (lossSumsOf reads them back).
func (s lossSums) vector() []float64 {
	return []float64{s.kept, s.allCE, s.allN, s.droppedCE, s.droppedN}
}

// lossSumsOf is the inverse of vector.
func lossSumsOf(v []float64) lossSums {
	return lossSums{kept: v[0], allCE: v[1], allN: v[2], droppedCE: v[3], droppedN: v[4]}
}

// ratio is a / b, NaN when b is 0 (no targets of that kind).
func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// share is this rank's rows of one global micro-batch with their goldfish
// mask (block decisions a row) and how many targets the mask keeps.
type share struct {
	rows    [][]int32
	dropped []bool
	kept    int64
}

// readShares reads this rank's share of each micro-batch of the global batch
// at l.pos and masks it, and returns with it each global micro-batch's
// kept-target count. Micro-batch a is the same rows for every world size
// (those one process would take: stream rows [a*gm, (a+1)*gm) of the
// batch); rank r reads only its contiguous micro rows of it, from r*micro,
// and never the other ranks'. Masks are keyed by stream position, so a
// share is masked as the whole micro-batch would be. The global counts are
// the sum of the ranks' local ones (one all-reduce of grad_accum integers
// before any backward, exact), so every rank scales its loss as one process
// would.
func (l *loop) readShares() ([]share, []int64, error) {
	accum := l.cfg.GradAccum
	gm := l.cfg.BatchSize / accum
	micro := gm / l.size
	shares := make([]share, accum)
	nKept := make([]int64, accum)
	for a := range shares {
		pos := l.pos + int64(a*gm+l.rank*micro)
		rows, err := l.stream.take(pos, micro)
		if err != nil {
			return nil, nil, err
		}
		targets := make([][]int32, len(rows))
		for i, r := range rows {
			targets[i] = r[1 : l.block+1]
		}
		dropped := make([]bool, len(rows)*l.block)
		if err := loss.MaskBatch(l.masker, uint64(pos), targets, dropped); err != nil {
			return nil, nil, err
		}
		sh := share{rows: rows, dropped: dropped, kept: countTargets(rows, dropped, l.block).kept}
		shares[a], nKept[a] = sh, sh.kept
	}
	if l.group != nil && l.size > 1 {
		t := ts.MustOfSlice(nKept)
		defer t.MustDrop()
		if err := l.group.AllReduceSum([]*ts.Tensor{t}); err != nil {
			return nil, nil, fmt.Errorf("all-reduce kept-target counts: %w", err)
		}
		copy(nKept, t.Int64Values())
	}
	return shares, nKept, nil
}

// microStep runs forward and backward on this rank's share of a global
// micro-batch, with the weights where the strategy keeps them. The loss is
// the goldfish loss of the whole global micro-batch (CE summed over its
// kept targets / nKept, their number over all ranks' rows, so that hash
// masks, which keep different numbers of targets per row, give every world
// size the same loss), divided by accum so that accumulated gradients
// average the micro-batches. It returns each part's loss statistics, still
// on the device (stepSums reads them).
func (l *loop) microStep(sh share, nKept int64, accum int) ([]workerLoss, error) {
	res, err := l.strat.forwardBackward(sh.rows, sh.dropped, func(logits, tgt, dt *ts.Tensor, n targetCounts) workerLoss {
		return lossBackward(logits, tgt, dt, n, nKept, accum)
	})
	if err != nil {
		return res, err
	}
	for _, r := range res {
		if r.err != nil {
			return res, r.err
		}
	}
	return res, nil
}

// stepSums reads every part's statistics of the step's micro-batches
// (parts[a]: micro-batch a's) in one transfer, and adds them into the
// step's loss statistics: micro-batch a's kept loss is over its global
// nKept[a] targets.
func stepSums(parts [][]workerLoss, nKept []int64) (lossSums, error) {
	var all []*ts.Tensor
	for a, res := range parts {
		for w, r := range res {
			if r.stats == nil {
				return lossSums{}, fmt.Errorf("micro-batch %d, part %d: no loss statistics", a, w)
			}
			all = append(all, r.stats)
		}
	}
	var sums lossSums
	if len(all) == 0 {
		return sums, nil
	}
	cat := ts.MustCat(all, 0)
	values := cat.Float64Values()
	cat.MustDrop()
	for a, res := range parts {
		var share lossSums
		for _, r := range res {
			share.add(r.partStats(values[:3]).sums())
			values = values[3:]
		}
		share.kept /= float64(max(nKept[a], 1))
		// Non-finite here means this rank's share blew up (the sum over ranks
		// would be non-finite too).
		if math.IsNaN(share.kept) || math.IsInf(share.kept, 0) {
			return sums, fmt.Errorf("loss is %v", share.kept)
		}
		sums.add(share)
	}
	return sums, nil
}

// dropStats frees the parts' statistics tensors.
func dropStats(parts [][]workerLoss) {
	for _, res := range parts {
		for _, r := range res {
			if r.stats != nil {
				r.stats.MustDrop()
			}
		}
	}
}

// partStats are one part's loss statistics on the host: its target counts,
// its kept loss (the mean over its kept targets, 0 when it has none) and
// the mean CE over every non-padding target and over the dropped ones
// (NaN over none).
type partStats struct {
	targetCounts
	keptMean, allMean, droppedMean float64
}

// sums is p as lossSums: the kept CE as a sum over p's kept targets (the
// caller divides by the global count), the CE sums and counts over all
// and over dropped targets.
func (p partStats) sums() lossSums {
	var s lossSums
	s.kept = p.keptMean * float64(p.kept)
	if n := float64(p.kept + p.dropped); n > 0 {
		s.allCE, s.allN = p.allMean*n, n
	}
	if p.dropped > 0 {
		s.droppedCE, s.droppedN = p.droppedMean*float64(p.dropped), float64(p.dropped)
	}
	return s
}

// workerLoss is one part's goldfish loss as the backward pass leaves it:
// its statistics on the device (goldfishLoss.stats), read with every other
// part's by stepSums.
type workerLoss struct {
	goldfishLoss
	err error
}

// lossBackward is the goldfish loss of logits against tgt with the dropped
// targets dt (n: their counts, from the host), and the backward pass of
// this share's part of it: its kept-CE sum / nKept (the whole
// micro-batch's kept count) / accum. It reads nothing from the device.
func lossBackward(logits, tgt, dt *ts.Tensor, n targetCounts, nKept int64, accum int) workerLoss {
	scale := float64(n.kept) / float64(max(nKept, 1)) / float64(accum)
	return termsBackward(logits, tgt, dt, n, func(kept *ts.Tensor) error {
		scaled := kept.MustMulScalar(ts.FloatScalar(scale), false)
		defer scaled.MustDrop()
		return scaled.Backward()
	})
}

// termsBackward is the goldfish loss's terms of logits against tgt with
// the dropped targets dt (n: their counts), with backward run on the
// differentiable kept mean; it keeps the detached statistics.
func termsBackward(logits, tgt, dt *ts.Tensor, n targetCounts, backward func(kept *ts.Tensor) error) (out workerLoss) {
	gl, err := goldfishTerms(logits, tgt, dt, PadID, &n)
	if err != nil {
		out.err = fmt.Errorf("masked cross-entropy: %w", err)
		return out
	}
	defer gl.kept.MustDrop()
	out.goldfishLoss = goldfishLoss{stats: gl.stats, n: gl.n} // kept is dropped on return
	if err := backward(gl.kept); err != nil {
		out.err = fmt.Errorf("backward: %w", err)
	}
	return out
}

// paramTensors lists the parameters' tensors.
func paramTensors(params []model.Param) []*ts.Tensor {
	out := make([]*ts.Tensor, len(params))
	for i, p := range params {
		out[i] = p.Tensor
	}
	return out
}
