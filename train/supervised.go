package train

import (
	"fmt"

	"github.com/memo-research/memo/loss"
)

// The equal-supervised-tokens control (Hans et al. 2024, arXiv 2406.10209,
// compare goldfish against a standard-loss model trained on as many
// supervised tokens): a standard-loss run with train.match_supervised_tokens
// = K trains on the same stream, in the same order, and stops at the exact
// target where it has supervised as many targets as the goldfish loss with
// k = K (the run's [goldfish] strategy, h, start and seed) supervises over
// the run's full length. The run is shortened to the step holding that
// target (the learning-rate schedule spans the shortened run); the targets
// of that step past the cut are left out of the loss like dropped ones.

// matchedLength is the budget (targets the goldfish loss with cmp keeps
// over total steps of batch rows) and where a standard run reaches it:
// cut is the stream row holding the last supervised target and pos that
// target's index in the row; steps the steps up to and including that row.
type matchedLength struct {
	budget int64
	cut    int64
	pos    int
	steps  int
}

// matchSupervised computes matchedLength by masking the whole run's rows
// with cmp exactly as a goldfish run would (rows keyed by stream position),
// then counting the standard run's supervised targets, which are all
// non-pad targets, in stream order up to the budget.
func matchSupervised(st *stream, cmp loss.Masker, total, batch, block int) (matchedLength, error) {
	var m matchedLength
	dropped := make([]bool, batch*block)
	for step := 0; step < total; step++ {
		pos := int64(step) * int64(batch)
		rows, err := st.take(pos, batch)
		if err != nil {
			return m, err
		}
		targets := make([][]int32, len(rows))
		for i, r := range rows {
			targets[i] = r[1 : block+1]
		}
		if err := loss.MaskBatch(cmp, uint64(pos), targets, dropped); err != nil {
			return m, err
		}
		for i, t := range targets {
			for j, id := range t {
				if id != PadID && !dropped[i*block+j] {
					m.budget++
				}
			}
		}
	}
	if m.budget == 0 {
		return m, fmt.Errorf("train.match_supervised_tokens: the goldfish loss supervises no target in this run")
	}
	var seen int64
	for row := int64(0); ; row++ {
		rows, err := st.take(row, 1)
		if err != nil {
			return m, err
		}
		for j, id := range rows[0][1 : block+1] {
			if id == PadID {
				continue
			}
			if seen++; seen == m.budget {
				m.cut, m.pos = row, j
				m.steps = int(row/int64(batch)) + 1
				return m, nil
			}
		}
	}
}

// budgetMasker is the standard run's mask under a budget: inner's
// decisions, and every target after (cut, pos) dropped.
type budgetMasker struct {
	inner loss.Masker
	cut   int64
	pos   int
}

func (b budgetMasker) Mask(targets []int32, dropped []bool) {
	panic("train: budgetMasker needs stream positions (loss.MaskBatch passes them)")
}

func (b budgetMasker) MaskRow(row uint64, targets []int32, dropped []bool) {
	if rm, ok := b.inner.(loss.RowMasker); ok {
		rm.MaskRow(row, targets, dropped)
	} else {
		b.inner.Mask(targets, dropped)
	}
	switch {
	case int64(row) > b.cut:
		for i := range targets {
			dropped[i] = true
		}
	case int64(row) == b.cut:
		for i := b.pos + 1; i < len(targets); i++ {
			dropped[i] = true
		}
	}
}

// matchedRun applies cfg.MatchSupervisedTokens to a standard-loss run of
// total steps: the shortened length and the masker that cuts at the
// budget. It refuses a run that is not standard-loss or names no mask.
func matchedRun(cfg Config, lcfg loss.Config, st *stream, masker loss.Masker, total, block int) (int, loss.Masker, matchedLength, error) {
	k := cfg.MatchSupervisedTokens
	if lcfg.Enabled() {
		return 0, nil, matchedLength{}, fmt.Errorf("train.match_supervised_tokens = %d: needs goldfish.k = 0 (a standard-loss run to shorten); this run trains with goldfish.k = %d", k, lcfg.K)
	}
	cmp := lcfg
	cmp.K = k
	if cmp.Strategy == loss.StrategyNone || cmp.Strategy == "" {
		return 0, nil, matchedLength{}, fmt.Errorf("train.match_supervised_tokens = %d: goldfish.strategy = %q: name the goldfish mask whose supervised targets to match (e.g. \"hash-table\")", k, cmp.Strategy)
	}
	cm, err := loss.New(cmp)
	if err != nil {
		return 0, nil, matchedLength{}, fmt.Errorf("train.match_supervised_tokens = %d: %w", k, err)
	}
	m, err := matchSupervised(st, cm, total, cfg.BatchSize, block)
	if err != nil {
		return 0, nil, matchedLength{}, err
	}
	return m.steps, budgetMasker{inner: masker, cut: m.cut, pos: m.pos}, m, nil
}
