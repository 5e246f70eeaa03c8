// Package train is memo's training loop: AdamW with warm-up and cosine
// decay, gradient clipping and accumulation, the goldfish loss, validation,
// metrics, checkpoints (in package checkpoint's format), exact resume and
// data-parallel training through a Group.
//
// Files by concern: run.go is Run and the step loop; step.go one optimizer
// step (micro-batches, forward and backward, the loss sums); strategy.go
// the parts that differ with train.shard, one file each (replicated.go,
// zero12.go, zero3.go);
// resume.go the checkpoint or init_from a run starts from; checkpoint.go
// writing checkpoints; validate.go validation; batch.go rows as tensors;
// stream.go the training rows; supervised.go train.match_supervised_tokens;
// adamw.go, crossentropy.go, workers.go the optimizer, the masked loss and
// the worker replicas; config.go the [train] table; bench.go the benchmark.
package train

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/progress"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/precision"
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

// sourceDigest is src's Digest when it has one (a *data.Dataset does),
// else "".
func sourceDigest(src Source) string {
	if d, ok := src.(interface{ Digest() string }); ok {
		return d.Digest()
	}
	return ""
}

// Group is a data-parallel process group (package dist implements it).
// Every rank reads only its share of each global micro-batch, scales its
// loss by the global micro-batch's kept-target count (the ranks' counts
// summed with AllReduceSum) and the gradients are summed with
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
	// OnEnd, when set, is called on every rank once the run has taken its
	// last step (not when StopAfter or an interruption ends it first),
	// with the model's weights (with train.lora, the frozen base) and the
	// parameters it trained (all of them, or the adapters). Tests use it
	// to compare the ranks' replicas, which only rank 0's checkpoint shows
	// otherwise. The tensors are the loop's: read them, do not keep them.
	// Under ZeRO (train.shard) a rank may hold only its part of them.
	OnEnd func(weights, trained []model.Param)
}

// runSteps is the run's optimizer steps: train.steps, or train.epochs
// passes over the perEpoch rows of the stream, batch_size rows a step.
// DP-SGD's step draws q·N rows on average instead, so where q is not
// batch_size/N (train.dp.sample_rate given, or a batch larger than the
// stream, q = 1) a pass is 1/q steps, as Opacus counts its epochs: at
// q = 0.1 over 1,280 rows with a batch of 16, train.epochs = 1 ran 80
// steps, eight passes, and spent ε over them.
func runSteps(cfg Config, perEpoch int) int {
	if cfg.Steps > 0 {
		return cfg.Steps
	}
	if cfg.DP.Enabled && (cfg.DP.SampleRate > 0 || cfg.BatchSize > perEpoch) {
		q := cfg.DP.SampleRate
		if q == 0 {
			q = 1
		}
		// Less a hair, so that a quotient a rounding above a whole
		// number (0.9/0.03 = 30.000000000000004) is not a step more.
		return int(math.Ceil(cfg.Epochs/q - 1e-9))
	}
	// Less a hair here too: 1.1 epochs of 100 rows in batches of 5 is
	// 22.000000000000004, and ran 23 steps.
	return int(math.Ceil(cfg.Epochs*float64(perEpoch)/float64(cfg.BatchSize) - 1e-9))
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
	if err := cfg.CheckShardRanks(size); err != nil {
		return err
	}
	if cfg.BatchSize%(size*cfg.GradAccum) != 0 {
		return fmt.Errorf("train.batch_size = %d: must be a multiple of %d processes × train.grad_accum = %d", cfg.BatchSize, size, cfg.GradAccum)
	}
	// libtorch keeps grad mode (and OpenMP's thread count) per OS thread:
	// the whole loop runs on one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// The command's thread count back for the stages after training: memo
	// run's attack and scoring ran on train.threads, and gave other
	// losses (in the ninth digit) than the same stages run again alone.
	defer torchx.SetThreads(torchx.Threads())
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
	total := runSteps(cfg, stream.perEpoch)
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

	if cfg.WarmupSteps > total && rank == 0 {
		// train.steps is checked against the warm-up when the spec is
		// read; epochs and the matched control know their steps only now.
		slog.Warn("train.warmup_steps exceeds the run's steps: the learning rate never reaches train.lr and never decays, ending at its highest",
			"warmup_steps", cfg.WarmupSteps, "steps", total, "lr_at_last_step", cfg.lrAt(total, total), "lr", cfg.LR)
	}

	dev, err := rankDevice(cfg.Device, opts.Group)
	if err != nil {
		return err
	}
	l := &loop{cfg: cfg, masker: masker, stream: stream, block: block, total: total,
		rank: rank, size: size, group: opts.Group, runDir: runDir, dataset: sourceDigest(src)}
	defer l.dropStrategy()
	if err := l.setupDP(); err != nil {
		return err
	}
	if l.dp != nil {
		l.dp.randomMask = lcfg.Enabled() && lcfg.Strategy == loss.StrategyRandom
	}
	if err := l.newModel(mc, dev, opts.Group); err != nil {
		return err
	}
	g := l.g
	// With several ranks only rank 0 reads the run directory; syncStart
	// hands its state to the others.
	if rank == 0 {
		if err := l.restore(); err != nil {
			return err
		}
	}
	if err := l.holdLoRABase(); err != nil { // lora.go
		return err
	}
	l.work = newWorkers(g, l.workerCount(), cfg.Threads, cfg.Seed)
	defer l.work.stop()
	l.loraWorkers()
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

// shardFor checks that group can shard the state as cfg asks and cuts the
// parameters over the ranks; both are nil for train.shard = none.
func shardFor(cfg Config, g *model.GPT, group Group, rank, size int) (Sharder, *shardPlan, error) {
	if !cfg.sharded() {
		return nil, nil, nil
	}
	sh, ok := group.(Sharder)
	if !ok {
		return nil, nil, fmt.Errorf("train.shard = %q: this process group has no sharded collectives", cfg.Shard)
	}
	var units [][]int // one unit of all parameters
	if cfg.Shard == ShardFull {
		var err error
		if units, err = stageUnits(g.Params(), g.Config().Layers); err != nil {
			return nil, nil, err
		}
	}
	plan, err := newShardPlan(cfg.Shard, g.Params(), units, rank, size, cfg.ShardGroup)
	if err != nil {
		return nil, nil, err
	}
	return sh, plan, nil
}

// workerCount is how many workers (model replicas on their own threads)
// compute a micro-batch: train.threads of them, or one under train.shard =
// "full", whose stages gather weights into the one model (with
// train.threads libtorch threads).
func (l *loop) workerCount() int {
	if l.cfg.Shard == ShardFull {
		return 1
	}
	return max(1, l.cfg.Threads)
}

// newModel builds the model (fresh weights drawn from its seed), its
// sharding plan, its optimizer and the strategy. Under train.shard = "full"
// the model is built unset and emptied, and no rank holds it whole: its
// ranges are drawn or scattered later (strategy.start).
func (l *loop) newModel(mc model.Config, dev gotch.Device, group Group) error {
	vs := nn.NewVarStore(dev)
	build := model.New
	if l.cfg.Shard == ShardFull {
		build = model.NewUninitialized
	}
	g, err := build(vs.Root(), mc)
	if err != nil {
		return err
	}
	if err := precision.Set(g, l.cfg.Precision, true); err != nil {
		return fmt.Errorf("train.precision: %w", err)
	}
	if err := l.attachLoRA(g); err != nil {
		return err
	}
	sharder, plan, err := shardFor(l.cfg, g, group, l.rank, l.size)
	if err != nil {
		return err
	}
	l.g, l.sharder, l.opt = g, sharder, newAdamW(l.trainable(g), l.cfg, plan)
	l.strat, err = l.newStrategy()
	return err
}

// dropStrategy frees the strategy's state.
func (l *loop) dropStrategy() {
	if l.strat != nil {
		l.strat.drop()
		l.strat = nil
	}
}

// loop is one training run's state.
type loop struct {
	cfg     Config
	g       *model.GPT
	opt     *adamW
	masker  loss.Masker
	stream  *stream
	val     [][]int32
	block   int
	total   int
	step    int
	pos     int64 // global rows consumed
	elapsed float64
	rank    int
	size    int
	group   Group
	sharder Sharder  // the group's sharded collectives (train.shard other than none)
	strat   strategy // how the weights, gradients and optimizer state are held (train.shard)
	dp      *dpState // DP-SGD's parameters and accountant; nil without [train.dp] (dpstep.go)
	runDir  string
	// dataset names what src holds (sourceDigest): recorded in every
	// checkpoint, compared on resume.
	dataset string
	// layouts carries checkpoint.State.Layouts: nil until a resume
	// changes the thread layout.
	layouts []checkpoint.ThreadLayout
	// lora are train.lora's adapters, one set per worker (lora.go), and
	// loraBase (rank 0) the base they train on; nil without train.lora.
	lora     []*model.LoRA
	loraBase *checkpoint.LoRABase
	// loaded holds, on rank 0 of a sharded run that resumes, the
	// checkpoint's full AdamW moments until syncStart scatters them.
	loaded [2][]*ts.Tensor
	// loadedWeights is set on rank 0 when it read the weights from a
	// checkpoint or train.init_from (the others' are the seed's until
	// syncStart).
	loadedWeights bool
	metrics       []Metric
	lastSaved     int
	// peerGone is set when the ranks could not agree on stopping (a peer
	// had already exited): a sharded checkpoint, which needs them all at
	// one step, cannot be written then.
	peerGone bool
	work     *workers
	// Time spent in forward+backward and in the optimizer (for bench).
	tModel, tOpt time.Duration
	// phases, set by memo bench train on a GPU, times the same phases
	// with CUDA events (nil: not timed).
	phases *phaseEvents
}

// InterruptedError is Run's error when its context ends between steps:
// running again resumes after Step, the newest step saved. At is the step
// training had reached: past Step when a sharded run keeps only its
// periodic checkpoints.
type InterruptedError struct {
	Step, At, Total int
	Err             error // the context's error
}

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("interrupted at step %d of %d: %v", e.Step, e.Total, e.Err)
}

func (e *InterruptedError) Unwrap() error { return e.Err }

// interruption is ctx's error, or, in a group, context.Canceled when
// another rank's context ended: the ranks agree each step on whether to
// stop, so all stop at the same step. Each looked alone, and a rank that
// had already entered the next step (rank 0, its peer gone) failed its
// all-reduce and exited 1 without saving. fault is the agreement's own
// failure on a rank with no interruption of its own.
func (l *loop) interruption(ctx context.Context) (err, fault error) {
	err = ctx.Err()
	if l.group == nil || l.size < 2 {
		return err, nil
	}
	stop, rerr := l.anyRank(err != nil)
	if rerr != nil {
		if err != nil {
			l.peerGone = true
			return err, nil // a peer already gone: this rank still stops as asked
		}
		return nil, fmt.Errorf("all-reduce the ranks' stop flags: %w", rerr)
	}
	if err == nil && stop {
		err = context.Canceled
	}
	return err, nil
}

// savedTogether has the ranks of a group leave a checkpoint that ends
// their training (the last step's, or an interruption's) together, each
// with rank 0's verdict on it (err is this rank's part). A rank that
// exited first, with 130 for an interruption, ended the launch (srun
// --kill-on-bad-exit, memo's own launcher) and so killed rank 0 half-way
// through writing the checkpoint it was leaving for.
func (l *loop) savedTogether(err error) error {
	if l.group == nil || l.size < 2 || l.peerGone {
		return err
	}
	failed, rerr := l.anyRank(err != nil)
	if rerr != nil {
		if err != nil {
			return err
		}
		return fmt.Errorf("wait for the ranks after the checkpoint of step %d: %w", l.step, rerr)
	}
	if err == nil && failed {
		return fmt.Errorf("the checkpoint of step %d failed on another rank (see its error)", l.step)
	}
	return err
}

// anyRank reports whether mine is true on any rank of the group: one
// all-reduce of a 0/1 flag, which every rank must call at the same point.
func (l *loop) anyRank(mine bool) (bool, error) {
	flag := 0.0
	if mine {
		flag = 1
	}
	t := ts.MustOfSlice([]float64{flag})
	defer t.MustDrop()
	if err := l.group.AllReduceSum([]*ts.Tensor{t}); err != nil {
		return false, err
	}
	return t.Float64Values()[0] > 0, nil
}

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
		err, ferr := l.interruption(ctx)
		if ferr != nil {
			return fmt.Errorf("step %d: %w", l.step+1, ferr)
		}
		if err != nil {
			// Interrupted between steps: keep what was done. The ranks
			// agreed to stop at this step, so a sharded run gathers its
			// checkpoint from them all as at a periodic one; only when a
			// peer is gone (no agreement) can it not, and it keeps its
			// last periodic checkpoint.
			saved := l.step
			if l.step > l.lastSaved && l.sharder != nil && l.peerGone {
				if l.rank == 0 {
					slog.Warn("interrupted: a sharded run keeps only its last periodic checkpoint", "step", l.step, "checkpoint", l.lastSaved)
				}
				saved = l.lastSaved // the step the same command resumes after
			} else if l.step > l.lastSaved {
				l.elapsed = base + time.Since(start).Seconds()
				if err2 := l.savedTogether(l.checkpoint()); err2 != nil {
					// Not an interruption that saved: a failure (exit 1).
					return fmt.Errorf("interrupted at step %d of %d, and its checkpoint failed: %w", l.step, l.total, err2)
				}
			}
			return &InterruptedError{Step: saved, At: l.step, Total: l.total, Err: err}
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
			loss := fmt.Sprintf("loss=%.4f", m.LossKept)
			if m.LossAll != m.LossKept && !math.IsNaN(m.LossAll) {
				// Goldfish trains on the kept tokens; the tables' final
				// train loss is over all of them, which this names.
				loss += fmt.Sprintf(" (all tokens %.4f)", m.LossAll)
			}
			bar.Update(l.step, fmt.Sprintf("%s lr=%.2e tok/s=%.0f", loss, m.LR, m.TokensPerS))
		}
		if last || (l.cfg.CheckpointEvery > 0 && l.step%l.cfg.CheckpointEvery == 0) {
			err := l.checkpoint()
			if last {
				err = l.savedTogether(err)
			}
			if err != nil {
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
	if err := ctx.Err(); err != nil {
		// A signal during the last step: its checkpoint is saved, and the
		// interruption is still training's, with the step it saved (the
		// next stage would otherwise report it without one).
		return &InterruptedError{Step: l.step, At: l.step, Total: l.total, Err: err}
	}
	if opts.OnEnd != nil {
		opts.OnEnd(l.g.Params(), l.opt.params)
	}
	return nil
}
