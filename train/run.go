// Package train is memo's training loop: AdamW with warm-up and cosine
// decay, gradient clipping and accumulation, the goldfish loss, validation,
// metrics, checkpoints (in package checkpoint's format), exact resume and
// data-parallel training through a Group.
package train

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"time"
	"unsafe"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/progress"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"
)

// Source supplies training and validation rows; *data.Dataset satisfies it.
// Rows have block+1 ids (inputs row[:block], targets row[1:]); PadID (-1)
// marks padding, whose targets are ignored.
type Source interface {
	TrainRows(block int, seed int64) ([][]int32, error)
	ValRows(block int) ([][]int32, error)
}

// Group is a data-parallel process group (package dist implements it).
// Every rank takes its share of each global micro-batch, scales its loss by
// the global batch's kept-target count and the gradients are summed with
// AllReduceSum, so N ranks compute what one process would; only rank 0
// reads checkpoints and writes files.
type Group interface {
	Rank() int
	Size() int
	AllReduceSum(t []*ts.Tensor) error
	Broadcast(t []*ts.Tensor, root int) error
}

// Options are the loop's non-config knobs.
type Options struct {
	// Group is the process group; nil trains in this process alone.
	Group Group
	// Progress shows a progress bar (a terminal) or periodic log lines.
	Progress bool
	// StopAfter, when > 0, returns after that many optimizer steps of this
	// call as if the process had been killed: no final checkpoint, metrics
	// only as last written. Tests of resume use it.
	StopAfter int
	// OnStep, when set, is called after each optimizer step with its
	// metrics (tests use it to watch memory).
	OnStep func(Metric)
}

// PadID marks padding in rows; targets equal to it are ignored.
const PadID = -1

// Run trains mcfg on src into runDir (checkpoints/, metrics.arrow). When
// runDir already holds a checkpoint of the same model, Run resumes from the
// newest good one and ends with the weights an uninterrupted run would have.
func Run(ctx context.Context, cfg Config, mcfg model.Config, lcfg loss.Config, src Source, runDir string, opts Options) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	mc, err := mcfg.Resolve()
	if err != nil {
		return err
	}
	masker, err := loss.New(lcfg)
	if err != nil {
		return err
	}
	block := cfg.Block
	if block == 0 {
		block = mc.Context
	}
	if block > mc.Context {
		return fmt.Errorf("train.block = %d: must be <= model.context = %d", block, mc.Context)
	}
	rank, size := 0, 1
	if opts.Group != nil {
		rank, size = opts.Group.Rank(), opts.Group.Size()
	}
	if cfg.BatchSize%(size*cfg.GradAccum) != 0 {
		return fmt.Errorf("train.batch_size = %d: must be a multiple of %d processes × train.grad_accum = %d", cfg.BatchSize, size, cfg.GradAccum)
	}
	// libtorch keeps grad mode (and OpenMP's thread count) per OS thread:
	// the whole loop runs on one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	torchx.Init(cfg.Threads, uint64(cfg.Seed))
	if rank == 0 {
		if err := os.MkdirAll(runDir, 0o755); err != nil {
			return err
		}
	}

	stream, err := newStream(src, block, cfg.Seed)
	if err != nil {
		return err
	}
	total := cfg.Steps
	if total == 0 {
		total = int(math.Ceil(cfg.Epochs * float64(stream.perEpoch) / float64(cfg.BatchSize)))
	}
	if cfg.MatchSupervisedTokens > 0 {
		full := total
		var m matchedLength
		if total, masker, m, err = matchedRun(cfg, lcfg, stream, masker, total, block); err != nil {
			return err
		}
		if rank == 0 {
			slog.Info("train: equal-supervised-tokens control", "goldfish_k", cfg.MatchSupervisedTokens,
				"supervised_targets", m.budget, "steps", total, "of", full, "last_row", m.cut, "last_target", m.pos)
		}
	}

	dev, err := torchx.ResolveDevice(cfg.Device)
	if err != nil {
		return err
	}
	vs := nn.NewVarStore(dev)
	g, err := model.New(vs.Root(), mc)
	if err != nil {
		return err
	}
	opt := newAdamW(g.Params(), cfg)
	l := &loop{cfg: cfg, g: g, opt: opt, masker: masker, stream: stream, block: block, total: total,
		rank: rank, size: size, group: opts.Group, runDir: runDir}
	// With several ranks only rank 0 reads the run directory; syncStart
	// hands its state to the others.
	if rank == 0 {
		if err := l.restore(); err != nil {
			return err
		}
	}
	l.work = newWorkers(g, max(1, cfg.Threads), cfg.Threads, cfg.Seed)
	defer l.work.stop()
	if opts.Group != nil && size > 1 {
		if err := l.syncStart(); err != nil {
			return err
		}
	}
	if l.val, err = src.ValRows(block); err != nil {
		return fmt.Errorf("validation rows: %w", err)
	}
	if cfg.EvalRows > 0 && len(l.val) > cfg.EvalRows {
		l.val = l.val[:cfg.EvalRows]
	}
	if rank == 0 {
		slog.Info("train", "model", mc.String(), "block", block, "steps", total, "from_step", l.step,
			"rows_per_epoch", stream.perEpoch, "batch", cfg.BatchSize, "grad_accum", cfg.GradAccum, "processes", size)
	}
	return l.run(ctx, opts)
}

// syncStart makes every rank start where rank 0 does. Rank 0 alone read the
// checkpoint (or init_from); its step, data position and Adam step count,
// weights and moments are broadcast, so a run resumes with any world size
// and needs no file system shared between machines. The run's length and
// epoch size travel along as a check that all ranks see the same data.
func (l *loop) syncStart() error {
	ints := ts.MustOfSlice([]int64{int64(l.step), l.pos, int64(l.opt.step), int64(l.total), int64(l.stream.perEpoch)})
	defer ints.MustDrop()
	elapsed := ts.MustOfSlice([]float64{l.elapsed})
	defer elapsed.MustDrop()
	all := []*ts.Tensor{ints, elapsed}
	for _, p := range l.g.Params() {
		all = append(all, p.Tensor)
	}
	all = append(all, l.opt.m...)
	all = append(all, l.opt.v...)
	if err := l.group.Broadcast(all, 0); err != nil {
		return fmt.Errorf("broadcast the starting state from rank 0: %w", err)
	}
	v := ints.Int64Values()
	if int(v[3]) != l.total || int(v[4]) != l.stream.perEpoch {
		return fmt.Errorf("rank %d: rank 0 trains %d steps over %d rows per epoch, this rank %d steps over %d rows: the ranks read different data or configs",
			l.rank, v[3], v[4], l.total, l.stream.perEpoch)
	}
	l.step, l.pos, l.opt.step = int(v[0]), v[1], int(v[2])
	l.lastSaved = l.step
	l.elapsed = elapsed.Float64Values()[0]
	return nil
}

// loop is one training run's state.
type loop struct {
	cfg       Config
	g         *model.GPT
	opt       *adamW
	masker    loss.Masker
	stream    *stream
	val       [][]int32
	block     int
	total     int
	step      int
	pos       int64 // global rows consumed
	elapsed   float64
	rank      int
	size      int
	group     Group
	runDir    string
	metrics   []Metric
	lastSaved int
	work      *workers
	// Time spent in forward+backward and in the optimizer (for bench).
	tModel, tOpt time.Duration
}

// restore resumes from runDir's newest good checkpoint, or loads init_from.
func (l *loop) restore() error {
	if l.rank == 0 {
		checkpoint.RemoveStaleTemps(l.runDir)
	}
	if !l.cfg.NoResume {
		dir, st, err := checkpoint.ResumePoint(l.runDir)
		if err != nil {
			return err
		}
		if dir != "" {
			saved, err := checkpoint.ReadConfig(dir)
			if err != nil {
				return err
			}
			if saved != l.g.Config() {
				return fmt.Errorf("%s holds a checkpoint of another model (%v, this run: %v): use a new run directory or train.no_resume = true", l.runDir, saved, l.g.Config())
			}
			if st.Block != l.block || st.TotalSteps != l.total || st.StreamSeed != l.cfg.Seed {
				return fmt.Errorf("checkpoint %s was made with block %d, %d steps, seed %d; this run has %d, %d, %d: use a new run directory or train.no_resume = true",
					dir, st.Block, st.TotalSteps, st.StreamSeed, l.block, l.total, l.cfg.Seed)
			}
			if err := checkpoint.LoadWeights(l.g, dir); err != nil {
				return err
			}
			if err := loadOptimizer(l.opt, dir, st.Step); err != nil {
				return err
			}
			l.step, l.pos, l.elapsed, l.lastSaved = st.Step, st.DataPosition, st.ElapsedS, st.Step
			warnThreadChange(dir, st, l.cfg.Threads)
			old, err := runfiles.ReadMetrics(filepath.Join(l.runDir, runfiles.MetricsFile))
			if err != nil {
				slog.Warn("metrics of the interrupted run unreadable; starting the table afresh", "err", err)
			}
			for _, m := range old {
				if m.Step <= int64(l.step) {
					l.metrics = append(l.metrics, m)
				}
			}
			if l.rank == 0 {
				slog.Info("resuming", "checkpoint", dir, "step", l.step)
			}
			return nil
		}
	}
	if l.cfg.InitFrom == "" {
		return nil
	}
	dir, saved, err := checkpoint.ReadSource(l.cfg.InitFrom)
	if err != nil {
		return fmt.Errorf("train.init_from = %q: %w", l.cfg.InitFrom, err)
	}
	if !saved.SameNetwork(l.g.Config()) {
		return fmt.Errorf("train.init_from = %q: its model (%v) differs from this run's (%v)", l.cfg.InitFrom, saved, l.g.Config())
	}
	if err := checkpoint.LoadSourceWeights(l.g, dir); err != nil {
		return fmt.Errorf("train.init_from = %q: %w", l.cfg.InitFrom, err)
	}
	if l.rank == 0 {
		slog.Info("initialised from", "checkpoint", dir)
	}
	return nil
}

// InterruptedError is Run's error when its context ends between steps:
// the steps done are saved, and running again resumes after Step.
type InterruptedError struct {
	Step, Total int
	Err         error // the context's error
}

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("interrupted at step %d of %d: %v", e.Step, e.Total, e.Err)
}

func (e *InterruptedError) Unwrap() error { return e.Err }

func (l *loop) run(ctx context.Context, opts Options) error {
	var bar *progress.Bar
	if opts.Progress && l.rank == 0 {
		bar = progress.New("train", l.total)
		defer bar.Done()
	}
	start := time.Now()
	base := l.elapsed
	done := 0
	for l.step < l.total {
		if err := ctx.Err(); err != nil {
			// Interrupted between steps: keep what was done.
			if l.step > l.lastSaved {
				l.elapsed = base + time.Since(start).Seconds()
				if err2 := l.checkpoint(); err2 != nil {
					return errors.Join(err, err2)
				}
			}
			return &InterruptedError{Step: l.step, Total: l.total, Err: err}
		}
		t0 := time.Now()
		m, err := l.trainStep()
		if err != nil {
			return fmt.Errorf("step %d: %w", l.step+1, err)
		}
		l.step++
		m.TokensPerS = float64(l.cfg.BatchSize*l.block) / time.Since(t0).Seconds()
		m.ValLoss = math.NaN()
		last := l.step == l.total
		if last || (l.cfg.EvalEvery > 0 && l.step%l.cfg.EvalEvery == 0) {
			if m.ValLoss, err = l.validate(); err != nil {
				return err
			}
		}
		l.elapsed = base + time.Since(start).Seconds()
		m.ElapsedS = l.elapsed
		l.metrics = append(l.metrics, m)
		if bar != nil {
			bar.Update(l.step, fmt.Sprintf("loss=%.4f lr=%.2e tok/s=%.0f", m.LossKept, m.LR, m.TokensPerS))
		}
		if last || (l.cfg.CheckpointEvery > 0 && l.step%l.cfg.CheckpointEvery == 0) {
			if err := l.checkpoint(); err != nil {
				return err
			}
		} else if l.step%l.cfg.LogEvery == 0 && l.rank == 0 {
			if err := runfiles.WriteMetrics(filepath.Join(l.runDir, runfiles.MetricsFile), l.metrics); err != nil {
				return err
			}
		}
		torchx.Collect()
		if opts.OnStep != nil {
			opts.OnStep(m)
		}
		done++
		if opts.StopAfter > 0 && done >= opts.StopAfter && !last {
			return nil
		}
	}
	return nil
}

// checkpoint writes metrics.arrow and a checkpoint of the current step (rank 0).
func (l *loop) checkpoint() error {
	l.lastSaved = l.step
	if l.rank != 0 {
		return nil
	}
	if err := runfiles.WriteMetrics(filepath.Join(l.runDir, runfiles.MetricsFile), l.metrics); err != nil {
		return err
	}
	st := checkpoint.State{Step: l.step, TotalSteps: l.total, DataPosition: l.pos, RowsPerEpoch: l.stream.perEpoch,
		Block: l.block, StreamSeed: l.cfg.Seed, ModelSeed: l.g.Config().Seed, WorldSize: l.size, ElapsedS: l.elapsed}
	st.Workers, st.Threads = threadLayout(l.cfg.Threads)
	dir, err := checkpoint.Save(l.runDir, l.g, l.opt.state(), st, l.cfg.KeepCheckpoints)
	if err != nil {
		return fmt.Errorf("checkpoint step %d: %w", l.step, err)
	}
	slog.Debug("checkpoint", "dir", dir)
	return nil
}

// trainStep runs one optimizer step over the next global batch.
func (l *loop) trainStep() (Metric, error) {
	cfg := l.cfg
	rows, err := l.stream.take(l.pos, cfg.BatchSize)
	if err != nil {
		return Metric{}, err
	}
	first := l.pos // stream position of rows[0]
	l.pos += int64(cfg.BatchSize)
	// Micro-batch a is the same rows for every world size (those one process
	// would take); each rank takes its contiguous share of it.
	gm := cfg.BatchSize / cfg.GradAccum
	micro := gm / l.size
	params := l.g.Params()
	l.work.zeroGrads()

	// stats: sum of micro-batch kept losses, CE sum and count over all
	// targets, over dropped targets.
	stats := make([]float64, 5)
	t0 := time.Now()
	for a := 0; a < cfg.GradAccum; a++ {
		ms, err := l.microStep(rows[a*gm:(a+1)*gm], first+int64(a*gm), l.rank*micro, micro, cfg.GradAccum)
		if err != nil {
			return Metric{}, err
		}
		for i := range stats {
			stats[i] += ms[i]
		}
		if a+1 < cfg.GradAccum {
			torchx.Collect() // between micro-batches: no libtorch call in flight
		}
	}
	l.work.reduceGrads()
	t1 := time.Now()
	l.tModel += t1.Sub(t0)
	defer func() { l.tOpt += time.Since(t1) }()
	gs, err := grads(params)
	if err != nil {
		return Metric{}, err
	}
	defer func() {
		for _, g := range gs {
			g.MustDrop()
		}
	}()
	if l.group != nil && l.size > 1 {
		// Each rank's share is already normalised by the global kept count:
		// the sums are the global batch's gradient and statistics.
		if err := l.group.AllReduceSum(gs); err != nil {
			return Metric{}, fmt.Errorf("all-reduce gradients: %w", err)
		}
		st := ts.MustOfSlice(stats)
		if err := l.group.AllReduceSum([]*ts.Tensor{st}); err != nil {
			return Metric{}, fmt.Errorf("all-reduce losses: %w", err)
		}
		copy(stats, st.Float64Values())
		st.MustDrop()
	}
	lr := cfg.lrAt(l.step+1, l.total)
	gn := clipGrads(gs, cfg.Clip)
	l.opt.update(gs, lr)
	return Metric{
		Step:        int64(l.step + 1),
		LossKept:    stats[0] / float64(cfg.GradAccum),
		LossAll:     ratio(stats[1], stats[2]),
		LossDropped: ratio(stats[3], stats[4]),
		LR:          lr,
		GradNorm:    gn,
	}, nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// microStep runs forward and backward on this rank's share, rows
// [from, from+n), of a global micro-batch, split over the workers. The loss is
// the goldfish loss of the whole global micro-batch (CE summed over its
// kept targets / their number, counted over all ranks' rows, so that hash
// masks, which keep different numbers of targets per row, give every world
// size the same loss), divided by accum so that accumulated gradients
// average the micro-batches. It returns this rank's part of the kept loss,
// and the CE sum and count over its targets and over its dropped ones.
// pos is global[0]'s position in the training stream: row-keyed masks
// (goldfish.strategy = "random") depend on it, so a resumed run masks
// each row as an uninterrupted one did.
func (l *loop) microStep(global [][]int32, pos int64, from, n, accum int) ([5]float64, error) {
	var out [5]float64
	targets := make([][]int32, len(global))
	for i, r := range global {
		targets[i] = r[1 : l.block+1]
	}
	// Every rank holds the whole global batch, so it can count the kept
	// targets of all of it without a collective.
	all := make([]bool, len(global)*l.block)
	if err := loss.MaskBatch(l.masker, uint64(pos), targets, all); err != nil {
		return out, err
	}
	var nKept int64
	for i, t := range targets {
		for j, id := range t {
			if id != PadID && !all[i*l.block+j] {
				nKept++
			}
		}
	}
	rows, dropped := global[from:from+n], all[from*l.block:(from+n)*l.block]
	k := min(l.work.n(), len(rows))
	res := make([]workerLoss, k)
	l.work.run(func(w int, g *model.GPT) {
		if w >= k {
			return
		}
		lo, hi := split(len(rows), k, w)
		res[w] = forwardBackward(g, rows[lo:hi], dropped[lo*l.block:hi*l.block], l.block, nKept, accum)
	})
	for _, r := range res {
		if r.err != nil {
			return out, r.err
		}
		out[0] += r.keptSum
		nAll := float64(r.NKept + r.NDropped)
		if nAll > 0 {
			out[1] += r.All * nAll
			out[2] += nAll
		}
		if r.NDropped > 0 {
			out[3] += r.Dropped * float64(r.NDropped)
			out[4] += float64(r.NDropped)
		}
	}
	out[0] /= float64(max(nKept, 1))
	// Non-finite here means this rank's share blew up (the sum over ranks
	// would be non-finite too).
	if math.IsNaN(out[0]) || math.IsInf(out[0], 0) {
		return out, fmt.Errorf("loss is %v", out[0])
	}
	return out, nil
}

type workerLoss struct {
	Losses
	keptSum float64 // CE summed over this worker's kept targets
	err     error
}

// forwardBackward runs one worker's share of a micro-batch: its part of the
// loss is its kept-CE sum / nKept (the whole micro-batch's kept count) / accum.
func forwardBackward(g *model.GPT, rows [][]int32, dropped []bool, block int, nKept int64, accum int) (out workerLoss) {
	inp, tgt, _ := batchTensors(rows, block, g.Device())
	defer inp.MustDrop()
	defer tgt.MustDrop()
	dt, err := boolTensor(dropped, []int64{int64(len(rows)), int64(block)}, g.Device())
	if err != nil {
		out.err = err
		return out
	}
	defer dt.MustDrop()
	logits := g.Forward(inp)
	defer logits.MustDrop()
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

// boolTensor makes a [dims] bool tensor of a Go slice on dev (a Go bool is
// one byte holding 0 or 1, libtorch's bool layout).
func boolTensor(b []bool, dims []int64, dev gotch.Device) (*ts.Tensor, error) {
	var raw []byte
	if len(b) > 0 {
		raw = unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), len(b))
	}
	t, err := ts.OfDataSize(raw, dims, gotch.Bool)
	if err != nil {
		return nil, err
	}
	return toDevice(t, dev), nil
}

// batchTensors turns rows of block+1 ids into inputs [B,block] (padding
// embedded as token 0; its targets are ignored anyway) and targets
// [B,block] (padding kept as PadID), both on dev, plus the target rows for
// the masker.
func batchTensors(rows [][]int32, block int, dev gotch.Device) (inp, tgt *ts.Tensor, targets [][]int32) {
	in := make([]int64, 0, len(rows)*block)
	tg := make([]int64, 0, len(rows)*block)
	targets = make([][]int32, len(rows))
	for i, r := range rows {
		for _, id := range r[:block] {
			in = append(in, int64(max(id, 0)))
		}
		for _, id := range r[1 : block+1] {
			tg = append(tg, int64(id))
		}
		targets[i] = r[1 : block+1]
	}
	shape := []int64{int64(len(rows)), int64(block)}
	inp = toDevice(ts.MustOfSlice(in).MustView(shape, true), dev)
	tgt = toDevice(ts.MustOfSlice(tg).MustView(shape, true), dev)
	return inp, tgt, targets
}

// validate is the mean cross-entropy over every non-padding target of the
// validation rows, with no goldfish mask; NaN when there are none. With
// several ranks each scores its share of the rows and the sums are
// all-reduced.
func (l *loop) validate() (float64, error) {
	if len(l.val) == 0 {
		return math.NaN(), nil
	}
	val := l.val
	if l.group != nil && l.size > 1 {
		lo, hi := split(len(val), l.size, l.rank)
		val = val[lo:hi]
	}
	micro := max(1, l.cfg.BatchSize/l.size/l.cfg.GradAccum)
	var sum, n float64
	for i := 0; i < len(val); i += micro {
		rows := val[i:min(i+micro, len(val))]
		k := min(l.work.n(), len(rows))
		sums := make([]float64, k)
		counts := make([]float64, k)
		errs := make([]error, k)
		l.work.run(func(w int, g *model.GPT) {
			if w >= k {
				return
			}
			lo, hi := split(len(rows), k, w)
			sums[w], counts[w], errs[w] = evalRows(g, rows[lo:hi], l.block)
		})
		for w := 0; w < k; w++ {
			if errs[w] != nil {
				return 0, fmt.Errorf("validation: %w", errs[w])
			}
			sum += sums[w]
			n += counts[w]
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
	torchx.NoGrad(func() {
		inp, tgt, _ := batchTensors(rows, block, g.Device())
		none := ts.MustZeros(tgt.MustSize(), gotch.Bool, g.Device())
		logits := g.Forward(inp)
		var ls Losses
		ls, err = MaskedCrossEntropy(logits, tgt, none, PadID)
		if err == nil {
			if ls.NKept > 0 {
				sum, n = ls.All*float64(ls.NKept), float64(ls.NKept)
			}
			ls.Kept.MustDrop()
		}
		for _, t := range []*ts.Tensor{inp, tgt, none, logits} {
			t.MustDrop()
		}
	})
	return sum, n, err
}
