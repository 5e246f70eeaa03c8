package train

// DP-SGD in the loop: a run with [train.dp] enabled takes this step instead
// of the plain one (step.go). Each step Poisson-samples rows of the
// training set (PoissonSample, keyed by (seed, step)), splits them over
// the ranks and each rank's workers, clips each row's gradient alone and
// sums (ClippedNoisedSum), adds the noise once per logical batch (rank 0
// alone, before the all-reduce of the sums, so the total noise is σ·C and
// not √ranks·σ·C), divides by the expected batch size q·N (Opacus's
// normalisation under Poisson sampling) and hands the result to AdamW.
// Gradient accumulation changes nothing here: every row already runs
// alone, so the micro-batch split of train.grad_accum is a memory bound
// the per-row passes never reach, and the clipped sum over the logical
// batch is the same bit for bit whatever train.grad_accum is; cut over
// more workers or ranks it is the same sum added in another order, equal
// to float rounding. The accountant records every step
// and travels in the checkpoint, so a resumed run reports the ε of the
// uninterrupted one; the draws are functions of (seed, step), so its
// weights are the uninterrupted one's too. With [train.lora] the rows run
// through each worker's adapters and only the adapters' gradients are
// clipped, summed and noised (dpGradient): DP-SGD over LoRA.

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/sugarme/gotch/ts"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/provenance"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/train/dpaccount"
)

// dpState is a DP-SGD run's resolved parameters and its privacy history.
type dpState struct {
	// q is the sampling rate, sigma the noise multiplier (from
	// noise_multiplier or found for target_epsilon), clip the clipping norm
	// C and delta the δ ε is reported at.
	q, sigma, clip, delta float64
	// n is N, the rows each step samples from (the training stream's epoch).
	n int64
	// acct is the steps taken so far, for ε.
	acct dpaccount.Accountant
	// randomMask is set when the goldfish mask is the random strategy's,
	// which depends on the row number dpRows gives it (dpMaskRows).
	randomMask bool
}

// dpMaskRows names the row number dpRows masks a sampled row by. A
// checkpoint records it: before 2bda819 the row was its epoch-0 position
// alone, and a run of the random strategy resumed across the change
// would mix the two masks (a compatibility probe's weights matched
// neither run).
const dpMaskRows = "step*N+position"

// DPReport is the checkpoint's "dp" entry: the run's privacy record so
// far (provenance.DPRecord, the schema summary.json and the tables share)
// and the accountant's history, from which a resumed run goes on.
type DPReport struct {
	provenance.DPRecord
	History dpaccount.Accountant `json:"accountant"`
	// MaskRows is dpMaskRows in a checkpoint written since it was
	// recorded, "" before.
	MaskRows string `json:"mask_rows,omitempty"`
}

// ReadDPReport is the DP-SGD report of a checkpoint's state, false when
// the run trained without DP-SGD.
func ReadDPReport(st checkpoint.State) (DPReport, bool, error) {
	if len(st.DP) == 0 {
		return DPReport{}, false, nil
	}
	var r DPReport
	if err := json.Unmarshal(st.DP, &r); err != nil {
		return DPReport{}, false, fmt.Errorf("checkpoint's dp entry: %w", err)
	}
	return r, true, nil
}

// checkDPWith refuses DP-SGD with the training settings its step cannot
// keep: a sharded training state (the DP step sums per-row gradients on
// whole replicas and noises the sum once, which the sharded strategies'
// reduce-scatters and gathered weights do not do), activation
// checkpointing, and the equal-supervised-tokens control.
func (c Config) checkDPWith() error {
	if c.DP.Enabled && c.sharded() {
		return fmt.Errorf("train.dp.enabled = true with train.shard = %q: DP-SGD needs train.shard = \"none\" (each rank clips its rows on the whole model and the noise is added once to the summed gradients; the sharded strategies do not keep that)", c.Shard)
	}
	if c.DP.Enabled && c.ActivationCheckpointing {
		return fmt.Errorf("train.activation_checkpointing = true with train.dp.enabled = true: DP-SGD's per-row passes do not recompute blocks; set one of them false")
	}
	if c.DP.Enabled && c.MatchSupervisedTokens > 0 {
		// The control stops the stream where goldfish k's supervised
		// targets run out; Poisson sampling draws from the whole training
		// set every step, so that point in the stream is never reached
		// and the run was only a shorter one.
		return fmt.Errorf("train.match_supervised_tokens = %d with train.dp.enabled = true: DP-SGD samples every step from the whole training set, not the stream in order, so the cut at goldfish k = %d's supervised-token count never applies; set train.steps for a shorter run instead", c.MatchSupervisedTokens, c.MatchSupervisedTokens)
	}
	return nil
}

// setupDP resolves [train.dp] once the stream's size N and the run's
// length are known: q (batch_size / N unless given), σ (NoiseFor the
// target ε over the run's steps unless given), and the δ < 1/N check.
func (l *loop) setupDP() error {
	c := l.cfg.DP
	if !c.Enabled {
		return nil
	}
	if err := l.cfg.checkDPWith(); err != nil {
		return err
	}
	n := int64(l.stream.perEpoch)
	if c.Delta >= 1/float64(n) {
		return badinput.Errorf("train.dp.delta = %v: must be below 1/N = %v for the N = %d training rows", c.Delta, 1/float64(n), n)
	}
	q := c.SampleRate
	if q == 0 {
		q = math.Min(1, float64(l.cfg.BatchSize)/float64(n))
	}
	sigma := c.NoiseMultiplier
	if c.TargetEpsilon > 0 {
		s, err := dpaccount.NoiseFor(c.TargetEpsilon, q, int64(l.total), c.Delta)
		if err != nil {
			return badinput.Errorf("train.dp.target_epsilon = %v: %w", c.TargetEpsilon, err)
		}
		sigma = s
	}
	l.dp = &dpState{q: q, sigma: sigma, clip: c.MaxGradNorm, delta: c.Delta, n: n}
	if l.rank == 0 {
		eps := math.Inf(1)
		if sigma > 0 {
			e, err := dpaccount.EpsilonOf(q, sigma, int64(l.total), c.Delta)
			if err != nil {
				return fmt.Errorf("train.dp: %w", err)
			}
			eps = e
		}
		if sigma == 0 {
			slog.Warn("train: DP-SGD with train.dp.noise_multiplier = 0 and no train.dp.target_epsilon clips each row's gradient but adds no noise: ε = ∞, no privacy; set one of them for a private run")
		}
		slog.Info("train: DP-SGD", "sample_rate", q, "noise_multiplier", sigma, "max_grad_norm", c.MaxGradNorm,
			"delta", c.Delta, "rows", n, "expected_batch", q*float64(n), "steps", l.total, "epsilon_at_end", eps)
	}
	return nil
}

// report is the run's DP-SGD report so far.
func (d *dpState) report() (DPReport, error) {
	eps, err := d.acct.Epsilon(d.delta)
	if err != nil {
		return DPReport{}, fmt.Errorf("DP-SGD accountant: %w", err)
	}
	r := DPReport{DPRecord: provenance.DPRecord{Delta: d.delta, NoiseMultiplier: d.sigma, SampleRate: d.q, MaxGradNorm: d.clip,
		Steps: d.acct.Steps(), Rows: d.n}, History: d.acct, MaskRows: dpMaskRows}
	r.SetEps(eps)
	return r, nil
}

// dpCheckpoint is the checkpoint's dp entry (nil without DP-SGD).
func (l *loop) dpCheckpoint() (json.RawMessage, error) {
	if l.dp == nil {
		return nil, nil
	}
	r, err := l.dp.report()
	if err != nil {
		return nil, err
	}
	return json.Marshal(r)
}

// dpResume takes the accountant from the checkpoint a run resumes from. A
// checkpoint without one, or with another q or σ, is another run's.
func (l *loop) dpResume(st checkpoint.State) error {
	r, ok, err := ReadDPReport(st)
	if err != nil {
		return err
	}
	switch {
	case l.dp == nil && !ok:
		return nil
	case l.dp == nil:
		return badinput.Errorf("the checkpoint at step %d was trained with DP-SGD and this run has train.dp off: use a new run directory or train.no_resume = true", st.Step)
	case !ok:
		return badinput.Errorf("the checkpoint at step %d was trained without DP-SGD and this run has train.dp on: use a new run directory or train.no_resume = true", st.Step)
	case r.SampleRate != l.dp.q || r.NoiseMultiplier != l.dp.sigma || r.MaxGradNorm != l.dp.clip || r.History.Steps() != int64(st.Step):
		return badinput.Errorf("the checkpoint at step %d was trained with DP-SGD q = %v, σ = %v, C = %v over %d accounted steps; this run has q = %v, σ = %v, C = %v: use a new run directory or train.no_resume = true",
			st.Step, r.SampleRate, r.NoiseMultiplier, r.MaxGradNorm, r.History.Steps(), l.dp.q, l.dp.sigma, l.dp.clip)
	case l.dp.randomMask && r.MaskRows != dpMaskRows:
		return badinput.Errorf("the checkpoint at step %d was trained with DP-SGD and the random goldfish mask by a memo that masked each sampled row by its epoch-0 position; this memo masks it by %s, so the run would change masks midway: finish it with the memo that started it, or train afresh in a new run directory (another --runs, or move this one aside)", st.Step, dpMaskRows)
	}
	l.dp.acct = r.History
	return nil
}

// dpStep is one DP-SGD optimizer step (see the file's comment).
func (l *loop) dpStep() (Metric, error) {
	d, cfg := l.dp, l.cfg
	step := int64(l.step)
	idx, err := PoissonSample(d.n, d.q, cfg.Seed, step)
	if err != nil {
		return Metric{}, err
	}
	lo, hi := split(len(idx), l.size, l.rank)
	rows, err := l.dpRows(step, idx[lo:hi])
	if err != nil {
		return Metric{}, err
	}
	l.pos += int64(cfg.BatchSize) // the expected rows a step, for the checkpoint's count
	t0 := time.Now()
	gs, st, err := dpGradient(l.work, l.lora, l.opt.params, rows, l.block, d, cfg.Seed, step, l.rank == 0)
	if err != nil {
		return Metric{}, err
	}
	defer dropAll(gs)
	t1 := time.Now()
	l.tModel += t1.Sub(t0)
	defer func() { l.tOpt += time.Since(t1) }()
	if l.group != nil && l.size > 1 {
		if err := l.group.AllReduceSum(gs); err != nil {
			return Metric{}, fmt.Errorf("all-reduce DP-SGD gradients: %w", err)
		}
	}
	sums, err := l.sumOverRanks(st.sums)
	if err != nil {
		return Metric{}, err
	}
	lr := cfg.lrAt(l.step+1, l.total)
	// train.clip after the noise is post-processing: it spends no privacy.
	gn := clipGrads(gs, cfg.Clip)
	l.opt.update(gs, lr)
	d.acct.Step(d.q, d.sigma)
	slog.Debug("DP-SGD step", "step", l.step+1, "rows", st.Rows, "clipped", st.Clipped, "mean_row_norm", st.MeanNorm)
	return Metric{
		Step:        int64(l.step + 1),
		LossKept:    ratio(sums.kept, sums.allN-sums.droppedN),
		LossAll:     ratio(sums.allCE, sums.allN),
		LossDropped: ratio(sums.droppedCE, sums.droppedN),
		LR:          lr,
		GradNorm:    gn,
	}, nil
}

// dpRows reads the training rows at epoch-0 stream positions idx (each
// row of the training set once: an epoch is a permutation of it) for
// step and masks each. The hashed and static masks look at the tokens
// alone; the random strategy's depends on the row number, which the plain
// loop advances by an epoch each pass, so that a row draws a fresh mask
// each time it is trained. Poisson sampling has no passes: the row number
// is step·N + position, a fresh mask each step a row is drawn (with the
// epoch-0 position alone every row kept one mask for the whole run).
func (l *loop) dpRows(step int64, idx []int64) ([]DPRow, error) {
	out := make([]DPRow, len(idx))
	for i, pos := range idx {
		rs, err := l.stream.take(pos, 1)
		if err != nil {
			return nil, err
		}
		dropped := make([]bool, l.block)
		row := uint64(step)*uint64(l.dp.n) + uint64(pos)
		if err := loss.MaskBatch(l.masker, row, [][]int32{rs[0][1 : l.block+1]}, dropped); err != nil {
			return nil, err
		}
		out[i] = DPRow{IDs: rs[0], Dropped: dropped}
	}
	return out, nil
}

// dpGradient is this rank's part of a DP-SGD step's gradient: its rows'
// clipped gradients summed (each worker sums a contiguous part on its
// replica, added in worker order), plus the noise N(0, σ²C²) when noise is
// set (rank 0), all divided by q·N. One tensor per parameter of params,
// owned by the caller. With LoRA (lora: one adapter set per worker) each
// worker's rows run through its own adapters and only they are clipped
// and summed: a row's gradient is its adapters' gradient, the base being
// frozen, so C bounds what one row can move the adapters by, which is all
// the run releases (with the base it trained on, public before the run).
func dpGradient(work *workers, lora []*model.LoRA, params []model.Param, rows []DPRow, block int, d *dpState, seed, step int64, noise bool) ([]*ts.Tensor, DPStats, error) {
	k := min(work.n(), max(len(rows), 1))
	sums := make([][]*ts.Tensor, k)
	stats := make([]DPStats, k)
	errs := make([]error, k)
	work.run(func(w int, g *model.GPT) {
		if w >= k {
			return
		}
		a, b := split(len(rows), k, w)
		var m RowModel = g
		ps := replicaParams(g, params)
		if len(lora) > 0 {
			m, ps = lora[w], lora[w].Params()
		}
		sums[w], stats[w], errs[w] = ClippedNoisedSum(m, ps, rows[a:b], block, d.clip, 0, seed, step)
	})
	var st DPStats
	for w := range k {
		if errs[w] != nil {
			for _, s := range sums {
				dropAll(s)
			}
			return nil, st, errs[w]
		}
	}
	out := sums[0]
	torchx.NoGrad(func() {
		for w := 1; w < k; w++ {
			for i, s := range sums[w] {
				torchx.Add_(out[i], s)
			}
			dropAll(sums[w])
		}
	})
	var norms float64
	for _, s := range stats {
		st.Rows += s.Rows
		st.Clipped += s.Clipped
		norms += s.MeanNorm * float64(s.Rows)
		st.sums.add(s.sums)
	}
	if st.Rows > 0 {
		st.MeanNorm = norms / float64(st.Rows)
	}
	if noise && d.sigma > 0 {
		if err := addNoise(out, d.sigma*d.clip, stepRNG(seed, step, dpStreamNoise), params[0].Tensor.MustDevice()); err != nil {
			dropAll(out)
			return nil, st, err
		}
	}
	inv := 1 / (d.q * float64(d.n))
	torchx.NoGrad(func() {
		for _, s := range out {
			s.MustMulScalar_(ts.FloatScalar(inv))
		}
	})
	return out, st, nil
}

// replicaParams is params as replica g holds them, matched by name:
// worker 0's replica is the model itself, the others hold their own
// tensors over the same storage.
func replicaParams(g *model.GPT, params []model.Param) []model.Param {
	byName := map[string]model.Param{}
	for _, p := range g.Params() {
		byName[p.Name] = p
	}
	out := make([]model.Param, len(params))
	for i, p := range params {
		out[i] = byName[p.Name]
	}
	return out
}
