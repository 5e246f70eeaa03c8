package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/dist"
	"github.com/memo-research/memo/experiments"
	"github.com/memo-research/memo/extract"
	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/memlimit"
	"github.com/memo-research/memo/internal/outguard"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/precision"
	"github.com/memo-research/memo/train"
	"github.com/urfave/cli/v2"
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure this machine: training throughput and MFU, decoding, scoring and scan throughput, checkpoint I/O (and write a corpus to time data build)",
		Subcommands: []*cli.Command{{
			Name:      "corpus",
			Usage:     "write a JSONL corpus for measuring `memo data build` (scripts/bench-data.sh)",
			UsageText: "memo bench corpus --bytes SIZE --doc-bytes SIZE [--seed S] --out FILE",
			Description: "Documents of about --doc-bytes of text (half to one and a half times it) made of\n" +
				"paragraphs over 200 characters drawn from the fetched Moby-Dick, Brown, King James\n" +
				"Bible and State of the Union corpora (`memo data fetch` first), with a marker\n" +
				"[n.j.i] every 20 words so that no two documents share a 50-token window, until\n" +
				"--bytes of JSONL are written: the last document is written whole, so the file ends\n" +
				"up to one document (1.5 × --doc-bytes and a paragraph) past --bytes. SIZE: bytes, or with a\n" +
				"K, M or G suffix (powers of 1000).",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "bytes", Value: "1G", Usage: "corpus size `SIZE` in JSONL bytes (reached, then the document under way finished)"},
				&cli.StringFlag{Name: "doc-bytes", Value: "23K", Usage: "mean document text `SIZE`"},
				&cli.Int64Flag{Name: "seed", Value: 1, Usage: "seed of the paragraph draws"},
				&cli.StringFlag{Name: "out", Usage: "JSONL `FILE` to write, a new file (required; written under a temporary name, then renamed)"},
				&cli.StringFlag{Name: "cache", Usage: "cache `DIR` holding the fetched corpora (default $MEMO_CACHE or ~/.cache/memo)"},
			},
			Action: noArguments("bench corpus", runBenchCorpus),
		}, {
			Name:      "train",
			Usage:     "train a few steps on random tokens and report tokens/s, GFLOP/s and MFU",
			UsageText: "memo bench train [--preset P --vocab V | --dim D --layers L --heads H --kv-heads K --ffn F --vocab V --untied] [--seq T --batch B --steps N --threads K --precision fp32|bf16-mixed --device D --nproc N --shard S --shard-group K --activation-checkpointing] [--count-ops] [--profile-kernels] [--json]",
			Description: "Measures this process's fp32 matrix-multiply peak (best of 5 products of\n" +
				"2048×2048 matrices), then trains the model on random tokens with the real\n" +
				"training step (forward, goldfish-free cross-entropy, backward, clipping, AdamW)\n" +
				"and reports achieved GFLOP/s (6·params + 12·layers·seq·d per token; an untied\n" +
				"input embedding, a lookup, is not in params) over that peak as MFU, with the\n" +
				"time per step in each phase. With --nproc N the step runs on N ranks\n" +
				"(train.shard = --shard), the peak is rank 0's times the ranks (on GPUs, the\n" +
				"GPUs they use), and rank 0 also reports its bytes of\n" +
				"parameters, gradients and AdamW state, and each collective's calls, payload and\n" +
				"bytes sent per step (with --shard-group, within its group and across groups).\n" +
				"Writes no files. TinyLlama-1.1B's shape: --dim 2048\n" +
				"--layers 22 --heads 32 --kv-heads 4 --ffn 5632 --vocab 32000 --untied.",
			Flags: slices.Concat(shapeFlags(), []cli.Flag{
				&cli.IntFlag{Name: "seq", Value: 256, Usage: "tokens per row `T` (>= 1)"},
				&cli.IntFlag{Name: "batch", Aliases: []string{"batch-size"}, Value: 16, Usage: "rows per step `B` (>= 1)"},
				&cli.IntFlag{Name: "steps", Value: 20, Usage: "measured optimizer steps `N` (>= 1), after 2 unmeasured warm-up steps"},
				&cli.Int64Flag{Name: "seed", Value: 1, Usage: "seed of the weights and the random tokens"},
				benchDeviceFlag(),
				&cli.IntFlag{Name: "nproc", Value: 1, Usage: "data-parallel ranks `N` on this machine (Gloo on loopback); --batch is split among them"},
				countOpsFlag(),
				&cli.BoolFlag{Name: "profile-kernels", Usage: "record the measured steps' kernels with libtorch's profiler and print the costliest by name: on a GPU each CUDA kernel's device time (where the GPU bounds a step, its time goes in these kernels), on the CPU libtorch's operators with the time of those they call; recording slows the host, so the rates are not the unrecorded ones"},
				&cli.BoolFlag{Name: "json", Usage: "print one JSON object instead of a table"},
			}, benchFlags("train", benchTrainDefaults,
				benchKey{"precision", "fp32, or bf16-mixed (bfloat16 products of float32 master weights)"},
				benchKey{"threads", "(per rank; with --nproc, 0 divides the cores among the ranks)"},
				benchKey{"shard", strings.Join(train.ShardModes, ", ") + " (needs --nproc >= 2)"},
				benchKey{"shard_group", "with --shard full, a secondary copy of the weights within groups of K ranks (must divide --nproc; 0: no groups)"},
				benchKey{"activation_checkpointing", "recompute each block before its backward pass (one block's activations held, about a third more compute)"})),
			Action: noArguments("bench train", runBenchTrain),
		}, {
			Name:      "decode",
			Usage:     "decode random prompts as an attack does (a random model, or --model DIR) and report tokens/s",
			UsageText: "memo bench decode [--preset P --vocab V | --model DIR] [--prefix N --suffix M --batch B --threads K --decoding D --samples S --temperature T --top-k K --top-p P --approximation A --device D] [--cuda-graphs] [--count-ops] [--json]",
			Description: "Decodes --batch random prompts of --prefix tokens by --suffix tokens with a\n" +
				"randomly initialised model, through extraction's own decoding path (the KV-cache\n" +
				"stepper and the greedy, sampling or beam decoder), once to warm up and then\n" +
				"--reps times, and reports generated tokens/s with the seconds per run spent on\n" +
				"the prompt pass (prefill) and on the rest (decode). With --decoding sample each\n" +
				"prompt is sampled --samples times in the same batch: the prompt runs once and\n" +
				"its KV cache is copied to its samples, as extract.samples does (--replicate runs\n" +
				"every sample's prompt instead, the baseline). --model DIR decodes with that\n" +
				"model's weights (a Hugging Face directory, a memo run or checkpoint) instead of\n" +
				"a random model's. --cuda-graphs (greedy, on a GPU) captures each token step as\n" +
				"a CUDA graph in the warm-up run and replays it in the measured ones, where\n" +
				"launching a step's kernels one call at a time bounds the time. Writes no files but\n" +
				"--rows-out's.",
			Flags: slices.Concat([]cli.Flag{
				&cli.StringFlag{Name: "model", Usage: "decode with the weights of `DIR` (a Hugging Face directory, a memo run or checkpoint) instead of a random --preset model"},
				&cli.BoolFlag{Name: "cuda-graphs", Usage: "with --decoding greedy on --device cuda, replay each token step as a captured CUDA graph (as MEMO_CUDA_GRAPHS=on; experimental: on one H200 at batch 256, 2.53x the steps without)"},
				&cli.IntFlag{Name: "prefix", Value: 256, Usage: "prompt tokens `N` (>= 1)"},
				&cli.IntFlag{Name: "suffix", Value: 50, Usage: "generated tokens `M` (>= 1)"},
				&cli.IntFlag{Name: "batch", Aliases: []string{"batch-size"}, Value: 8, Usage: "prompts decoded together `B` (>= 1)"},
				&cli.IntFlag{Name: "threads", Value: 0, Usage: "libtorch threads `K` (0: libtorch's default)"},
				&cli.BoolFlag{Name: "replicate", Usage: "with --samples > 1, run the prompt once per sample instead of once per prompt"},
				&cli.IntFlag{Name: "reps", Value: 3, Usage: "measured runs (>= 1), after one warm-up run"},
				&cli.Int64Flag{Name: "seed", Value: 1, Usage: "seed of the weights, the prompts and sampling"},
				benchDeviceFlag(),
				&cli.StringFlag{Name: "precision", Value: "fp32", Usage: "`P`: fp32, bf16 or fp16 (weights and products in that dtype, as extract.precision), or bf16-mixed (bfloat16 products of float32 weights, as train.precision)"},
				&cli.StringFlag{Name: "rows-out", Usage: "write the prompts (and, greedy, the last run's generated ids) to `FILE` as JSON {\"prompts\": [...], \"generated\": [...]} for scripts/bench_generate.py --rows"},
				countOpsFlag(),
				&cli.BoolFlag{Name: "json", Usage: "print one JSON object instead of a table"},
			}, benchFlags("model", benchShapeDefaults, benchKey{"preset", ""}, benchKey{"vocab", ""}),
				benchFlags("extract", benchDecodeDefaults, benchKey{"decoding", ""}, benchKey{"samples", "guesses per prompt, with --decoding sample"},
					benchKey{"beams", "(with --decoding beam; 1 to 64)"},
					benchKey{"temperature", "(with --decoding sample; > 0)"}, benchKey{"top_k", "the K most likely tokens sampling draws from, with --decoding sample (0: no limit)"},
					benchKey{"top_p", "nucleus sampling's probability mass, in (0, 1], with --decoding sample (1: no limit)"},
					benchKey{"decode_on", "where --decoding sample draws and beam search ranks: host, device (the model's), or auto (device on a GPU)"}, benchKey{"approximation", "exact, kv8, kv4, loki-r8-k0.25, sift-q0.9, quantspec-g4; the bench also reports KV bytes read per token"})),
			Action: noArguments("bench decode", runBenchDecode),
		}, {
			Name:      "score",
			Usage:     "score random rows as the membership scores do and report tokens/s",
			UsageText: "memo bench score [--preset P --vocab V | --dim D ... | --model DIR] [--seq T --batch B --reps N --precision P --device D] [--json]",
			Description: "Scores --batch random rows of --seq tokens (the NLL of every token given the\n" +
				"ones before it) with the pass eval's loss-based scores use: one forward pass, the\n" +
				"log-softmax over the vocabulary in float32, the NLLs copied back. One warm-up run,\n" +
				"then --reps measured ones; reports scored tokens/s and the mean NLL. --model DIR\n" +
				"scores with that model's weights (a Hugging Face directory, a memo run or\n" +
				"checkpoint) instead of a random model's. scripts/bench_score.py runs the same\n" +
				"work in PyTorch and transformers (--rows-out FILE writes the scored rows as JSON\n" +
				"for its --rows, so both score the same tokens). Writes no other files.",
			Flags: append(shapeFlags(),
				&cli.StringFlag{Name: "model", Usage: "score with the weights of `DIR` (a Hugging Face directory, a memo run or checkpoint) instead of a random model"},
				&cli.IntFlag{Name: "seq", Value: 1024, Usage: "tokens scored per row `T` (>= 1)"},
				&cli.IntFlag{Name: "batch", Aliases: []string{"batch-size"}, Value: 4, Usage: "rows per forward pass `B` (>= 1)"},
				&cli.IntFlag{Name: "reps", Value: 5, Usage: "measured runs `N` (>= 1), after one warm-up run"},
				&cli.IntFlag{Name: "threads", Value: 0, Usage: "libtorch threads `K` (0: libtorch's default)"},
				&cli.Int64Flag{Name: "seed", Value: 1, Usage: "seed of the weights and the rows"},
				benchDeviceFlag(),
				&cli.StringFlag{Name: "precision", Value: "fp32", Usage: "`P`: fp32, bf16 or fp16 (weights and products in that dtype, as extract.precision)"},
				&cli.StringFlag{Name: "rows-out", Usage: "write the scored rows (seq + 1 token ids each) to `FILE` as a JSON array of arrays"},
				&cli.BoolFlag{Name: "json", Usage: "print one JSON object instead of a table"},
			),
			Action: noArguments("bench score", runBenchScore),
		}, benchScanCommand(), {
			Name:      "checkpoint",
			Usage:     "save and load a generated model (and AdamW state) as training does and report MB/s and memory",
			UsageText: "memo bench checkpoint [--preset P --vocab V | --dim D --layers L --heads H --kv-heads K --ffn F --vocab V --untied] [--optimizer] [--dir DIR] [--json]",
			Description: "Builds a model of the given shape on the CPU with generated values, saves it\n" +
				"(with --optimizer also AdamW's two moments per parameter, as a training checkpoint\n" +
				"holds them) under --dir with the checkpoint code training uses, loads it back as a\n" +
				"resume does, checks values, and reports the sizes, seconds and MB/s of the save,\n" +
				"of the sha256 verification a load starts with and of the load, the largest Go\n" +
				"heap seen and the process's peak resident memory. The checkpoint is removed\n" +
				"afterwards. TinyLlama-1.1B's shape: --dim 2048 --layers 22 --heads 32 --kv-heads 4\n" +
				"--ffn 5632 --vocab 32000 --untied.",
			Flags: append(shapeFlags(),
				&cli.BoolFlag{Name: "optimizer", Usage: "save and load AdamW's moments too (three times the bytes)"},
				&cli.StringFlag{Name: "dir", Usage: "write the checkpoint under `DIR` (default: the system's temporary directory)"},
				&cli.BoolFlag{Name: "json", Usage: "print one JSON object instead of a table"},
			),
			Action: noArguments("bench checkpoint", runBenchCheckpoint),
		}},
	}
}

func runBenchCheckpoint(c *cli.Context) error {
	mc, err := benchModel(c, "bench checkpoint", 2048)
	if err != nil {
		return err
	}
	if d := c.String("dir"); d != "" {
		if st, err := os.Stat(d); err != nil {
			return usageError("bench checkpoint: --dir %s: does not exist (it writes under an existing directory)", d)
		} else if !st.IsDir() {
			return usageError("bench checkpoint: --dir %s: not a directory", d)
		}
		// Its scratch checkpoint, a gigabyte for a 1B model, never goes
		// among a run's checkpoints or into the cache.
		if where := outguard.Inside(d, data.ResolveCacheDir("")); where != "" {
			return usageError("bench checkpoint: --dir %s: is in %s; it never writes there: name a scratch directory elsewhere", d, where)
		}
	}
	res, err := checkpoint.Bench(checkpoint.BenchConfig{Model: mc, Optimizer: c.Bool("optimizer"), Dir: c.String("dir")})
	if errors.Is(err, checkpoint.ErrBenchDir) {
		// --dir /proc: a directory nothing can be made in.
		return usageError("bench checkpoint: --dir %s: %v", cmp.Or(c.String("dir"), os.TempDir()), err)
	}
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return json.NewEncoder(stdout).Encode(res)
	}
	fmt.Fprintf(stdout, "checkpoint   %d params, %.0f MB on disk (optimizer: %v), %.0f MB of tensors in memory\n", res.Params, float64(res.Bytes)/1e6, c.Bool("optimizer"), res.TensorMB)
	fmt.Fprintf(stdout, "save         %.1f s, %.0f MB/s\n", res.SaveS, res.SaveMBs)
	reading := fmt.Sprintf("reading %.0f MB/s", res.ReadMBs)
	if res.ReadMBs == 0 {
		reading = "reading too quick to time apart from it"
	}
	fmt.Fprintf(stdout, "load         %.1f s, %.0f MB/s (sha256 verification %.1f s; %s)\n", res.LoadS, res.LoadMBs, res.VerifyS, reading)
	fmt.Fprintf(stdout, "memory       Go heap at most %.0f MB, peak RSS %.0f MB; %d values checked\n", res.GoHeapMaxMB, res.PeakRSSMB, res.CheckedValue)
	return nil
}

func benchDeviceFlag() cli.Flag {
	return &cli.StringFlag{Name: "device", Value: "cpu", Usage: "where the model runs: `D` = cpu, cuda or cuda:N"}
}

// checkDevice refuses, as bad input, a --device this process cannot use.
func checkDevice(cmd string, c *cli.Context) error {
	if _, err := torchx.ResolveDeviceFor("--device", c.String("device")); err != nil {
		return usageError("%s: %v", cmd, err)
	}
	return nil
}

func runBenchDecode(c *cli.Context) error {
	if err := checkDevice("bench decode", c); err != nil {
		return err
	}
	for _, f := range []string{"vocab", "prefix", "suffix", "batch", "samples", "reps"} {
		if min := map[string]int{"vocab": 2}[f]; c.Int(f) < max(min, 1) {
			return usageError("bench decode: --%s %d: must be >= %d", typedName(c, f), c.Int(f), max(min, 1))
		}
	}
	// The decoding flags are extract's keys: extract's rules check them.
	ec := extract.DefaultConfig()
	setBenchFlags(c, "extract", &ec, "decoding", "samples", "beams", "temperature", "top_k", "top_p", "decode_on")
	if err := ec.Validate(); err != nil {
		return usageError("bench decode: %s", keysAsFlags("extract", err.Error()))
	}
	dec := ec.Decoding
	if err := decodingFlagsFit(c, "bench decode", dec); err != nil {
		return err
	}
	if c.Bool("replicate") && ec.Samples <= 1 {
		return usageError("bench decode: --replicate runs the prompt once per sample: it needs --samples > 1 (got %d)", ec.Samples)
	}
	if c.Bool("cuda-graphs") && (dec != extract.DecodeGreedy || !strings.HasPrefix(c.String("device"), "cuda") || c.String("approximation") != "") {
		return usageError("bench decode: --cuda-graphs: captured token steps are greedy decoding's on --device cuda without --approximation (got --decoding %s --device %s)", dec, c.String("device"))
	}
	mc := model.Config{Preset: c.String("preset"), Vocab: c.Int("vocab"), Context: c.Int("prefix") + c.Int("suffix"), Seed: c.Int64("seed")}
	dir := c.String("model")
	if dir != "" && (c.IsSet("preset") || c.IsSet("vocab")) {
		return usageError("bench decode: --model %s sets the model; leave --preset and --vocab unset", dir)
	}
	if dir == "" {
		if err := checkBenchPass("bench decode", mc, 4, c.Int("batch"), c.Int("prefix")+c.Int("suffix"), fmt.Sprintf("--prefix %d --suffix %d --batch %d", c.Int("prefix"), c.Int("suffix"), c.Int("batch"))); err != nil {
			return err
		}
	}
	if err := checkBenchModelDir("bench decode", dir); err != nil {
		return err
	}
	if f := c.String("rows-out"); f != "" {
		if err := checkNewFile("bench decode: --rows-out", f); err != nil {
			return err
		}
	}
	res, err := extract.Bench(extract.BenchConfig{Model: mc, ModelDir: dir, Prefix: c.Int("prefix"), Suffix: c.Int("suffix"),
		Batch: c.Int("batch"), Decoding: dec, Samples: ec.Samples, Replicate: c.Bool("replicate"), Beams: ec.Beams,
		Temperature: ec.Temperature, TopK: ec.TopK, TopP: ec.TopP, DecodeOn: ec.DecodeOn,
		Reps: c.Int("reps"), Warmup: 1, Threads: c.Int("threads"), Seed: c.Int64("seed"), Approximation: c.String("approximation"),
		Device: c.String("device"), Precision: c.String("precision"), CountOps: c.Bool("count-ops"), CUDAGraphs: c.Bool("cuda-graphs")})
	if err != nil {
		return err // a flag's fault is badinput's, exit 2
	}
	if f := c.String("rows-out"); f != "" {
		if err := writeDecodeRows(f, res.Prompts, res.Generated); err != nil {
			return err
		}
	}
	if c.Bool("json") {
		return json.NewEncoder(stdout).Encode(res)
	}
	fmt.Fprintf(stdout, "model        %s: %d params, vocab %d, %s, %d threads, %d host cores\n", modelLabel(res.Preset, res.ModelDir), res.Params, res.Vocab, res.Device, res.Threads, res.HostProcs)
	printBLASAdvice(res.Device)
	decoding := res.Decoding
	switch decoding {
	case extract.DecodeSample:
		decoding = fmt.Sprintf("sample (temperature %g, top-k %d, top-p %g) on the %s", res.Temperature, res.TopK, res.TopP, res.DecodeOn)
	case extract.DecodeBeam:
		decoding = "beam search on the " + res.DecodeOn
	}
	if res.CUDAGraphs {
		decoding += fmt.Sprintf(", token steps replayed as CUDA graphs (%d captured)", res.GraphsCaptured)
	}
	fmt.Fprintf(stdout, "attack       %s, %d prompts (%d rows) of %d tokens, %d generated\n", decoding, res.Batch, res.Rows, res.Prefix, res.Suffix)
	fmt.Fprintf(stdout, "throughput   %.0f tokens/s; per run %.3f s prefill + %.3f s decode\n", res.TokensPerS, res.PrefillS, res.DecodeS)
	if res.Approximation != "" {
		if strings.HasPrefix(res.Approximation, extract.SpecQuantSpec) {
			// Its drafts' KV reads are not counted (a 0 read as none);
			// only it drafts, so the others print no acceptance (a 0.000
			// read as every draft refused).
			fmt.Fprintf(stdout, "approx       %s: QuantSpec acceptance %.3f (KV bytes read not measured)\n", res.Approximation, res.SpecAccept)
		} else {
			fmt.Fprintf(stdout, "approx       %s: %.0f KV bytes read per token\n", res.Approximation, res.KVBytesPerToken)
		}
	}
	printOpCounts(res.OpCounts, res.Reps*res.Suffix, "token step")
	printMemory(res.Memory)
	return nil
}

// printMemory is the memory line of bench decode and bench score.
func printMemory(m extract.Memory) {
	line := fmt.Sprintf("memory       weights %.0f MB as held", float64(m.WeightBytes)/1e6)
	if m.DevicePeakBytes > 0 {
		line += fmt.Sprintf("; at most %.0f MB of tensors on the GPU", float64(m.DevicePeakBytes)/1e6)
	}
	fmt.Fprintln(stdout, line)
}

// keysAsFlags writes the keys of table that msg names (extract.top_k =
// 5: …) as the bench flags that set them (--top-k 5: …).
func keysAsFlags(table, msg string) string {
	return regexp.MustCompile(regexp.QuoteMeta(table)+`\.([a-z_]+)( =)?`).ReplaceAllStringFunc(msg, func(m string) string {
		key := strings.TrimSuffix(strings.TrimPrefix(m, table+"."), " =")
		return "--" + strings.ReplaceAll(key, "_", "-")
	})
}

// benchModelOrDir is the model bench score and bench scan run: --model
// DIR's, beside which no shape flag may be set, or a random one of the
// shape flags with a context of at least context tokens, whose pass of
// batch rows of positions tokens must fit in memory (passFlags names
// those flags in the message when not).
func benchModelOrDir(c *cli.Context, cmd string, context, positions, batch int, passFlags string) (mc model.Config, dir string, err error) {
	if dir = c.String("model"); dir != "" {
		for _, k := range shapeKeys {
			if f := strings.ReplaceAll(k, "_", "-"); c.IsSet(f) {
				return mc, "", usageError("%s: --model %s sets the model; leave --%s unset", cmd, dir, f)
			}
		}
		return mc, dir, checkBenchModelDir(cmd, dir)
	}
	if mc, err = benchModel(c, cmd, context); err != nil {
		return mc, "", err
	}
	if err := checkBenchPass(cmd, mc, 4, batch, positions, passFlags); err != nil {
		return mc, "", err
	}
	mc.Seed = c.Int64("seed")
	return mc, "", nil
}

func runBenchScore(c *cli.Context) error {
	if err := checkDevice("bench score", c); err != nil {
		return err
	}
	if err := atLeast(c, "bench score", 1, "seq", "batch", "reps"); err != nil {
		return err
	}
	if _, err := precision.Parse(c.String("precision"), false); err != nil {
		return usageError("bench score: --precision: %v", err)
	}
	if f := c.String("rows-out"); f != "" {
		if err := checkNewFile("bench score: --rows-out", f); err != nil {
			return err
		}
	}
	mc, dir, err := benchModelOrDir(c, "bench score", c.Int("seq")+1, c.Int("seq"), c.Int("batch"), fmt.Sprintf("--seq %d --batch %d", c.Int("seq"), c.Int("batch")))
	if err != nil {
		return err
	}
	res, err := extract.BenchScore(extract.BenchConfig{Model: mc, ModelDir: dir, Prefix: c.Int("seq"), Batch: c.Int("batch"),
		Reps: c.Int("reps"), Warmup: 1, Threads: c.Int("threads"), Seed: c.Int64("seed"), Device: c.String("device"),
		Precision: c.String("precision")})
	if err != nil {
		return err // a flag's fault is badinput's, exit 2
	}
	if f := c.String("rows-out"); f != "" {
		b, err := json.Marshal(res.Rows)
		if err != nil {
			return fmt.Errorf("bench score: rows: %w", err)
		}
		if err := atomicfile.WriteFile(f, append(b, '\n')); err != nil {
			return fmt.Errorf("bench score: --rows-out: %w", err)
		}
	}
	if c.Bool("json") {
		return json.NewEncoder(stdout).Encode(res)
	}
	fmt.Fprintf(stdout, "model        %s: %d params, vocab %d, %s, %s, %d threads\n", modelLabel(res.Preset, res.ModelDir), res.Params, res.Vocab, res.Device, res.Precision, res.Threads)
	printBLASAdvice(res.Device)
	fmt.Fprintf(stdout, "rows         %d of %d tokens, %d runs\n", res.Batch, res.Seq, res.Reps)
	fmt.Fprintf(stdout, "throughput   %.0f tokens/s (%.3f s a run), mean NLL %.4f\n", res.TokensPerS, res.RunS, res.MeanNLL)
	printMemory(res.Memory)
	return nil
}

func runBenchTrain(c *cli.Context) error {
	if err := checkDevice("bench train", c); err != nil {
		return err
	}
	for _, f := range []string{"vocab", "seq", "batch", "steps"} {
		if min := map[string]int{"vocab": 2}[f]; c.Int(f) < max(min, 1) {
			return usageError("bench train: --%s %d: must be >= %d", typedName(c, f), c.Int(f), max(min, 1))
		}
	}
	mc, err := benchModel(c, "bench train", c.Int("seq"))
	if err != nil {
		return err
	}
	if err := checkBenchPass("bench train", mc, 16, c.Int("batch"), c.Int("seq"), fmt.Sprintf("--seq %d --batch %d", c.Int("seq"), c.Int("batch"))); err != nil {
		return err
	}
	mc.Seed = c.Int64("seed")
	if _, err := precision.Parse(c.String("precision"), true); err != nil {
		return usageError("bench train: --precision: %v", err)
	}
	n, shard := c.Int("nproc"), c.String("shard")
	tc := train.DefaultConfig()
	tc.Shard, tc.ShardGroup, tc.ActivationCheckpointing = shard, c.Int("shard-group"), c.Bool("activation-checkpointing")
	if err := tc.Validate(); err != nil {
		return usageError("bench train: --shard/--shard-group: %v", err)
	}
	if n < 1 {
		return usageError("bench train: --nproc %d: must be >= 1", n)
	}
	if err := tc.CheckShardRanks(n); err != nil {
		return usageError("bench train: --nproc %d: %v", n, err)
	}
	if c.Int("batch")%n != 0 {
		return usageError("bench train: --batch %d: must be a multiple of --nproc %d", c.Int("batch"), n)
	}
	if n > 1 && !dist.Launched() {
		return launchBenchTrain(c, n)
	}
	bc := train.BenchConfig{Model: mc, Seq: c.Int("seq"), Batch: c.Int("batch"), Steps: c.Int("steps"),
		Warmup: 2, Threads: c.Int("threads"), Seed: c.Int64("seed"), Precision: c.String("precision"), Device: c.String("device"), Shard: shard, ShardGroup: tc.ShardGroup,
		ActivationCheckpointing: tc.ActivationCheckpointing, CountOps: c.Bool("count-ops"), ProfileKernels: c.Bool("profile-kernels")}
	bc.OnMeasure = restartCPUProfile
	var group *dist.Group
	if n > 1 {
		g, err := dist.Init(c.Context, dist.Unset())
		if err != nil {
			return err
		}
		group, bc.Group = g, g
	}
	res, err := train.Bench(bc)
	if err != nil {
		return err
	}
	if group != nil {
		if err := group.Close(); err != nil {
			return err
		}
		if group.Rank() != 0 {
			return nil
		}
	}
	if c.Bool("json") {
		enc := json.NewEncoder(stdout)
		return enc.Encode(res)
	}
	checkpointing := ""
	if res.ActivationCheckpointing {
		checkpointing = ", activation checkpointing"
	}
	fmt.Fprintf(stdout, "model        %s: %d params, vocab %d, seq %d, batch %d, %s, %d threads, %s%s\n", modelLabel(res.Preset, ""), res.Params, res.Vocab, res.Seq, res.Batch, res.Device, res.Threads, res.Precision, checkpointing)
	printBLASAdvice(res.Device)
	fmt.Fprintf(stdout, "throughput   %.0f tokens/s, %.3f s/step (forward+backward %.3f, optimizer %.3f, collect %.3f)\n",
		res.TokensPerS, res.StepS, res.ModelS, res.OptimizerS, res.CollectS)
	if res.GPUModelS > 0 {
		fmt.Fprintf(stdout, "on the GPU   forward+backward %.3f s, reduce+clip+AdamW %.3f s a step (CUDA events)\n", res.GPUModelS, res.GPUUpdateS)
	}
	if res.ElementwiseKernels != "" {
		fmt.Fprintf(stdout, "kernels      memo's rotary, SwiGLU, residual sums and norms, copies and loss: %s\n", res.ElementwiseKernels)
	}
	fmt.Fprintf(stdout, "compute      %.1f GFLOP/s of a %.1f GFLOP/s measured matmul: measured-matmul MFU %.3f\n", res.GFLOPs, res.PeakGFLOPs, res.MFU)
	fmt.Fprintln(stdout, datasheetLine(res))
	if res.GPUPeakBytes > 0 {
		fmt.Fprintf(stdout, "GPU memory   at most %.2f GB held for tensors\n", float64(res.GPUPeakBytes)/1e9)
	}
	printOpCounts(res.OpCounts, res.Steps, "step")
	printKernels(res)
	if res.Nproc == 1 {
		fmt.Fprintf(stdout, "memory       resident set after the last step %.0f MB, at most %.0f MB\n", float64(res.RSS)/1e6, float64(res.PeakRSS)/1e6)
	}
	if res.Nproc > 1 {
		st, un := res.State, res.Unsharded
		fmt.Fprintf(stdout, "rank 0 state %d ranks, shard %s: params %d B, grads %d B, optimizer %d B (unsharded %d B, %d B, %d B; padding %d elements)\n",
			res.Nproc, res.Shard, st.Params, st.Grads, st.Optimizer, un.Params, un.Grads, un.Optimizer, st.Padding)
		fmt.Fprintf(stdout, "             resident set after the last step %.0f MB, at most %.0f MB\n", float64(res.RSS)/1e6, float64(res.PeakRSS)/1e6)
		if st.Secondary > 0 || st.Gathered > 0 {
			fmt.Fprintf(stdout, "             secondary copy %d B (groups of %d); one stage's gathered weights and gradients %d B at most\n",
				st.Secondary, res.ShardGroup, st.Gathered)
		}
		for _, t := range res.Collectives {
			scope := t.Scope
			if scope == "" {
				scope = "all ranks"
			}
			fmt.Fprintf(stdout, "per step     %-15s %-14s %d calls, %d B handed, %.0f B sent\n", t.Op, scope, t.Calls, t.PayloadBytes, t.SentBytes)
		}
	}
	return nil
}

// launchBenchTrain runs this bench train command as n ranks on loopback
// and prints rank 0's output (the others print nothing), without the
// launcher's "[rank 0] " prefix, so --json stays one JSON object.
func launchBenchTrain(c *cli.Context, n int) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	argv := []string{"bench", "train"}
	for _, f := range []string{"preset", "vocab", "seq", "batch", "steps", "precision", "device", "seed", "nproc", "shard", "shard-group",
		"dim", "layers", "heads", "kv-heads", "ffn"} {
		if c.IsSet(f) || (f != "dim" && f != "layers" && f != "heads" && f != "kv-heads" && f != "ffn") {
			argv = append(argv, "--"+f, c.String(f))
		}
	}
	for _, f := range []string{"untied", "activation-checkpointing", "count-ops", "profile-kernels"} {
		if c.Bool(f) {
			argv = append(argv, "--"+f)
		}
	}
	threads := c.Int("threads")
	if threads == 0 {
		threads = max(1, runtime.NumCPU()/n)
	}
	argv = append(argv, "--threads", strconv.Itoa(threads))
	if c.Bool("json") {
		argv = append(argv, "--json")
	}
	var out strings.Builder
	if err := dist.LaunchExe(c.Context, n, exe, argv, dist.LaunchOptions{Stdout: &out}); err != nil {
		return fmt.Errorf("bench train on %d processes: %w", n, err)
	}
	for _, line := range strings.SplitAfter(out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "[rank 0] "); ok {
			fmt.Fprint(stdout, rest)
		}
	}
	return nil
}

func runBenchCorpus(c *cli.Context) error {
	size := map[string]int64{}
	for _, f := range []string{"bytes", "doc-bytes"} {
		n, err := parseSize(c.String(f))
		if err != nil || n < 1 {
			return usageError("bench corpus: --%s %q: want a size >= 1 such as 1G, 23K or 1000", f, c.String(f))
		}
		size[f] = n
	}
	out := c.String("out")
	if out == "" {
		// Checked here, not by urfave/cli's Required, which prints the
		// help on stdout and exits 1.
		return usageError("bench corpus: --out FILE is required")
	}
	if err := checkNewFile("bench corpus: --out", out); err != nil {
		return err
	}
	cache, err := cacheDir(c, "bench corpus")
	if err != nil {
		return err
	}
	var docs int
	var n int64
	err = atomicfile.Write(out, func(w io.Writer) error {
		var werr error
		docs, n, werr = data.WriteBenchCorpus(w, data.BenchCorpusConfig{CacheDir: cache,
			Bytes: size["bytes"], DocBytes: int(size["doc-bytes"]), Seed: c.Int64("seed")})
		return werr
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d documents, %d bytes\n", out, docs, n)
	return nil
}

// checkNewFile is the guard's rule for a writer that replaces nothing:
// path must not exist (a link to anything, or to nothing, counts) and must
// not lie in a place memo made for something else (a checkpoint, a run's
// data/ or checkpoints/, the cache), links resolved.
func checkNewFile(flag, path string) error {
	if path == "-" {
		// Not stdout: the command's own output goes there.
		return usageError("%s -: writes a file, not standard output: name a new file", flag)
	}
	if err := checkNewOutput(flag, path, "file"); err != nil {
		return err
	}
	// A typo in the directory would otherwise be made into directories.
	if dir := filepath.Dir(path); !isDir(dir) {
		return usageError("%s %s: directory %s does not exist", flag, path, dir)
	}
	return nil
}

// checkNewOutput refuses an output path (a "file" or a "directory") that
// exists or lies in memo's cache.
func checkNewOutput(flag, path, kind string) error {
	if where := outguard.Inside(path, data.ResolveCacheDir("")); where != "" {
		return usageError("%s %s: is in %s; it never writes there: name a %s elsewhere", flag, path, where, kind)
	}
	if outguard.Exists(path) {
		return usageError("%s %s: exists; it writes a new %s and never replaces one: remove it or name another", flag, path, kind)
	}
	return nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// parseSize reads a byte count with an optional K, M or G suffix (powers
// of 1000, as corpus sizes are quoted).
func parseSize(s string) (int64, error) {
	mult := int64(1)
	if k := strings.IndexAny(s, "KMGkmg"); k >= 0 && k == len(s)-1 {
		mult = map[byte]int64{'k': 1e3, 'm': 1e6, 'g': 1e9}[s[k]|0x20]
		s = s[:k]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mult, err
}

// The benches' own defaults for the spec keys they take as flags.
var (
	benchShapeDefaults  = model.Config{Preset: "small", Vocab: 4096}
	benchTrainDefaults  = train.Config{Precision: "fp32", Shard: train.ShardNone}
	benchDecodeDefaults = extract.Config{Decoding: extract.DecodeGreedy, Samples: 1, Beams: 4, Temperature: 1, TopP: 1}
)

// shapeKeys are the model keys of a bench's random model.
var shapeKeys = []string{"preset", "vocab", "dim", "layers", "heads", "kv_heads", "ffn", "untied"}

// shapeFlags choose a model for bench train and bench checkpoint: a
// --preset, or an explicit shape from --dim (a Hugging Face model's, such as
// TinyLlama-1.1B's), with --vocab either way.
func shapeFlags() []cli.Flag {
	return benchFlags("model", benchShapeDefaults,
		benchKey{"preset", "(ignored when --dim is set)"},
		benchKey{"vocab", "(>= 2)"},
		benchKey{"dim", "(with --layers and --heads instead of --preset)"},
		benchKey{"layers", ""}, benchKey{"heads", ""}, benchKey{"kv_heads", ""}, benchKey{"ffn", ""}, benchKey{"untied", ""})
}

// benchModel is the model shapeFlags name, covering context positions, or a
// usage error naming cmd.
func benchModel(c *cli.Context, cmd string, context int) (model.Config, error) {
	mc := benchShapeDefaults
	setBenchFlags(c, "model", &mc, shapeKeys...)
	mc.Context = context
	if c.IsSet("dim") {
		mc.Preset = ""
	} else if c.IsSet("layers") || c.IsSet("heads") || c.IsSet("kv-heads") || c.IsSet("ffn") {
		return model.Config{}, usageError("%s: --layers, --heads, --kv-heads and --ffn need --dim", cmd)
	}
	if _, err := mc.Resolve(); err != nil {
		return model.Config{}, usageError("%s: %v", cmd, err)
	}
	// bench scan's top-2 (and any choice among tokens) needs two: --vocab
	// 1 failed inside libtorch.
	if c.IsSet("vocab") && mc.Vocab < 2 {
		return model.Config{}, usageError("%s: --vocab %d: must be >= 2", cmd, mc.Vocab)
	}
	return mc, nil
}

// checkBenchPass refuses a random model of config mc (its preset or
// shape) whose weights, at perParam bytes each, and one pass of batch rows
// of seq positions would not fit in memory, before anything is allocated;
// flags names the flags that set the pass.
func checkBenchPass(cmd string, mc model.Config, perParam float64, batch, seq int, flags string) error {
	r, err := mc.Resolve()
	if err != nil {
		return usageError("%s: %v", cmd, err)
	}
	if err := memlimit.CheckPass(cmd+": "+flags, r, perParam, batch, seq); err != nil {
		return usageError("%v", err)
	}
	return nil
}

// decodingFlagsFit refuses a decoding's own flag given under another
// decoding (--top-k under greedy): dropped without a word, it labelled
// the bench plain greedy, and gave extract's attack another file name
// for the same greedy completions.
func decodingFlagsFit(c *cli.Context, cmd, dec string) error {
	for _, f := range []struct{ flag, needs string }{
		{"temperature", extract.DecodeSample}, {"top-k", extract.DecodeSample}, {"top-p", extract.DecodeSample}, {"beams", extract.DecodeBeam},
	} {
		if c.IsSet(f.flag) && dec != f.needs {
			return usageError("%s: --%s is --decoding %s's setting (got --decoding %s)", cmd, f.flag, f.needs, dec)
		}
	}
	return nil
}

// checkBenchModelDir checks a --model DIR: a Hugging Face directory, or a
// memo run or checkpoint.
func checkBenchModelDir(cmd, dir string) error {
	if dir == "" || checkpoint.IsHFDir(dir) {
		return nil
	}
	if _, err := checkpoint.Resolve(dir); err != nil {
		return modelDirError(cmd, dir, "checkpoint", err)
	}
	return nil
}

// modelLabel names a bench's model: its directory, else its preset, else
// "custom" (a shape from --dim).
func modelLabel(preset, dir string) string {
	switch {
	case dir != "":
		return dir
	case preset != "":
		return preset
	}
	return "custom"
}

// printBLASAdvice says, on the CPU, that OpenBLAS runs a kernel older
// than the CPU (experiments.BLASAdvice): the rates printed are that
// kernel's.
func printBLASAdvice(device string) {
	if device != "cpu" {
		return
	}
	if advice := experiments.BLASAdvice(); advice != "" {
		fmt.Fprintf(stdout, "blas         %s\n", advice)
	}
}

// printKernels prints bench train's costliest kernels a step, if it
// profiled them (--profile-kernels).
func printKernels(res train.BenchResult) {
	if len(res.Kernels) == 0 || res.Steps < 1 {
		return
	}
	n := float64(res.Steps)
	if res.KernelSPerStep > 0 {
		fmt.Fprintf(stdout, "kernels      %.1f ms of CUDA kernels a step (profiled: the rates above include the profiler's cost); the costliest:\n", 1e3*res.KernelSPerStep)
	} else {
		fmt.Fprintf(stdout, "operators    the costliest libtorch operators a step, each with the operators it calls (profiled):\n")
	}
	for _, k := range res.Kernels[:min(15, len(res.Kernels))] {
		share := ""
		if res.KernelSPerStep > 0 {
			share = fmt.Sprintf(" %5.1f %%", 100*k.Secs/n/res.KernelSPerStep)
		}
		name := k.Name
		if len(name) > 90 {
			name = name[:87] + "..."
		}
		fmt.Fprintf(stdout, "  %8.3f ms%s %6.0f calls  %s\n", 1e3*k.Secs/n, share, float64(k.Calls)/n, name)
	}
}

// countOpsFlag is --count-ops of the benches that count libtorch's
// operator calls.
func countOpsFlag() cli.Flag {
	return &cli.BoolFlag{Name: "count-ops", Usage: "count libtorch's operator calls over the measured work, by name (where the host bounds a GPU's step, its time goes in these calls); counting slows the work, so its rates are not the uncounted ones"}
}

// printOpCounts prints the operator counts of n units of work (steps,
// decoded tokens), if any were counted.
func printOpCounts(c *torchx.OpCounts, n int, unit string) {
	if c == nil || n < 1 {
		return
	}
	calls, outer, nodes := c.Calls()
	per := func(x int64) float64 { return float64(x) / float64(n) }
	fmt.Fprintf(stdout, "libtorch ops %.0f operator calls a %s: %.0f made by memo or an autograd node, the rest inside them; %.0f autograd nodes (counting slows the %s: the rates above include it)\n",
		per(calls), unit, per(outer), per(nodes), unit)
	top := slices.Clone(c.Ops)
	slices.SortStableFunc(top, func(a, b torchx.OpCount) int { return cmp.Compare(b.Outer, a.Outer) })
	var parts []string
	for _, o := range top[:min(8, len(top))] {
		if o.Outer > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", o.Name, per(o.Outer)))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(stdout, "most called  %s (calls a %s by memo or a node)\n", strings.Join(parts, " · "), unit)
	}
	if c.KernelCalls > 0 {
		fmt.Fprintf(stdout, "memo kernels %.0f calls a %s of memo's own kernels, not libtorch operators\n", per(c.KernelCalls), unit)
	}
}

// noArguments refuses an argument to a command that takes flags alone
// (cmd, e.g. "bench train"): "memo bench train --preset nano extra"
// benchmarked and exited 0, the extra word unread.
func noArguments(cmd string, action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usageError("%s: unexpected argument %q: it takes flags alone (memo %s --help)", cmd, c.Args().First(), cmd)
		}
		return action(c)
	}
}
