package main

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/extract"
	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/precision"
	"github.com/urfave/cli/v2"
)

// benchScanDefaults are bench scan's own values of the extract keys it
// takes as flags: a Pythia-style scan's 32 + 32 tokens.
var benchScanDefaults = extract.Config{Prefix: 32, Suffix: 32, BatchSize: 256, Precision: precision.FP32}

func benchScanCommand() *cli.Command {
	return &cli.Command{
		Name:      "scan",
		Usage:     "decide greedy exact match of many sequences by one teacher-forced pass and report sequences/s, beside generation",
		UsageText: "memo bench scan [--preset P --vocab V | --dim D ... | --model DIR] [--data RUN] [--sequences N --prefix P --suffix S --batch-size B --precision P --device D] [--generate K [--gen-batch B] [--plant F]] [--json]",
		Description: "Decides, for --sequences windows of --prefix + --suffix tokens, whether greedy\n" +
			"decoding after the prefix reproduces the suffix and how many of its leading tokens\n" +
			"it reproduces, as `memo extract --scan` does: one teacher-forced pass per\n" +
			"--batch-size windows, the argmax on the device. Windows are random tokens, or,\n" +
			"with --data RUN, consecutive windows of that run's documents. One warm-up pass,\n" +
			"then every window is timed; reports sequences/s, tokens/s and the GPU's peak\n" +
			"memory. --generate K also decodes the first K windows greedily with the attack's\n" +
			"generation path (--gen-batch prompts a batch) and compares, window by window, the\n" +
			"scan's matched length with generation's; --plant F first replaces a fraction F\n" +
			"of their suffixes by generation's own continuation cut at a random length, so that\n" +
			"exact and partial matches are compared too. Writes no files.",
		Flags: slices.Concat(shapeFlags(), []cli.Flag{
			&cli.StringFlag{Name: "model", Usage: "scan with the weights of `DIR` (a Hugging Face directory, a memo run or checkpoint) instead of a random model"},
			&cli.StringFlag{Name: "data", Usage: "take the windows from the documents of memo run `RUN` (its data/) instead of random tokens"},
			&cli.IntFlag{Name: "sequences", Value: 1000, Usage: "windows scanned `N` (>= 1)"},
			&cli.IntFlag{Name: "generate", Value: 0, Usage: "also decode the first `K` windows greedily by generation and compare (0: none)"},
			&cli.IntFlag{Name: "gen-batch", Value: 0, Usage: "prompts a generation batch `B` (0: --batch-size)"},
			&cli.Float64Flag{Name: "plant", Value: 0, Usage: "fraction `F` of the generated windows whose suffix becomes generation's own, cut at a random length"},
			&cli.IntFlag{Name: "threads", Value: 0, Usage: "libtorch threads `K` (0: libtorch's default)"},
			&cli.Int64Flag{Name: "seed", Value: 1, Usage: "seed of the weights, the windows and the planting"},
			benchDeviceFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object instead of a table"},
		}, benchFlags("extract", benchScanDefaults,
			// The attack's keys, read here as the fixed mode reads them: a
			// window is --prefix tokens of prompt and --suffix to match.
			benchKey{"prefix", "each window's prompt, in tokens (>= 1)"}, benchKey{"suffix", "each window's tokens after its prompt, to match (>= 1)"},
			benchKey{"batch_size", "windows a pass (>= 1)"},
			benchKey{"precision", "fp32, bf16 or fp16: the dtype of the linear layers' weights and products"})),
		Action: noArguments("bench scan", runBenchScan),
	}
}

func runBenchScan(c *cli.Context) error {
	if err := checkDevice("bench scan", c); err != nil {
		return err
	}
	ec := benchScanDefaults
	setBenchFlags(c, "extract", &ec, "prefix", "suffix", "batch_size", "precision")
	for _, f := range []struct {
		name string
		v    int
	}{{"sequences", c.Int("sequences")}, {"prefix", ec.Prefix}, {"suffix", ec.Suffix}, {"batch-size", ec.BatchSize}} {
		if f.v < 1 {
			return usageError("bench scan: --%s %d: must be >= 1", f.name, f.v)
		}
	}
	if err := atLeast(c, "bench scan", 0, "generate", "gen-batch"); err != nil {
		return err
	}
	if k := c.Int("generate"); k > c.Int("sequences") {
		return usageError("bench scan: --generate %d: more than --sequences %d", k, c.Int("sequences"))
	}
	if p := c.Float64("plant"); !(p >= 0 && p <= 1) {
		return usageError("bench scan: --plant %g: must be between 0 and 1", p)
	} else if p > 0 && c.Int("generate") == 0 {
		return usageError("bench scan: --plant needs --generate K (the planted suffixes are generation's)")
	}
	if _, err := precision.Parse(ec.Precision, false); err != nil {
		return usageError("bench scan: --precision: %v", err)
	}
	n := ec.Prefix + ec.Suffix
	mc, dir, err := benchModelOrDir(c, "bench scan", n, n, ec.BatchSize, fmt.Sprintf("--prefix %d --suffix %d --batch-size %d", ec.Prefix, ec.Suffix, ec.BatchSize))
	if err != nil {
		return err
	}
	if run := c.String("data"); run != "" {
		if _, err := data.Open(run); err != nil {
			return usageError("bench scan: --data %s: %v", run, oneLine(err.Error()))
		}
	}
	res, err := extract.BenchScan(extract.ScanBenchConfig{
		BenchConfig: extract.BenchConfig{Model: mc, ModelDir: dir, Prefix: ec.Prefix, Suffix: ec.Suffix, Batch: ec.BatchSize,
			Threads: c.Int("threads"), Seed: c.Int64("seed"), Device: c.String("device"), Precision: ec.Precision},
		Sequences: c.Int("sequences"), Data: c.String("data"), Generate: c.Int("generate"), GenBatch: c.Int("gen-batch"), Plant: c.Float64("plant"),
	})
	if err != nil {
		return err // a flag's fault is badinput's, exit 2
	}
	if c.Bool("json") {
		return json.NewEncoder(stdout).Encode(res)
	}
	fmt.Fprintf(stdout, "model        %s: %d params, vocab %d, %s, %s, %d threads\n", modelLabel(res.Preset, res.ModelDir), res.Params, res.Vocab, res.Device, res.Precision, res.Threads)
	src := "random tokens"
	if res.Data != "" {
		src = res.Data
	}
	fmt.Fprintf(stdout, "windows      %d of %d + %d tokens (%s), %d a pass\n", res.Sequences, res.Prefix, res.Suffix, src, res.Batch)
	fmt.Fprintf(stdout, "scan         %.0f sequences/s, %.0f tokens/s (%.2f s); exact %d, mean matched %.2f tokens\n", res.SequencesPerS, res.TokensPerS, res.ScanS, res.Exact, res.MeanMatched)
	if g := res.Generation; g != nil {
		fmt.Fprintf(stdout, "generation   %d windows, %d a batch: %.0f sequences/s, %.0f generated tokens/s (%.2f s); the scan at %.1fx its rate a window\n",
			g.Sequences, g.Batch, g.SequencesPerS, g.TokensPerS, g.GenerateS, g.ScanSpeedup)
		fmt.Fprintf(stdout, "agreement    %d planted, %d exact by generation; matched length differs on %d, exact match on %d", g.Planted, g.Exact, g.Differ, g.DifferExact)
		if len(g.FirstDiffer) > 0 {
			fmt.Fprintf(stdout, " (windows %v)", g.FirstDiffer)
		}
		fmt.Fprintln(stdout)
	}
	printMemory(res.Memory)
	return nil
}

// decodeRows is the file `memo bench decode --rows-out` writes and
// scripts/bench_generate.py --rows reads: the prompts decoded and, for
// greedy decoding, the tokens memo generated after each.
type decodeRows struct {
	Prompts   [][]int32 `json:"prompts"`
	Generated [][]int32 `json:"generated,omitempty"`
}

// writeDecodeRows writes bench decode's rows to f (a new file, checked
// before the bench ran).
func writeDecodeRows(f string, prompts, generated [][]int32) error {
	b, err := json.Marshal(decodeRows{Prompts: prompts, Generated: generated})
	if err != nil {
		return fmt.Errorf("bench decode: rows: %w", err)
	}
	if err := atomicfile.WriteFile(f, append(b, '\n')); err != nil {
		return fmt.Errorf("bench decode: --rows-out: %w", err)
	}
	return nil
}
