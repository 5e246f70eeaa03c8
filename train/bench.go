package train

import (
	"fmt"
	"github.com/memo-research/memo/internal/procmem"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/precision"
	"github.com/sugarme/gotch"

	"github.com/sugarme/gotch/ts"
)

// BenchConfig describes a training-throughput measurement on random tokens.
type BenchConfig struct {
	Model   model.Config
	Seq     int // tokens per row
	Batch   int // rows per step
	Steps   int // measured steps
	Warmup  int // unmeasured steps first
	Threads int // libtorch threads; 0 keeps the default
	Seed    int64
	// Device is a train.device value: "cpu" (also when empty), "cuda",
	// "cuda:N". On a GPU the peak is that of one fp32 product on it.
	Device string
	// Precision is a train.precision value: fp32 (also when empty) or bf16-mixed.
	Precision string
	// Group, when set, trains data-parallel on its ranks: Batch is the
	// global batch, split over them. Every rank runs Bench.
	Group Group
	// Shard is a train.shard value (none when empty; others need Group).
	Shard string
	// ShardGroup is train.shard_group (with Shard "full"; 0: no groups).
	ShardGroup int
	// ActivationCheckpointing is train.activation_checkpointing.
	ActivationCheckpointing bool
	// CountOps counts libtorch's operator calls over the measured steps
	// (BenchResult.OpCounts); counting slows them.
	CountOps bool
	// ProfileKernels records the measured steps' kernels with libtorch's
	// profiler (BenchResult.Kernels); recording slows the host's calls.
	ProfileKernels bool
	// OnMeasure, when set, is called once the warm-up steps are done and
	// before the first measured step (memo --cpu-profile starts its
	// profile over there, so that building the model and the first
	// steps' one-time costs stay out of it).
	OnMeasure func()
}

// BenchResult is what `memo bench train --json` prints.
type BenchResult struct {
	Preset        string  `json:"preset"`
	Params        int64   `json:"params"`
	Vocab         int     `json:"vocab"`
	Seq           int     `json:"seq"`
	Batch         int     `json:"batch"`
	Steps         int     `json:"steps"`
	Threads       int     `json:"threads"`
	Device        string  `json:"device"`
	Precision     string  `json:"precision"`
	FLOPsPerToken float64 `json:"flops_per_token"`
	TokensPerS    float64 `json:"tokens_per_s"`
	GFLOPs        float64 `json:"gflops"`
	// PeakGFLOPs is the measured matmul peak of every rank together: rank
	// 0's times the ranks (on GPUs, times the GPUs they use).
	PeakGFLOPs float64 `json:"peak_gflops"`
	MFU        float64 `json:"mfu"`
	StepS      float64 `json:"step_s"`
	// StepsS is each measured step's seconds, in order: their spread says
	// how far one run's mean can be trusted.
	StepsS []float64 `json:"steps_s"`
	// Seconds per step in each phase: model (forward, loss and backward on
	// all workers, gradient reduction), optimizer (clipping and AdamW),
	// collect (Go GC of gotch's tensors).
	ModelS     float64 `json:"model_s"`
	OptimizerS float64 `json:"optimizer_s"`
	CollectS   float64 `json:"collect_s"`
	// On a GPU, the same phases as the GPU spent them (CUDA events, mean
	// seconds a step): forward and backward, then reduction, clipping and
	// AdamW to their last kernel. Host times above are what the host
	// waited; AdamW's kernels run on into the next step's host time.
	GPUModelS  float64 `json:"gpu_model_s,omitempty"`
	GPUUpdateS float64 `json:"gpu_update_s,omitempty"`
	// ElementwiseKernels is, on a GPU, whether memo's elementwise kernels
	// (rotary, SwiGLU, RMSNorm and bfloat16 copies with the residual sum
	// before them, the loss) run there, where a call's tensors fit them
	// ("on"), or why not (torchx.ElementwiseKernels); MEMO_FUSED_ADD=off
	// is noted after it.
	ElementwiseKernels string `json:"elementwise_kernels,omitempty"`
	// FirstLoss is the first step's loss (a forward pass of the initial
	// weights), LastLoss the last step's, after every earlier backward
	// pass and AdamW update: with the same seed, two devices agree on both
	// within float rounding (scripts/gpu-check.sh compares them), and
	// GradNorm is the last step's gradient norm before clipping.
	FirstLoss    float64 `json:"first_loss"`
	LastLoss     float64 `json:"last_loss"`
	LastGradNorm float64 `json:"last_grad_norm"`
	// ActivationCheckpointing is train.activation_checkpointing: each
	// block recomputed before its backward pass.
	ActivationCheckpointing bool `json:"activation_checkpointing"`
	// GPUPeakBytes is, on a GPU, the most memory libtorch's allocator held
	// for tensors at once (the model, its state and a step's activations).
	GPUPeakBytes int64 `json:"gpu_peak_bytes,omitempty"`
	// Nproc is the number of ranks and Shard the train.shard they trained with.
	Nproc      int    `json:"nproc"`
	Shard      string `json:"shard"`
	ShardGroup int    `json:"shard_group,omitempty"`
	// State is rank 0's bytes of parameters, gradients and AdamW state;
	// Unsharded is what one rank holds with train.shard = none.
	State StateBytes `json:"state_bytes"`
	// RSS is rank 0's resident set after the last step (VmRSS) and
	// PeakRSS its largest (VmHWM, which includes building the whole model
	// at the start), in bytes.
	RSS       int64      `json:"rss_bytes"`
	PeakRSS   int64      `json:"peak_rss_bytes"`
	Unsharded StateBytes `json:"unsharded_state_bytes"`
	// Collectives are rank 0's collectives per measured step: calls, the
	// bytes handed to each, and the bytes it sends under the collective's
	// schedule (Traffic).
	Collectives []Traffic `json:"collectives_per_step"`
	// GPU is the device's CUDA name and GPUSKU its datasheet SKU;
	// DatasheetPeakTFLOPs is that datasheet's dense tensor-core peak for
	// DatasheetPeakDType (the products' dtype) and DatasheetMFU = GFLOPs
	// over it times the GPUs the ranks use. MFU above is over PeakGFLOPs, a measured matmul: another
	// figure. On the CPU or an unlisted card the peak and its MFU are 0
	// and DatasheetNote says why (else it cites the datasheet).
	GPU                 string  `json:"gpu,omitempty"`
	GPUSKU              string  `json:"gpu_sku,omitempty"`
	DatasheetPeakDType  string  `json:"datasheet_peak_dtype,omitempty"`
	DatasheetPeakTFLOPs float64 `json:"datasheet_peak_tflops"`
	DatasheetMFU        float64 `json:"datasheet_mfu"`
	DatasheetNote       string  `json:"datasheet_note"`
	// OpCounts, with BenchConfig.CountOps, are the libtorch operator calls
	// and autograd nodes of all Steps measured steps together, by name
	// (torchx.CountOps); memo's own kernels are not operators. The rates
	// above then include counting's cost.
	OpCounts *torchx.OpCounts `json:"op_counts,omitempty"`
	// Kernels, with BenchConfig.ProfileKernels, are the measured steps'
	// kernels on the device trained on, by name, the most time first (at
	// most BenchKernels of them; torchx.ProfileKernels): on a GPU CUDA
	// kernels and their device time, on the CPU libtorch's operators and
	// their time including the operators they call. KernelSPerStep is the
	// GPU's kernel time a step, all kernels (0 on the CPU, where nested
	// operators make a sum meaningless).
	Kernels        torchx.KernelProfile `json:"kernels,omitempty"`
	KernelSPerStep float64              `json:"kernel_s_per_step,omitempty"`
}

// BenchKernels is how many kernels BenchResult.Kernels keeps.
const BenchKernels = 40

// trafficCounter is a Group that tallies its collectives (dist.Group).
type trafficCounter interface{ Traffic() []Traffic }

// trafficPerStep is after - before, per step, for the collectives in after.
func trafficPerStep(before, after []Traffic, steps int) []Traffic {
	prev := map[[2]string]Traffic{}
	for _, t := range before {
		prev[[2]string{t.Op, t.Scope}] = t
	}
	out := make([]Traffic, 0, len(after))
	for _, t := range after {
		p := prev[[2]string{t.Op, t.Scope}]
		out = append(out, Traffic{Op: t.Op, Scope: t.Scope, Calls: (t.Calls - p.Calls) / int64(steps),
			PayloadBytes: (t.PayloadBytes - p.PayloadBytes) / int64(steps), SentBytes: (t.SentBytes - p.SentBytes) / float64(steps)})
	}
	return out
}

// MatmulPeak measures this process's fp32 matrix-multiply rate in GFLOP/s
// on n×n products with threads threads, the better of two ways of using
// them: one product on libtorch's threads, and threads concurrent products
// on single-threaded libtorch (how the training loop uses them). Each is the
// best of reps timed rounds after a warm-up.
func MatmulPeak(n, reps, threads int) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	flop := 2 * float64(n) * float64(n) * float64(n)
	a := ts.MustRandn([]int64{int64(n), int64(n)}, gotch.Float, gotch.CPU)
	b := ts.MustRandn([]int64{int64(n), int64(n)}, gotch.Float, gotch.CPU)
	defer a.MustDrop()
	defer b.MustDrop()
	torchx.Init(threads, 1)
	best := 0.0
	for i := 0; i <= reps; i++ {
		t0 := time.Now()
		a.MustMm(b, false).MustDrop()
		if d := time.Since(t0).Seconds(); i > 0 {
			best = max(best, flop/d/1e9)
		}
	}
	if threads <= 1 {
		return best
	}
	for i := 0; i <= reps; i++ {
		var wg sync.WaitGroup
		t0 := time.Now()
		for k := 0; k < threads; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				torchx.Init(1, 1)
				a.MustMm(b, false).MustDrop()
			}()
		}
		wg.Wait()
		if d := time.Since(t0).Seconds(); i > 0 {
			best = max(best, float64(threads)*flop/d/1e9)
		}
	}
	return best
}

// Bench measures the matmul peak, then trains cfg.Steps steps on random
// tokens with the real loop's pieces (AdamW, clipping, standard loss) and
// reports throughput and model FLOPs utilisation. It writes no files.
func Bench(cfg BenchConfig) (BenchResult, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	mc := cfg.Model
	if mc.Context < cfg.Seq {
		mc.Context = cfg.Seq
	}
	mc, err := mc.Resolve()
	if err != nil {
		return BenchResult{}, err
	}
	if cfg.Seq < 1 || cfg.Batch < 1 || cfg.Steps < 1 {
		return BenchResult{}, fmt.Errorf("bench: seq %d, batch %d, steps %d: each must be >= 1", cfg.Seq, cfg.Batch, cfg.Steps)
	}
	dev, err := rankDevice(cfg.Device, cfg.Group)
	if err != nil {
		return BenchResult{}, err
	}
	torchx.Init(cfg.Threads, uint64(cfg.Seed))
	var peak float64
	if dev.IsCuda() {
		// The peak of the products' own dtype: bf16-mixed's MFU is over
		// the bf16 rate, as PyTorch users quote it.
		dt, err := precision.Parse(cfg.Precision, true)
		if err != nil {
			return BenchResult{}, err
		}
		peak = matmulPeakOn(dev, dt, 8192, 5)
	} else {
		// threads 0 is libtorch's default, as in memo run: the peak is
		// measured on that many, and MatmulPeak's thread count is put
		// back (it had left the bench training on one thread).
		threads := cfg.Threads
		if threads <= 0 {
			threads = torchx.Threads()
		}
		peak = MatmulPeak(2048, 5, threads)
		torchx.Init(threads, uint64(cfg.Seed))
	}

	tc := DefaultConfig()
	tc.BatchSize, tc.GradAccum, tc.Threads, tc.Shard = cfg.Batch, 1, cfg.Threads, cfg.Shard
	rank, size := 0, 1
	if cfg.Group != nil {
		rank, size = cfg.Group.Rank(), cfg.Group.Size()
	}
	if err := tc.CheckShardRanks(size); err != nil {
		return BenchResult{}, err
	}
	if cfg.Batch%size != 0 {
		return BenchResult{}, fmt.Errorf("bench: batch %d: must be a multiple of the %d processes", cfg.Batch, size)
	}
	tc.ShardGroup, tc.Precision, tc.ActivationCheckpointing = cfg.ShardGroup, cfg.Precision, cfg.ActivationCheckpointing
	l := &loop{cfg: tc, block: cfg.Seq, total: cfg.Steps + cfg.Warmup, rank: rank, size: size, group: cfg.Group}
	defer l.dropStrategy()
	if err := l.newModel(mc, dev, cfg.Group); err != nil {
		return BenchResult{}, err
	}
	if err := l.strat.start(false); err != nil {
		return BenchResult{}, err
	}
	g := l.g
	masker, err := loss.New(loss.Config{Strategy: loss.StrategyNone})
	if err != nil {
		return BenchResult{}, err
	}
	src := randomSource{vocab: mc.Vocab, rows: cfg.Batch * (cfg.Warmup + cfg.Steps), seed: cfg.Seed}
	st, err := newStream(src, cfg.Seq, cfg.Seed)
	if err != nil {
		return BenchResult{}, err
	}
	l.masker, l.stream = masker, st
	counter, _ := cfg.Group.(trafficCounter)
	var before []Traffic
	workers := l.workerCount()
	l.work = newWorkers(g, workers, cfg.Threads, cfg.Seed)
	defer l.work.stop()
	var col, all time.Duration
	var stepsS []float64
	var first, last, lastGrad float64
	if dev.IsCuda() {
		l.phases = newPhaseEvents()
		defer l.phases.free()
	}
	var opCount torchx.OpCounter
	defer opCount.Stop() // on an error's return; the counts are not reported then
	var kernels torchx.KernelProfiler
	defer kernels.Stop() // likewise
	for s := 0; s < cfg.Warmup+cfg.Steps; s++ {
		if s == cfg.Warmup {
			if cfg.OnMeasure != nil {
				cfg.OnMeasure()
			}
			l.tModel, l.tOpt = 0, 0
			if counter != nil {
				before = counter.Traffic()
			}
			if cfg.CountOps {
				if err := opCount.Start(); err != nil {
					return BenchResult{}, err
				}
			}
			if cfg.ProfileKernels {
				if err := kernels.Start(dev.IsCuda()); err != nil {
					return BenchResult{}, err
				}
			}
		}
		t0 := time.Now()
		m, err := l.trainStep()
		if err != nil {
			return BenchResult{}, err
		}
		if s == 0 {
			first = m.LossAll
		}
		last, lastGrad = m.LossAll, m.GradNorm
		l.phases.next(s >= cfg.Warmup)
		l.step++
		t1 := time.Now()
		torchx.Collect()
		if s >= cfg.Warmup {
			col += time.Since(t1)
			d := time.Since(t0)
			all += d
			stepsS = append(stepsS, d.Seconds())
		}
	}
	ops, err := opCount.Stop()
	if err != nil {
		return BenchResult{}, err
	}
	if cfg.ProfileKernels && dev.IsCuda() {
		// The last step's AdamW may still be queued: the profile ends
		// once every kernel it launched has run.
		if err := ts.CudaSynchronize(int(dev.Value)); err != nil {
			return BenchResult{}, err
		}
	}
	prof, err := kernels.Stop()
	if err != nil {
		return BenchResult{}, err
	}
	l.phases.flush()
	gpuModel, gpuUpdate := l.phases.seconds()
	var traffic []Traffic
	if counter != nil {
		traffic = trafficPerStep(before, counter.Traffic(), cfg.Steps)
	}
	state := l.stateBytes()
	torchx.Collect()
	torchx.ReleaseFreeMemory()
	rss, peakRSS := procmem.RSS(), procmem.PeakRSS()
	// Unsharded, every rank holds the weights, their gradients and both
	// moments of every parameter.
	pb := mc.Params() * int64(gotch.Float.Size())
	full := StateBytes{Params: pb, Grads: pb, Optimizer: 2 * pb}
	n := float64(cfg.Steps)
	tokPerS := float64(cfg.Batch*cfg.Seq) * n / all.Seconds()
	fpt := mc.FLOPsPerTokenAt(cfg.Seq)
	gflops := tokPerS * fpt / 1e9
	// tokPerS counts every rank's rows, and each rank has a peak of its
	// own (its share of the cores, or its GPU): the MFU is over all.
	devices := size
	if dev.IsCuda() {
		devices = min(size, int(gotch.CUDA.DeviceCount())) // ranks past the GPUs share one
	}
	peak *= float64(devices)
	res := BenchResult{
		Preset: mc.Preset, Params: mc.Params(), Vocab: mc.Vocab, Seq: cfg.Seq, Batch: cfg.Batch, Steps: cfg.Steps,
		Threads: workers, Device: torchx.DeviceName(dev), Precision: precision.Name(cfg.Precision), FLOPsPerToken: fpt, TokensPerS: tokPerS, GFLOPs: gflops, PeakGFLOPs: peak,
		MFU: gflops / peak, StepS: all.Seconds() / n, StepsS: stepsS, ModelS: l.tModel.Seconds() / n,
		OptimizerS: l.tOpt.Seconds() / n, CollectS: col.Seconds() / n, GPUModelS: gpuModel, GPUUpdateS: gpuUpdate,
		FirstLoss: first, LastLoss: last, LastGradNorm: lastGrad,
		Nproc: size, Shard: shardName(cfg.Shard), ShardGroup: cfg.ShardGroup, State: state, RSS: rss, PeakRSS: peakRSS, Unsharded: full, Collectives: traffic,
	}
	res.setDatasheet(dev, cfg.Precision, devices)
	res.ActivationCheckpointing = cfg.ActivationCheckpointing
	res.OpCounts = ops
	if cfg.ProfileKernels {
		on := "cpu"
		if dev.IsCuda() {
			on = "cuda"
			res.KernelSPerStep = prof.DeviceSeconds(on) / n
		}
		res.Kernels = prof.Top(on, BenchKernels)
	}
	if dev.IsCuda() {
		res.ElementwiseKernels = torchx.ElementwiseKernels(int(dev.Value))
		if !torchx.FusedAdd() {
			res.ElementwiseKernels += " (residual sums apart: MEMO_FUSED_ADD=off)"
		}
		res.GPUPeakBytes = torchx.GPUPeakAllocated(int(dev.Value))
	}
	return res, nil
}

// matmulPeakOn is the best rate in GFLOP/s of one n×n product of dtype dt
// on a GPU, over reps timed rounds after a warm-up; reading a value of the
// product waits for the asynchronous kernel.
func matmulPeakOn(dev gotch.Device, dt gotch.DType, n, reps int) float64 {
	flop := 2 * float64(n) * float64(n) * float64(n)
	a := ts.MustRandn([]int64{int64(n), int64(n)}, dt, dev)
	b := ts.MustRandn([]int64{int64(n), int64(n)}, dt, dev)
	defer a.MustDrop()
	defer b.MustDrop()
	best := 0.0
	for i := 0; i <= reps; i++ {
		t0 := time.Now()
		c := a.MustMm(b, false)
		c.MustSelect(0, 0, false).MustSelect(0, 0, true).Float64Values(true)
		c.MustDrop()
		if d := time.Since(t0).Seconds(); i > 0 {
			best = max(best, flop/d/1e9)
		}
	}
	return best
}

// randomSource serves uniformly random token rows.
type randomSource struct {
	vocab, rows int
	seed        int64
}

func (r randomSource) TrainRows(block int, seed int64) ([][]int32, error) {
	rng := rand.New(rand.NewPCG(uint64(r.seed), uint64(seed)))
	out := make([][]int32, r.rows)
	for i := range out {
		out[i] = make([]int32, block+1)
		for j := range out[i] {
			out[i][j] = int32(rng.IntN(r.vocab))
		}
	}
	return out, nil
}

func (r randomSource) ValRows(int) ([][]int32, error) { return nil, nil }

// shardName is a train.shard value as reported: none when left empty.
func shardName(s string) string {
	if s == "" {
		return ShardNone
	}
	return s
}
