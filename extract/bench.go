package extract

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/precision"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
)

// BenchConfig describes a decoding-throughput measurement: random prompts
// through a randomly initialised model, decoded by the attack's own path
// (engine.Stepper with the KV cache, and the decoder of Config.Decoding).
type BenchConfig struct {
	Model model.Config
	// ModelDir, when set, decodes with that model's weights instead of a
	// random one (a Hugging Face directory or a memo run or checkpoint,
	// checkpoint.LoadModel); Model is then ignored.
	ModelDir string
	Prefix   int    // prompt tokens per row
	Suffix   int    // tokens generated per row
	Batch    int    // prompts decoded together
	Decoding string // greedy, sample or beam
	// Samples is the number of samples drawn per prompt when sampling: the
	// batch then decodes Batch·Samples rows, each with its own generator.
	Samples int
	// Replicate runs each of a prompt's samples through the prompt pass as
	// a row of its own, as the attack did before it ran a prompt once and
	// expanded its KV cache to the samples (the baseline of that saving).
	Replicate bool
	Beams     int // beam width of beam search
	// Temperature, TopK and TopP are sampling's warpers (extract's keys of
	// those names); a zero Temperature or TopP keeps extract's default, 1.
	Temperature float64
	TopK        int
	TopP        float64
	// DecodeOn is extract.decode_on: where sampling draws and beam search
	// ranks ("" is auto).
	DecodeOn string
	Reps     int // measured runs
	Warmup   int // unmeasured runs first
	Threads  int // libtorch threads; 0 keeps the default
	Seed     int64
	// Device is where the model decodes: "cpu" (also when empty), "cuda"
	// or "cuda:N".
	Device string
	// Precision is an extract.precision (fp32, bf16, fp16) or bf16-mixed:
	// bfloat16 products of float32 weights, as training computes them.
	Precision string
	// Approximation decodes under extract.approximation's method ("" is
	// exact decoding, unmeasured).
	Approximation string
	// CountOps counts libtorch's operator calls over the measured runs
	// (BenchResult.OpCounts); counting slows them.
	CountOps bool
	// CUDAGraphs replays greedy decoding's token steps as CUDA graphs
	// (engine.SetCUDAGraphs), captured in the warm-up run.
	CUDAGraphs bool
}

// BenchResult is what `memo bench decode --json` prints. Times are seconds
// per run: PrefillS for the prompt pass (Stepper.Start), DecodeS for the
// rest (every later step, the decoder's choices, and the collection after
// the batch, as the attack does). TokensPerS counts the tokens an attack
// gets back: Batch·Suffix, times Samples when sampling (every sample is a
// guess); a beam search returns one continuation per prompt.
type BenchResult struct {
	Preset string `json:"preset"`
	// ModelDir is BenchConfig.ModelDir: trained weights, not random ones.
	ModelDir string `json:"model_dir,omitempty"`
	Params   int64  `json:"params"`
	Vocab    int    `json:"vocab"`
	Prefix   int    `json:"prefix"`
	Suffix   int    `json:"suffix"`
	Batch    int    `json:"batch"`
	Rows     int    `json:"rows"` // rows decoded: Batch, ·Samples, or ·Beams
	// SharedPrompt: each prompt ran once and its cache was expanded to its
	// samples (false with Replicate or one sample).
	SharedPrompt bool `json:"shared_prompt"`

	Decoding string `json:"decoding"`
	// Temperature, TopK and TopP are the sampling warpers the run used
	// (extract's defaults, unused, for greedy and beam search).
	Temperature float64 `json:"temperature"`
	TopK        int     `json:"top_k"`
	TopP        float64 `json:"top_p"`
	// DecodeOn is where sampling drew or beam search ranked: "host" or
	// "device" (extract.decode_on resolved for the model's device); empty
	// for greedy decoding.
	DecodeOn  string `json:"decode_on,omitempty"`
	Device    string `json:"device"`
	Precision string `json:"precision"`
	Threads   int    `json:"threads"`
	// HostProcs is GOMAXPROCS: the cores sampling and beam search pick a
	// step's rows on (engine.Continue, beam search's prompts).
	HostProcs  int     `json:"host_procs"`
	Reps       int     `json:"reps"`
	TokensPerS float64 `json:"tokens_per_s"`
	PrefillS   float64 `json:"prefill_s"`
	DecodeS    float64 `json:"decode_s"`
	// Approximation is the method; KVBytesPerToken its mean key/value bytes
	// read per decode step (approx.Stats; 0 unmeasured: exact without
	// --approximation, and quantspec), SpecAccept QuantSpec's acceptance.
	// QuantSpec's prefill is inside DecodeS.
	Approximation   string  `json:"approximation,omitempty"`
	KVBytesPerToken float64 `json:"kv_bytes_per_token,omitempty"`
	SpecAccept      float64 `json:"spec_accept,omitempty"`
	// CUDAGraphs is whether token steps were replayed as CUDA graphs,
	// GraphsCaptured how many the stepper held at the end (0 where every
	// capture failed and the steps ran one call at a time).
	CUDAGraphs     bool `json:"cuda_graphs,omitempty"`
	GraphsCaptured int  `json:"graphs_captured,omitempty"`
	Memory
	// Prompts are the decoded prompts (Batch of Prefix ids), and, for
	// exact greedy decoding, Generated the last measured run's tokens of
	// each (memo bench decode --rows-out), so that a peer decodes the
	// same prompts and its tokens can be compared.
	Prompts   [][]int32 `json:"-"`
	Generated [][]int32 `json:"-"`
	// OpCounts, with BenchConfig.CountOps, are the libtorch operator calls
	// and autograd nodes of all Reps measured runs together, by name
	// (torchx.CountOps): Reps·Suffix token steps, the prompt pass counted
	// in the first of each run's. The rates above then include counting's
	// cost.
	OpCounts *torchx.OpCounts `json:"op_counts,omitempty"`
}

// Memory is what a bench's model took: WeightBytes its weights as held
// (model.GPT.WeightBytes: bf16 and fp16 hold the linear weights at 2
// bytes), DevicePeakBytes the most bytes of tensors on the GPU at once
// during the bench, loading included (torch.cuda.max_memory_allocated's
// figure; omitted on the CPU, where /usr/bin/time -v measures the process).
type Memory struct {
	WeightBytes     int64 `json:"weight_bytes"`
	DevicePeakBytes int64 `json:"device_peak_bytes,omitempty"`
}

// memoryOf is g's Memory on device (a --device value).
func memoryOf(g *model.GPT, device string) Memory {
	m := Memory{WeightBytes: g.WeightBytes()}
	if dev, err := torchx.ResolveDevice(device); err == nil && dev.IsCuda() {
		m.DevicePeakBytes = torchx.GPUPeakAllocated(dev.Value)
	}
	return m
}

// timedStepper records how long the prompt pass took.
type timedStepper struct {
	stepper
	prefill time.Duration
}

func (t *timedStepper) Start(prompts [][]int32, maxNew int) ([][]float32, error) {
	t0 := time.Now()
	out, err := t.stepper.Start(prompts, maxNew)
	t.prefill += time.Since(t0)
	return out, err
}

// timedGreedyStepper is a timedStepper over a greedyStepper, so that the
// bench decodes greedily as an attack does: the argmax on the device.
type timedGreedyStepper struct {
	*timedStepper
	greedy greedyStepper
}

func (t *timedGreedyStepper) StartGreedy(prompts [][]int32, maxNew int) ([]int32, error) {
	t0 := time.Now()
	out, err := t.greedy.StartGreedy(prompts, maxNew)
	t.prefill += time.Since(t0)
	return out, err
}

func (t *timedGreedyStepper) NextGreedy(tokens []int32) ([]int32, error) {
	return t.greedy.NextGreedy(tokens)
}

func (t *timedGreedyStepper) ContinueGreedy(first []int32, n int) ([][]int32, error) {
	return t.greedy.ContinueGreedy(first, n)
}

// timedDeviceStepper is a timedGreedyStepper that also samples and
// searches beams on its device, as an attack's stepper does.
type timedDeviceStepper struct {
	*timedGreedyStepper
	dev deviceDecoder
}

func (t *timedDeviceStepper) StartOnDevice(prompts [][]int32, per, maxNew int) (bool, error) {
	t0 := time.Now()
	ok, err := t.dev.StartOnDevice(prompts, per, maxNew)
	t.prefill += time.Since(t0)
	return ok, err
}

func (t *timedDeviceStepper) ContinueSampled(n int, w engine.Warpers, u [][]float64) ([]engine.Sampled, bool, error) {
	return t.dev.ContinueSampled(n, w, u)
}

func (t *timedDeviceStepper) ContinueBeams(n, width int) ([]engine.Beam, bool, error) {
	return t.dev.ContinueBeams(n, width)
}

func (t *timedDeviceStepper) Device() gotch.Device { return t.dev.Device() }

// timed wraps st to time its prompt passes, keeping its greedy steps, its
// sampling and its beam search on the device.
func timed(st stepper) (stepper, *timedStepper) {
	t := &timedStepper{stepper: st}
	g, ok := st.(greedyStepper)
	if !ok {
		return t, t
	}
	tg := &timedGreedyStepper{timedStepper: t, greedy: g}
	if ds, ok := st.(deviceDecoder); ok {
		return &timedDeviceStepper{timedGreedyStepper: tg, dev: ds}, t
	}
	return tg, t
}

// benchModel is the model Bench decodes with: cfg.ModelDir's, whose
// context must hold prefix + suffix tokens, or a random one of cfg.Model
// with its context stretched to them, in cfg.Precision (checked first).
func benchModel(cfg BenchConfig, cmd string) (*model.GPT, error) {
	training := cfg.Precision == precision.BF16Mixed
	dev, err := torchx.ResolveDeviceFor("--device", cfg.Device)
	if err != nil {
		return nil, err
	}
	if err := precision.Check(cfg.Precision, training, dev); err != nil {
		return nil, badinput.Errorf("%s: --precision: %v", cmd, err)
	}
	g, err := benchWeights(cfg, dev, cmd)
	if err != nil {
		return nil, err
	}
	if err := precision.Set(g, cfg.Precision, training); err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	return g, nil
}

// benchWeights loads or draws benchModel's weights: a loaded model's in
// an inference precision from the start, as extraction loads them.
func benchWeights(cfg BenchConfig, dev gotch.Device, cmd string) (*model.GPT, error) {
	n := cfg.Prefix + cfg.Suffix
	if cfg.ModelDir != "" {
		held := cfg.Precision
		if held == precision.BF16Mixed {
			held = precision.FP32
		}
		g, _, err := checkpoint.LoadModel(cfg.ModelDir, cfg.Device, held)
		if err != nil {
			return nil, fmt.Errorf("%s: --model %s: %w", cmd, cfg.ModelDir, err)
		}
		if c := g.Config().Context; c < n {
			need := fmt.Sprintf("--prefix %d + --suffix %d need %d", cfg.Prefix, cfg.Suffix, n)
			if cmd == "bench score" {
				need = fmt.Sprintf("--seq %d needs %d (the tokens scored and the one before them)", cfg.Prefix, n)
			}
			return nil, badinput.Errorf("%s: --model %s holds %d positions; %s", cmd, cfg.ModelDir, c, need)
		}
		return g, nil
	}
	mc := cfg.Model
	if mc.Context < n {
		mc.Context = n
	}
	mc, err := mc.Resolve()
	if err != nil {
		return nil, err
	}
	return model.New(nn.NewVarStore(dev).Root(), mc)
}

// Bench decodes cfg.Warmup + cfg.Reps batches of random prompts and
// reports the measured runs' throughput. It writes no files.
func Bench(cfg BenchConfig) (BenchResult, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cfg.Prefix < 1 || cfg.Suffix < 1 || cfg.Batch < 1 || cfg.Reps < 1 || cfg.Warmup < 0 {
		return BenchResult{}, fmt.Errorf("bench decode: prefix %d, suffix %d, batch %d, reps %d: each must be >= 1 (warm-up %d >= 0)",
			cfg.Prefix, cfg.Suffix, cfg.Batch, cfg.Reps, cfg.Warmup)
	}
	dc := DefaultConfig()
	dc.Decoding, dc.Seed, dc.Beams, dc.TopK, dc.DecodeOn = cfg.Decoding, cfg.Seed, max(cfg.Beams, 1), cfg.TopK, cfg.DecodeOn
	if cfg.Temperature != 0 {
		dc.Temperature = cfg.Temperature
	}
	if cfg.TopP != 0 {
		dc.TopP = cfg.TopP
	}
	if err := dc.Validate(); err != nil {
		return BenchResult{}, fmt.Errorf("bench decode: %w", err)
	}
	samples := 1
	switch cfg.Decoding {
	case DecodeGreedy, DecodeBeam:
	case DecodeSample:
		samples = max(cfg.Samples, 1)
	default:
		return BenchResult{}, fmt.Errorf("bench decode: decoding %q: must be greedy, sample or beam", cfg.Decoding)
	}
	torchx.Init(cfg.Threads, uint64(cfg.Seed))
	g, err := benchModel(cfg, "bench decode")
	if err != nil {
		return BenchResult{}, err
	}
	if cfg.CUDAGraphs {
		defer engine.SetCUDAGraphs(engine.CUDAGraphs())
		engine.SetCUDAGraphs(true)
	}
	mc := g.Config()
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x62656e6368)) // "bench"
	shared := samples > 1 && !cfg.Replicate
	rows := make([][]int32, 0, cfg.Batch*samples)
	rngs := make([]*rand.Rand, 0, cfg.Batch*samples)
	for p := 0; p < cfg.Batch; p++ {
		prompt := make([]int32, cfg.Prefix)
		for j := range prompt {
			prompt[j] = int32(rng.IntN(mc.Vocab))
		}
		for s := 0; s < samples; s++ {
			if s == 0 || !shared {
				rows = append(rows, prompt)
			}
			rngs = append(rngs, guessRNG(cfg.Seed, int64(p), s))
		}
	}
	per := 1
	if shared {
		per = samples
	}
	dec := decoder{cfg: dc}
	ba, err := newBenchApprox(cfg.Approximation, g, rows, cfg.Decoding)
	if err != nil {
		return BenchResult{}, err
	}
	defer ba.close()
	var prefill, all time.Duration
	var generated [][]int32
	var opCount torchx.OpCounter
	defer opCount.Stop() // on an error's return; the counts are not reported then
	for r := 0; r < cfg.Warmup+cfg.Reps; r++ {
		if r == cfg.Warmup {
			ba.bytes, ba.accept, ba.runs = 0, 0, 0
			if cfg.CountOps {
				if err := opCount.Start(); err != nil {
					return BenchResult{}, err
				}
			}
		}
		st, err := ba.stepper(g)
		if err != nil {
			return BenchResult{}, fmt.Errorf("bench decode: %w", err)
		}
		lm, tm := timed(st)
		t0 := time.Now()
		if spec, serr := ba.speculative(g, rows, cfg.Suffix); spec {
			err = serr
		} else if cfg.Decoding == DecodeBeam {
			_, err = dec.beamSearch(lm, rows, cfg.Suffix, dc.Beams)
		} else {
			var gs [][]Guess
			gs, err = dec.guesses(lm, rows, cfg.Suffix, per, rngs)
			if cfg.Decoding == DecodeGreedy && cfg.Approximation == "" {
				generated = topIDs(gs)
			}
		}
		if err != nil {
			return BenchResult{}, fmt.Errorf("bench decode: %w", err)
		}
		ba.record(st)
		torchx.Collect()
		if r >= cfg.Warmup {
			all += time.Since(t0)
			prefill += tm.prefill
		}
	}
	ops, err := opCount.Stop()
	if err != nil {
		return BenchResult{}, err
	}
	n := float64(cfg.Reps)
	var decodeOn string
	if cfg.Decoding != DecodeGreedy {
		decodeOn = OnHost
		if dec.decodesOn(g.Device()) {
			decodeOn = OnDevice
		}
	}
	decoded := len(rows) * per
	if cfg.Decoding == DecodeBeam {
		decoded *= dc.Beams
	}
	return BenchResult{
		Preset: mc.Preset, ModelDir: cfg.ModelDir, Params: mc.Params(), Vocab: mc.Vocab, Prefix: cfg.Prefix, Suffix: cfg.Suffix,
		Batch: cfg.Batch, Rows: decoded, SharedPrompt: shared, Decoding: cfg.Decoding, Temperature: dc.Temperature, TopK: dc.TopK, TopP: dc.TopP, DecodeOn: decodeOn, Device: deviceName(cfg.Device), Precision: precision.Name(cfg.Precision), Threads: torchx.Threads(), HostProcs: runtime.GOMAXPROCS(0), Reps: cfg.Reps,
		TokensPerS:    float64(len(rows)*per*cfg.Suffix) * n / all.Seconds(),
		PrefillS:      prefill.Seconds() / n,
		DecodeS:       (all - prefill).Seconds() / n,
		Approximation: cfg.Approximation, KVBytesPerToken: ba.mean(ba.bytes), SpecAccept: ba.mean(ba.accept),
		Memory: memoryOf(g, cfg.Device), Prompts: rows, Generated: generated, OpCounts: ops,
		CUDAGraphs: cfg.CUDAGraphs, GraphsCaptured: ba.graphsCaptured(),
	}, nil
}

// deviceName spells a device as results record it: "cpu" for the empty
// default.
func deviceName(d string) string {
	if d == "" {
		return "cpu"
	}
	return d
}

// ScoreBenchResult is what `memo bench score --json` prints: the rate of
// teacher-forced scoring, the pass behind every loss-based membership
// score, in tokens scored per second (Batch·Seq per run).
type ScoreBenchResult struct {
	Preset     string  `json:"preset"`
	ModelDir   string  `json:"model_dir,omitempty"`
	Params     int64   `json:"params"`
	Vocab      int     `json:"vocab"`
	Seq        int     `json:"seq"`
	Batch      int     `json:"batch"`
	Device     string  `json:"device"`
	Precision  string  `json:"precision"`
	Threads    int     `json:"threads"`
	Reps       int     `json:"reps"`
	TokensPerS float64 `json:"tokens_per_s"`
	RunS       float64 `json:"run_s"`
	// MeanNLL is the measured runs' mean token NLL, to compare precisions
	// and devices on the same weights and rows.
	MeanNLL float64 `json:"mean_nll"`
	Memory
	// Rows are the scored rows, Seq + 1 ids each (memo bench score
	// --rows-out), so that a peer scores the same tokens.
	Rows [][]int32 `json:"-"`
}

// BenchScore scores cfg.Batch random rows of cfg.Prefix + 1 tokens (the
// NLL of cfg.Prefix tokens each) with engine.TokenNLL, which eval's
// scores use: one forward pass, the log-softmax over the vocabulary in
// float32, every token's NLL copied back. cfg.Warmup runs, then cfg.Reps
// measured ones. It writes no files.
func BenchScore(cfg BenchConfig) (ScoreBenchResult, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cfg.Prefix < 1 || cfg.Batch < 1 || cfg.Reps < 1 || cfg.Warmup < 0 {
		return ScoreBenchResult{}, fmt.Errorf("bench score: seq %d, batch %d, reps %d: each must be >= 1 (warm-up %d >= 0)",
			cfg.Prefix, cfg.Batch, cfg.Reps, cfg.Warmup)
	}
	torchx.Init(cfg.Threads, uint64(cfg.Seed))
	cfg.Suffix = 1 // rows of Prefix + 1 tokens
	g, err := benchModel(cfg, "bench score")
	if err != nil {
		return ScoreBenchResult{}, err
	}
	mc := g.Config()
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x73636f7265)) // "score"
	rows := make([][]int32, cfg.Batch)
	for i := range rows {
		rows[i] = make([]int32, cfg.Prefix+1)
		for j := range rows[i] {
			rows[i][j] = int32(rng.IntN(mc.Vocab))
		}
	}
	var all time.Duration
	var sum float64
	var count int
	for r := 0; r < cfg.Warmup+cfg.Reps; r++ {
		t0 := time.Now()
		nll, err := engine.TokenNLL(g, rows)
		if err != nil {
			return ScoreBenchResult{}, fmt.Errorf("bench score: %w", err)
		}
		torchx.Collect()
		if r < cfg.Warmup {
			continue
		}
		all += time.Since(t0)
		for _, row := range nll {
			for _, v := range row {
				sum += float64(v)
				count++
			}
		}
	}
	n := float64(cfg.Reps)
	return ScoreBenchResult{
		Preset: mc.Preset, ModelDir: cfg.ModelDir, Params: mc.Params(), Vocab: mc.Vocab, Seq: cfg.Prefix, Batch: cfg.Batch,
		Device: deviceName(cfg.Device), Precision: precision.Name(cfg.Precision), Threads: torchx.Threads(), Reps: cfg.Reps,
		TokensPerS: float64(cfg.Batch*cfg.Prefix) * n / all.Seconds(), RunS: all.Seconds() / n, MeanNLL: sum / float64(count),
		Memory: memoryOf(g, cfg.Device), Rows: rows,
	}, nil
}
