package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/memo-research/memo/eval"
	"github.com/urfave/cli/v2"
)

func init() {
	d := eval.DefaultConfig()
	register(&cli.Command{
		Name:      "eval",
		Usage:     "score completions: exact match, RougeL, token accuracy, membership inference",
		ArgsUsage: "RUN-DIR|COMPLETIONS.arrow",
		Description: "Reads completions.arrow (from `memo extract`) and writes scores.parquet (one row\n" +
			"per document) and summary.json (rates per split with bootstrap 95 % intervals, ROC\n" +
			"AUC and TPR at low FPR of the loss, zlib, Min-K% and reference attacks) beside it,\n" +
			"or into --out. Settings come from the run's config.toml [eval] table; flags\n" +
			"override them.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "bootstrap", Usage: "bootstrap resamples per confidence interval (0: none, else >= 100)", DefaultText: fromConfig(d.Bootstrap)},
			&cli.Int64Flag{Name: "seed", Usage: "seed of the bootstrap", DefaultText: fromConfig(d.Seed)},
			&cli.Float64Flag{Name: "mink-fraction", Usage: "K of Min-K% Prob as a fraction (0.2 = 20 %)", DefaultText: fromConfig(d.MinKFraction)},
			&cli.Float64Flag{Name: "fpr", Usage: "false positive rate at which the TPR is reported (0.01 = 1 %)", DefaultText: fromConfig(d.FPR)},
			&cli.StringFlag{Name: "reference", Usage: "a reference model's completions (`FILE` or run dir) for the loss-difference attack", DefaultText: fromConfig("none")},
			&cli.StringFlag{Name: "out", Usage: "output `DIR` for scores.parquet and summary.json (default: beside the completions)"},
		},
		Action: evalAction,
	})
}

func evalAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageError("eval: want one RUN-DIR or COMPLETIONS.arrow, got %d arguments", c.NArg())
	}
	arg := c.Args().First()
	st, err := os.Stat(arg)
	if err != nil {
		return usageError("eval: %s: %v", arg, err)
	}
	comps, runDir := arg, filepath.Dir(arg)
	if st.IsDir() {
		comps, runDir = filepath.Join(arg, "completions.arrow"), arg
	}
	if _, err := os.Stat(comps); err != nil {
		return usageError("eval: %s: no completions (run `memo extract %s` first)", comps, runDir)
	}
	rc, _, err := loadStageConfigs(runDir)
	if err != nil {
		return err
	}
	cfg := rc.Eval
	if c.IsSet("bootstrap") {
		cfg.Bootstrap = c.Int("bootstrap")
	}
	if c.IsSet("seed") {
		cfg.Seed = c.Int64("seed")
	}
	if c.IsSet("mink-fraction") {
		cfg.MinKFraction = c.Float64("mink-fraction")
	}
	if c.IsSet("fpr") {
		cfg.FPR = c.Float64("fpr")
	}
	if c.IsSet("reference") {
		cfg.Reference = c.String("reference")
	}
	if err := cfg.Validate(); err != nil {
		return usageError("eval: %v (set by %s or a flag)", err, filepath.Join(runDir, "config.toml"))
	}
	out := c.String("out")
	if out == "" {
		out = filepath.Dir(comps)
	}
	sum, err := eval.Run(cfg, comps, rc.Goldfish, out)
	if err != nil {
		return err
	}
	w := c.App.Writer
	f := func(n eval.Num) string {
		if math.IsNaN(float64(n)) {
			return "–"
		}
		return fmt.Sprintf("%.3f", float64(n))
	}
	fmt.Fprintf(w, "%-9s %5s %-22s %-15s %s\n", "split", "n", "exact match [95% CI]", "token accuracy", "rougeL")
	for _, s := range []struct {
		name string
		s    eval.SplitSummary
	}{{"members", sum.Members}, {"controls", sum.Controls}} {
		fmt.Fprintf(w, "%-9s %5d %-22s %-15s %s\n", s.name, s.s.N,
			fmt.Sprintf("%s [%s, %s]", f(s.s.ExactMatch), f(s.s.ExactMatchCI[0]), f(s.s.ExactMatchCI[1])), f(s.s.TokenAccuracy), f(s.s.RougeL))
	}
	m := sum.MIA
	fmt.Fprintf(w, "MIA AUC: loss %s, zlib %s, min-k %s, reference %s (TPR at %.3g FPR: loss %s)\n",
		f(m.LossAUC), f(m.ZlibAUC), f(m.MinKAUC), f(m.RefAUC), m.FPR, f(m.LossTPR))
	fmt.Fprintf(w, "wrote %s and %s\n", filepath.Join(out, "scores.parquet"), filepath.Join(out, "summary.json"))
	return nil
}
