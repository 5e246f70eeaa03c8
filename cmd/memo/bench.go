package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/train"
	"github.com/urfave/cli/v2"
)

func init() { register(benchCommand()) }

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure this machine: training throughput and model FLOPs utilisation",
		Subcommands: []*cli.Command{{
			Name:      "train",
			Usage:     "train a few steps on random tokens and report tokens/s, GFLOP/s and MFU",
			UsageText: "memo bench train [--preset P --vocab V --seq T --batch B --steps N --threads K] [--json]",
			Description: "Measures this process's fp32 matrix-multiply peak (best of 5 products of\n" +
				"2048×2048 matrices), then trains the model on random tokens with the real\n" +
				"training step (forward, goldfish-free cross-entropy, backward, clipping, AdamW)\n" +
				"and reports achieved GFLOP/s (6·params + 12·layers·seq·d per token) over that\n" +
				"peak as MFU, with the time per step in each phase. Writes no files.",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "preset", Value: "small", Usage: "model size `P`: " + strings.Join(model.Presets(), ", ")},
				&cli.IntFlag{Name: "vocab", Value: 4096, Usage: "vocabulary size `V` (>= 2)"},
				&cli.IntFlag{Name: "seq", Value: 256, Usage: "tokens per row `T` (>= 1)"},
				&cli.IntFlag{Name: "batch", Value: 16, Usage: "rows per step `B` (>= 1)"},
				&cli.IntFlag{Name: "steps", Value: 20, Usage: "measured optimizer steps `N` (>= 1), after 2 unmeasured warm-up steps"},
				&cli.IntFlag{Name: "threads", Value: 0, Usage: "libtorch threads `K` (0: libtorch's default)"},
				&cli.Int64Flag{Name: "seed", Value: 1, Usage: "seed of the weights and the random tokens"},
				&cli.BoolFlag{Name: "json", Usage: "print one JSON object instead of a table"},
			},
			Action: runBenchTrain,
		}},
	}
}

func runBenchTrain(c *cli.Context) error {
	for _, f := range []string{"vocab", "seq", "batch", "steps"} {
		if min := map[string]int{"vocab": 2}[f]; c.Int(f) < max(min, 1) {
			return usageError("bench train: --%s %d: must be >= %d", f, c.Int(f), max(min, 1))
		}
	}
	if c.Int("threads") < 0 {
		return usageError("bench train: --threads %d: must be >= 0", c.Int("threads"))
	}
	mc := model.Config{Preset: c.String("preset"), Vocab: c.Int("vocab"), Context: c.Int("seq"), Seed: c.Int64("seed")}
	if _, err := mc.Resolve(); err != nil {
		return usageError("bench train: %v", err)
	}
	res, err := train.Bench(train.BenchConfig{Model: mc, Seq: c.Int("seq"), Batch: c.Int("batch"), Steps: c.Int("steps"),
		Warmup: 2, Threads: c.Int("threads"), Seed: c.Int64("seed")})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		enc := json.NewEncoder(os.Stdout)
		return enc.Encode(res)
	}
	fmt.Printf("model        %s: %d params, vocab %d, seq %d, batch %d, %d threads\n", res.Preset, res.Params, res.Vocab, res.Seq, res.Batch, res.Threads)
	fmt.Printf("throughput   %.0f tokens/s, %.3f s/step (forward+backward %.3f, optimizer %.3f, collect %.3f)\n",
		res.TokensPerS, res.StepS, res.ModelS, res.OptimizerS, res.CollectS)
	fmt.Printf("compute      %.1f GFLOP/s of a %.1f GFLOP/s matmul peak: MFU %.3f\n", res.GFLOPs, res.PeakGFLOPs, res.MFU)
	return nil
}
