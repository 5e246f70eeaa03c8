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

	var sums lossSums
	l.phases.mark(0)
	t0 := time.Now()
	for a, sh := range shares {
		ms, err := l.microStep(sh, nKept[a], cfg.GradAccum)
		if err != nil {
			return Metric{}, err
		}
		sums.add(ms)
		if a+1 < cfg.GradAccum {
			torchx.Collect() // between micro-batches: no libtorch call in flight
		}
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
		sh := share{rows: rows, dropped: dropped}
		for i, t := range targets {
			for j, id := range t {
				if id != PadID && !dropped[i*l.block+j] {
					sh.kept++
				}
			}
		}
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
// average the micro-batches. It returns this rank's part of the kept loss,
// and the CE sum and count over its targets and over its dropped ones
// (lossSums).
func (l *loop) microStep(sh share, nKept int64, accum int) (lossSums, error) {
	res, err := l.strat.forwardBackward(sh.rows, sh.dropped, func(logits, tgt, dt *ts.Tensor) workerLoss {
		return lossBackward(logits, tgt, dt, nKept, accum)
	})
	if err != nil {
		return lossSums{}, err
	}
	return shareSums(res, nKept)
}

// shareSums adds the workers' results of one share into its loss
// statistics: the kept loss over the global micro-batch's nKept targets,
// the CE sums and counts over all and over dropped targets.
func shareSums(res []workerLoss, nKept int64) (lossSums, error) {
	var out lossSums
	for _, r := range res {
		if r.err != nil {
			return out, r.err
		}
		out.kept += r.keptSum
		nAll := float64(r.NKept + r.NDropped)
		if nAll > 0 {
			out.allCE += r.All * nAll
			out.allN += nAll
		}
		if r.NDropped > 0 {
			out.droppedCE += r.Dropped * float64(r.NDropped)
			out.droppedN += float64(r.NDropped)
		}
	}
	out.kept /= float64(max(nKept, 1))
	// Non-finite here means this rank's share blew up (the sum over ranks
	// would be non-finite too).
	if math.IsNaN(out.kept) || math.IsInf(out.kept, 0) {
		return out, fmt.Errorf("loss is %v", out.kept)
	}
	return out, nil
}

type workerLoss struct {
	Losses
	keptSum float64 // CE summed over this worker's kept targets
	err     error
}

// lossBackward is the goldfish loss of logits against tgt with the dropped
// targets dt, and the backward pass of this share's part of it:
// its kept-CE sum / nKept (the whole micro-batch's kept count) / accum.
func lossBackward(logits, tgt, dt *ts.Tensor, nKept int64, accum int) (out workerLoss) {
	ls, err := MaskedCrossEntropy(logits, tgt, dt, PadID)
	if err != nil {
		out.err = err
		return out
	}
	defer ls.Kept.MustDrop()
	out.Losses = ls
	kept := ls.Kept.MustDetach(false)
	out.keptSum = kept.Float64Values()[0] * float64(ls.NKept)
	kept.MustDrop()
	scale := float64(ls.NKept) / float64(max(nKept, 1)) / float64(accum)
	scaled := ls.Kept.MustMulScalar(ts.FloatScalar(scale), false)
	defer scaled.MustDrop()
	if err := scaled.Backward(); err != nil {
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
