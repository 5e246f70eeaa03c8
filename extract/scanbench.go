package extract

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/precision"
)

// ScanBenchConfig describes `memo bench scan`: Sequences windows of Prefix
// + Suffix tokens, random ones or cut from a dataset, decided by the
// scan's teacher-forced pass (engine.GreedyMatch) Batch windows a pass,
// and, with Generate > 0, the first Generate of them decoded greedily by
// the attack's generation path as well, so that both times and both
// verdicts come from one command.
type ScanBenchConfig struct {
	BenchConfig // Model, ModelDir, Prefix, Suffix, Batch, Threads, Seed, Device, Precision
	Sequences   int
	// Data, when set, is a memo run directory whose data/ documents give
	// the windows (consecutive, non-overlapping, documents in doc_id
	// order, every split) instead of random tokens.
	Data string
	// Generate is how many of the windows (the first ones) generation also
	// decodes, GenBatch prompts a batch (0: Batch).
	Generate, GenBatch int
	// Plant is the fraction of the generated windows whose suffix is
	// replaced, before the scan, by greedy's own continuation: half of
	// them whole, half cut at a uniform length k (token k changed, the
	// rest as it was), so that the two verdicts are compared on exact and
	// partial matches, which random tokens under a random model almost
	// never give.
	Plant float64
}

// ScanBenchResult is what `memo bench scan --json` prints. The scan's
// rates count every window: SequencesPerS windows and TokensPerS their
// Prefix + Suffix tokens a second, warm-up excluded. Memory.DevicePeakBytes
// is the whole command's peak (scan and generation both).
type ScanBenchResult struct {
	Preset        string  `json:"preset"`
	ModelDir      string  `json:"model_dir,omitempty"`
	Data          string  `json:"data,omitempty"`
	Params        int64   `json:"params"`
	Vocab         int     `json:"vocab"`
	Sequences     int     `json:"sequences"`
	Prefix        int     `json:"prefix"`
	Suffix        int     `json:"suffix"`
	Batch         int     `json:"batch"`
	Device        string  `json:"device"`
	Precision     string  `json:"precision"`
	Threads       int     `json:"threads"`
	ScanS         float64 `json:"scan_s"`
	SequencesPerS float64 `json:"sequences_per_s"`
	TokensPerS    float64 `json:"tokens_per_s"`
	Exact         int     `json:"exact"`        // windows whose whole suffix greedy reproduces, by the scan
	MeanMatched   float64 `json:"mean_matched"` // mean matched suffix length, by the scan
	Memory
	Generation *ScanBenchGeneration `json:"generation,omitempty"`
}

// ScanBenchGeneration is the generation side of a scan bench: Sequences
// windows decoded greedily, Batch prompts at a time, in GenerateS seconds
// (a warm-up batch excluded); TokensPerS counts generated tokens, and
// SequencesPerS is what a scan's rate compares with. Exact counts the
// windows generation reproduces whole; Differ those where the scan's
// matched length (hence possibly its exact-match flag) is not
// generation's, DifferExact those where the flags themselves differ,
// FirstDiffer up to ten of their indices and FirstDifferMargins the
// scan's margins there (engine.Match: near 0, a near-tie that the two
// orders of arithmetic can break apart). Planted is how many suffixes
// were replaced by greedy's own continuation (ScanBenchConfig.Plant).
type ScanBenchGeneration struct {
	Sequences     int     `json:"sequences"`
	Batch         int     `json:"batch"`
	GenerateS     float64 `json:"generate_s"`
	SequencesPerS float64 `json:"sequences_per_s"`
	TokensPerS    float64 `json:"tokens_per_s"`
	Planted       int     `json:"planted"`
	Exact         int     `json:"exact"`
	Differ        int     `json:"differ"`
	DifferExact   int     `json:"differ_exact"`
	FirstDiffer   []int   `json:"first_differ,omitempty"`
	// FirstDifferMargins are the scan's margins of FirstDiffer's windows.
	FirstDifferMargins []float32 `json:"first_differ_margins,omitempty"`
	// ScanSpeedup is generation's seconds a window over the scan's.
	ScanSpeedup float64 `json:"scan_speedup"`
}

// BenchScan runs cfg's scan (and generation) and reports their rates and
// whether they agree. It writes no files.
func BenchScan(cfg ScanBenchConfig) (ScanBenchResult, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cfg.Prefix < 1 || cfg.Suffix < 1 || cfg.Batch < 1 || cfg.Sequences < 1 || cfg.Generate < 0 || cfg.Generate > cfg.Sequences ||
		cfg.GenBatch < 0 || cfg.Plant < 0 || cfg.Plant > 1 {
		return ScanBenchResult{}, fmt.Errorf("bench scan: sequences %d, prefix %d, suffix %d, batch %d: each must be >= 1; generate %d in [0, sequences], gen batch %d >= 0, plant %g in [0, 1]",
			cfg.Sequences, cfg.Prefix, cfg.Suffix, cfg.Batch, cfg.Generate, cfg.GenBatch, cfg.Plant)
	}
	if cfg.Plant > 0 && cfg.Generate == 0 {
		return ScanBenchResult{}, badinput.Errorf("bench scan: --plant needs --generate (the planted suffixes are generation's)")
	}
	torchx.Init(cfg.Threads, uint64(cfg.Seed))
	g, err := benchModel(cfg.BenchConfig, "bench scan")
	if err != nil {
		return ScanBenchResult{}, err
	}
	mc := g.Config()
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x7363616e)) // "scan"
	var windows [][]int32
	if cfg.Data != "" {
		windows, err = dataWindows(cfg.Data, cfg.Sequences, cfg.Prefix+cfg.Suffix, mc.Vocab)
		if err != nil {
			return ScanBenchResult{}, err
		}
	} else {
		windows = randomWindows(rng, cfg.Sequences, cfg.Prefix+cfg.Suffix, mc.Vocab)
	}
	res := ScanBenchResult{
		Preset: mc.Preset, ModelDir: cfg.ModelDir, Data: cfg.Data, Params: mc.Params(), Vocab: mc.Vocab, Sequences: cfg.Sequences,
		Prefix: cfg.Prefix, Suffix: cfg.Suffix, Batch: cfg.Batch, Device: deviceName(cfg.Device), Precision: precision.Name(cfg.Precision),
		Threads: torchx.Threads(),
	}
	var gen [][]int32
	if cfg.Generate > 0 {
		gb := cfg.GenBatch
		if gb == 0 {
			gb = cfg.Batch
		}
		var el time.Duration
		if gen, el, err = benchGenerate(g, windows[:cfg.Generate], cfg.Prefix, cfg.Suffix, gb); err != nil {
			return ScanBenchResult{}, err
		}
		res.Generation = &ScanBenchGeneration{Sequences: cfg.Generate, Batch: gb, GenerateS: el.Seconds(),
			SequencesPerS: float64(cfg.Generate) / el.Seconds(), TokensPerS: float64(cfg.Generate*cfg.Suffix) / el.Seconds()}
		res.Generation.Planted = plant(rng, windows[:cfg.Generate], gen, cfg.Prefix, cfg.Plant, mc.Vocab)
	}
	matched, el, err := benchGreedyMatch(g, windows, cfg.Prefix, cfg.Batch)
	if err != nil {
		return ScanBenchResult{}, err
	}
	res.ScanS = el.Seconds()
	res.SequencesPerS = float64(cfg.Sequences) / el.Seconds()
	res.TokensPerS = float64(cfg.Sequences*(cfg.Prefix+cfg.Suffix)) / el.Seconds()
	sum := 0
	for _, m := range matched {
		sum += m.Len
		if m.Len == cfg.Suffix {
			res.Exact++
		}
	}
	res.MeanMatched = float64(sum) / float64(len(matched))
	if gr := res.Generation; gr != nil {
		for i, ids := range gen {
			m := commonPrefix(ids, windows[i][cfg.Prefix:])
			if m == cfg.Suffix {
				gr.Exact++
			}
			if matched[i].Len != m {
				gr.Differ++
				if len(gr.FirstDiffer) < 10 {
					gr.FirstDiffer = append(gr.FirstDiffer, i)
					gr.FirstDifferMargins = append(gr.FirstDifferMargins, matched[i].Margin)
				}
			}
			if (matched[i].Len == cfg.Suffix) != (m == cfg.Suffix) {
				gr.DifferExact++
			}
		}
		gr.ScanSpeedup = (gr.GenerateS / float64(gr.Sequences)) / (res.ScanS / float64(res.Sequences))
	}
	res.Memory = memoryOf(g, cfg.Device)
	return res, nil
}

// randomWindows are n windows of length tokens drawn uniformly from [0, vocab).
func randomWindows(rng *rand.Rand, n, length, vocab int) [][]int32 {
	out := make([][]int32, n)
	for i := range out {
		out[i] = make([]int32, length)
		for j := range out[i] {
			out[i][j] = int32(rng.IntN(vocab))
		}
	}
	return out
}

// dataWindows are the first n windows of length consecutive tokens of the
// run's documents (every split, in the dataset's order; each document cut
// into as many non-overlapping windows as it holds). Too few windows, or a
// token the model's vocabulary lacks, is bad input.
func dataWindows(run string, n, length, vocab int) ([][]int32, error) {
	ds, err := data.Open(run)
	if err != nil {
		return nil, err
	}
	docs, err := ds.Docs("")
	if err != nil {
		return nil, fmt.Errorf("bench scan: --data %s: %w", run, err)
	}
	out := make([][]int32, 0, n)
	for _, d := range docs {
		for lo := 0; lo+length <= len(d.IDs) && len(out) < n; lo += length {
			w := d.IDs[lo : lo+length]
			for _, id := range w {
				if id < 0 || int(id) >= vocab {
					return nil, badinput.Errorf("bench scan: --data %s: document %d holds token %d, outside the model's vocabulary [0, %d): another tokenizer's data", run, d.ID, id, vocab)
				}
			}
			out = append(out, w)
		}
	}
	if len(out) < n {
		return nil, badinput.Errorf("bench scan: --data %s: its documents hold %d windows of %d tokens, fewer than --sequences %d", run, len(out), length, n)
	}
	return out, nil
}

// plant replaces the suffixes of a fraction of the generated windows
// (ScanBenchConfig.Plant) and returns how many. Each planted window gets
// a copy of its window first, so data windows (slices of a document) are
// not written through.
func plant(rng *rand.Rand, windows, gen [][]int32, prefix int, frac float64, vocab int) int {
	n := 0
	for i, ids := range gen {
		if frac == 0 || rng.Float64() >= frac || vocab < 2 {
			continue
		}
		w := append([]int32(nil), windows[i]...)
		suffix := w[prefix:]
		// Half whole copies (exact matches), half cut at a uniform length.
		k := len(suffix)
		if rng.IntN(2) == 0 {
			k = rng.IntN(len(suffix))
		}
		copy(suffix, ids[:k])
		if k < len(suffix) {
			// Any token but greedy's: an offset in [1, vocab) away.
			suffix[k] = int32((int(ids[k]) + 1 + rng.IntN(vocab-1)) % vocab)
		}
		windows[i] = w
		n++
	}
	return n
}

// benchGreedyMatch is every window's matched length by engine.GreedyMatch,
// batch windows a pass, and the passes' time after one unmeasured pass of
// the first batch (the device's first kernels, the allocator's first
// blocks). The ids come back to the host each pass, which waits for the
// device: the time is the device's.
func benchGreedyMatch(g *model.GPT, windows [][]int32, prefix, batch int) ([]engine.Match, time.Duration, error) {
	pre := make([]int, len(windows))
	for i := range pre {
		pre[i] = prefix
	}
	if _, err := engine.GreedyMatch(g, windows[:min(batch, len(windows))], pre[:min(batch, len(windows))]); err != nil {
		return nil, 0, fmt.Errorf("bench scan: %w", err)
	}
	torchx.Collect()
	out := make([]engine.Match, 0, len(windows))
	t0 := time.Now()
	for lo := 0; lo < len(windows); lo += batch {
		hi := min(lo+batch, len(windows))
		m, err := engine.GreedyMatch(g, windows[lo:hi], pre[lo:hi])
		if err != nil {
			return nil, 0, fmt.Errorf("bench scan: %w", err)
		}
		out = append(out, m...)
		torchx.Collect()
	}
	return out, time.Since(t0), nil
}

// benchGenerate decodes suffix tokens greedily after each window's first
// prefix tokens with the attack's path (the KV-cache stepper, greedy's
// argmax), batch prompts at a time, after one unmeasured batch.
func benchGenerate(g *model.GPT, windows [][]int32, prefix, suffix, batch int) ([][]int32, time.Duration, error) {
	dc := DefaultConfig()
	dc.Decoding = DecodeGreedy
	dec := decoder{cfg: dc}
	prompts := make([][]int32, len(windows))
	for i, w := range windows {
		prompts[i] = w[:prefix]
	}
	// One stepper, as an attack's: steps captured as CUDA graphs replay
	// in later batches of the same shape (engine.Stepper.Close).
	st := engine.NewStepper(g, true)
	defer st.Release()
	run := func(ps [][]int32) ([][]int32, error) {
		gs, err := dec.guesses(st, ps, suffix, 1, nil)
		if err != nil {
			return nil, fmt.Errorf("bench scan: generation: %w", err)
		}
		torchx.Collect()
		return topIDs(gs), nil
	}
	if _, err := run(prompts[:min(batch, len(prompts))]); err != nil {
		return nil, 0, err
	}
	out := make([][]int32, 0, len(prompts))
	t0 := time.Now()
	for lo := 0; lo < len(prompts); lo += batch {
		ids, err := run(prompts[lo:min(lo+batch, len(prompts))])
		if err != nil {
			return nil, 0, err
		}
		out = append(out, ids...)
	}
	return out, time.Since(t0), nil
}
