package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/experiments"
	"github.com/memo-research/memo/internal/outguard"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/loss"
	"github.com/urfave/cli/v2"
)

func evalCommand() *cli.Command {
	return &cli.Command{
		Name:      "eval",
		Usage:     "score completions: exact match, RougeL, token accuracy, membership inference",
		ArgsUsage: "RUN-DIR|COMPLETIONS.arrow",
		Description: "Reads completions (from `memo extract`: a run directory's completions.arrow, or\n" +
			"any completions file) and writes scores.parquet (one row per document) and\n" +
			"summary.json (rates per split with bootstrap 95 % intervals, ROC AUC and TPR at low\n" +
			"FPR of every membership statistic) beside it, or into --out; also corpus_counts.parquet\n" +
			"when the training corpus is indexed (memo index build) and guess_scores.parquet when\n" +
			"the attack made several guesses a document. Beside NAME.completions.arrow they are\n" +
			"NAME.scores.parquet, NAME.summary.json, and so on.\n" +
			"Settings come from the [eval] table of the config.toml beside the completions (or of\n" +
			"the run, for completions beside a checkpoint, or of the run extract recorded, for\n" +
			"completions written elsewhere); flags override them, one per [eval]\n" +
			"key (extractable_q: --extractable-q). The goldfish\n" +
			"settings and model recorded in summary.json are those extract stored in the\n" +
			"completions: the attacked checkpoint's own.",
		// The [eval] keys' flags, then the command's own.
		Flags: append(tableFlags("eval", eval.DefaultConfig()),
			&cli.StringFlag{Name: "out", Usage: "output `DIR` for scores.parquet, summary.json and the other files eval writes (default: beside the completions)"},
			&cli.StringFlag{Name: "counts", Usage: "count each window in the training corpus of `DIR` (a run, its data/ or a dataset-cache entry, indexed by memo index build): corpus_counts.parquet and summary.json's by_corpus_count (default: the run's own corpus when it is indexed, as memo run's eval stage counts)"},
		),
		Action: evalAction,
	}
}

func evalAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageError("eval: want one RUN-DIR or COMPLETIONS.arrow, got %d arguments", c.NArg())
	}
	arg := c.Args().First()
	st, err := os.Stat(arg)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return usageError("eval: %s: no such file or directory: want a run directory or a completions .arrow file", arg)
		}
		return usageError("eval: %v", err)
	}
	if !st.IsDir() && !strings.HasSuffix(arg, ".arrow") {
		// A spec given where its run was meant, most likely.
		return usageError("eval: %s: not a run directory nor a completions .arrow file (memo run writes RUNS/NAME/completions.arrow)", arg)
	}
	comps, runDir := arg, runDirOfCompletions(arg)
	if st.IsDir() {
		comps, runDir = filepath.Join(arg, runfiles.CompletionsFile), arg
	}
	if cst, err := os.Stat(comps); err != nil {
		return usageError("eval: %s: no completions (run `memo extract %s` first)", comps, runDir)
	} else if cst.IsDir() {
		return usageError("eval: %s is a directory, not the completions file extract writes", comps)
	}
	if err := runfiles.CheckCompletionsFile(comps); err != nil {
		return usageError("eval: %v", err)
	}
	if !outguard.Exists(filepath.Join(runDir, runfiles.ConfigFile)) && !outguard.Exists(filepath.Join(runDir, experiments.ManifestFile)) {
		// Completions written outside any run (memo extract --out) are
		// scored with the [eval] settings of the run extract recorded, as
		// the run's own are: the defaults would give other intervals. A
		// run directory that lost its config.toml is refused by readRun.
		if recorded, err := eval.CompletionsRun(comps); err == nil && recorded != "" {
			if _, err := os.Stat(filepath.Join(recorded, runfiles.ConfigFile)); err == nil {
				runDir = recorded
			}
		}
	}
	run, hasConfig, err := readRun(runDir)
	if err != nil {
		return err
	}
	trained := run.Goldfish
	if !hasConfig {
		// Used only if the completions do not record the checkpoint's own.
		trained = loss.Config{Strategy: "unknown"}
	}
	cfg := run.EvalStage() // run.Eval stays the run's own settings
	setTableFlags(c, "eval", &cfg)
	if err := cfg.Validate(); err != nil {
		return usageError("eval: %v (%s)", err, setBy(c, "eval", err, filepath.Join(runDir, runfiles.ConfigFile), hasConfig))
	}
	// The reference's own problem before any about where the scores go.
	if ref := cfg.Reference; ref != "" {
		if _, err := os.Stat(ref); err != nil {
			return usageError("eval: reference %s: %v (eval.reference or --reference: a run directory or its completions.arrow)", ref, errors.Unwrap(err))
		}
	}
	scores, summary := eval.OutputPaths(comps)
	if out := c.String("out"); out != "" {
		if st, err := os.Stat(out); err == nil && !st.IsDir() {
			return usageError("eval: --out %s is a file: want a DIR for scores.parquet and summary.json", out)
		} else if err != nil && !isDir(filepath.Dir(filepath.Clean(out))) {
			// A typo would otherwise grow a directory tree, as extract --out refuses.
			return usageError("eval: --out %s: directory %s does not exist (eval makes --out itself, not its parents)", out, filepath.Dir(filepath.Clean(out)))
		}
		scores, summary = filepath.Join(out, runfiles.ScoresFile), filepath.Join(out, runfiles.SummaryFile)
	}
	if err := eval.CheckOut(scores, summary, comps, cfg, run.EvalStage()); err != nil {
		return err
	}
	// Beside a checkpoint go only NAME.scores.parquet of completions there;
	// --out's fixed names never go into a place memo made for something else.
	if out := c.String("out"); out != "" {
		if where := outguard.Inside(out, data.ResolveCacheDir("")); where != "" {
			return usageError("eval: --out %s is in %s; results never go there: name a directory elsewhere", out, where)
		}
	}
	ownSummary := filepath.Base(summary) == runfiles.SummaryFile && outguard.IsRunDir(filepath.Dir(summary))
	count, release, err := evalCounter(c, runDir, ownSummary)
	if err != nil {
		return err
	}
	defer release()
	sum, err := eval.RunCounted(cfg, comps, trained, scores, summary, count)
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
	// Exact match with Wilson's interval, as every table and figure has it.
	fmt.Fprintf(w, "%-9s %5s %-22s %-15s %s\n", "split", "n", "exact match [95% CI]", "token accuracy", "rougeL")
	for _, s := range []struct {
		name string
		s    eval.SplitSummary
	}{{"members", sum.Members}, {"controls", sum.Controls}} {
		fmt.Fprintf(w, "%-9s %5d %-22s %-15s %s\n", s.name, s.s.N,
			fmt.Sprintf("%s [%s, %s]", f(s.s.ExactMatch), f(s.s.ExactMatchWilsonCI[0]), f(s.s.ExactMatchWilsonCI[1])), f(s.s.TokenAccuracy), f(s.s.RougeL))
	}
	m := sum.MIA
	ls := m.Stat("loss")
	fmt.Fprintf(w, "MIA AUC: loss %s [%s, %s], zlib %s, min-k %s, reference %s (TPR at FPR < %.3g: loss %s)\n",
		f(m.LossAUC), f(ls.AUCCI[0]), f(ls.AUCCI[1]), f(m.ZlibAUC), f(m.MinKAUC), f(m.RefAUC), m.FPR, f(m.LossTPR))
	// Every registered statistic with a number (eval.MIAStatistics).
	fmt.Fprintf(w, "%-28s %-22s %-10s %s\n", "MIA statistic", "AUC [95% CI]", "TPR@0.1%", "TPR@1% FPR")
	for _, x := range eval.MIAStatistics() {
		if st := m.Stat(x.Name); !math.IsNaN(float64(st.AUC)) {
			fmt.Fprintf(w, "%-28s %-22s %-10s %s\n", x.Label, fmt.Sprintf("%s [%s, %s]", f(st.AUC), f(st.AUCCI[0]), f(st.AUCCI[1])), f(st.TPR0_1), f(st.TPR1))
		}
	}
	if cal := sum.Calibrated; cal != nil {
		fmt.Fprintf(w, "calibrated attacks: %d reference models, %d candidates, %d population samples\n", cal.References, cal.Candidates, cal.Population)
	}
	if ex := sum.Extractable; ex != nil {
		for _, side := range []struct {
			name string
			at   []eval.ExtractableAt
		}{{"members", ex.Members}, {"controls", ex.Controls}} {
			fmt.Fprintf(w, "(n, %g)-extractable %s:", ex.Q, side.name)
			for _, a := range side.at {
				fmt.Fprintf(w, " n=%d %s [%s, %s]", a.N, f(a.Fraction), f(a.WilsonCI[0]), f(a.WilsonCI[1]))
			}
			fmt.Fprintln(w)
		}
	}
	if count != nil {
		fmt.Fprintf(w, "wrote %s, %s and %s\n", scores, eval.CorpusCountsPath(scores), summary)
	} else {
		fmt.Fprintf(w, "wrote %s and %s\n", scores, summary)
	}
	return nil
}

// runDirOfCompletions is the directory whose config.toml holds the eval
// settings for a completions file: its own directory, or the run's for a
// file beside a checkpoint (RUN/checkpoints/step-N.….completions.arrow).
func runDirOfCompletions(path string) string {
	dir := filepath.Dir(path)
	if _, err := os.Stat(filepath.Join(dir, runfiles.ConfigFile)); err != nil && filepath.Base(dir) == "checkpoints" {
		return filepath.Dir(dir)
	}
	return dir
}
