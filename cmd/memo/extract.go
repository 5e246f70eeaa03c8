package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/experiments"
	"github.com/memo-research/memo/extract"
	"github.com/memo-research/memo/internal/outguard"
	"github.com/memo-research/memo/internal/rankenv"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/loss"
	"github.com/urfave/cli/v2"
)

// fromConfig is the default shown in --help for a flag that overrides a
// key of the run's config.toml.
func fromConfig(v any) string { return fmt.Sprintf("config.toml, else %v", v) }

func extractCommand() *cli.Command {
	return &cli.Command{
		Name:      "extract",
		Usage:     "attack a trained model with prefix completion (writes completions.arrow)",
		ArgsUsage: "RUN-DIR|CHECKPOINT-DIR",
		Description: "Feeds each document's prefix to the model and decodes a continuation as long as\n" +
			"the true suffix, then writes completions (prompts, true and generated ids and texts,\n" +
			"per-token losses, and in its metadata the checkpoint, model and goldfish settings it\n" +
			"was trained with) for `memo eval`. Settings come from the run's config.toml\n" +
			"[extract] table; flags override them, so a finished model can be attacked again with\n" +
			"other settings. Each [extract] key holding a value is a flag of its name (top_k:\n" +
			"--top-k); --set reaches the others. A checkpoint directory (RUN/checkpoints/step-N)\n" +
			"attacks that step.\n" +
			"\n" +
			"Where it writes without --out: RUN/completions.arrow only when RUN-DIR is attacked\n" +
			"with the run's own settings (its config.toml, no flag changing them, no --data);\n" +
			"otherwise beside the checkpoint, under a name derived from the settings, e.g.\n" +
			"RUN/checkpoints/step-000100.fixed-p50-s50.greedy.1a2b3c4d.completions.arrow, so\n" +
			"another attack never overwrites the run's own completions. With --model, in the\n" +
			"--data run's directory (a Hugging Face directory is not memo's to write in):\n" +
			"RUN/<model>.<settings>.completions.arrow.\n" +
			"\n" +
			"Prompt modes: reference cuts each document to the model's context and takes its last\n" +
			"SUFFIX tokens as the suffix (the goldfish repository's evaluation); fixed takes the\n" +
			"first PREFIX tokens and the next SUFFIX (Carlini et al.'s 50 + 50); pythia takes\n" +
			"32 + 32 tokens from the start of each document, not of each training row: a document\n" +
			"packed into several rows is attacked once, at its start.",
		// The [extract] keys' flags, then the command's own.
		Flags: append(tableFlags("extract", extract.DefaultConfig()),
			&cli.StringFlag{Name: "data", Usage: "run `DIR` whose data/ holds the documents (default: the model's run directory)"},
			&cli.StringFlag{Name: "model", Usage: "attack this model instead of a run's: a Hugging Face directory or any memo checkpoint (`DIR`; needs --data and no RUN-DIR), e.g. a Pythia-style audit of an off-the-shelf model"},
			&cli.StringFlag{Name: "out", Usage: "output `FILE` (default: RUN-DIR/completions.arrow for the run's own settings, else a name derived from the settings beside the checkpoint; with --model, in the --data run's directory)"},
			&cli.IntFlag{Name: "threads", Usage: "libtorch threads (0: all cores)"},
			&cli.StringSliceFlag{Name: "set", Usage: "override any [extract] key, `extract.KEY=VALUE` as in TOML (--set extract.top_k=40, --set extract.loki.rank=8), after config.toml and the flags; repeatable"},
			&cli.BoolFlag{Name: "scan", Usage: "decide only greedy decoding's exact match and matched length, by one teacher-forced pass per batch instead of generating, into a .scan.parquet (no completions; see docs/DECODING.md, \"Scanning\")"},
			&cli.StringFlag{Name: "scan-compare", Usage: "with --scan: check the scan against `COMPLETIONS` of the same greedy attack (each document's matched length is the common prefix of its generated and true suffix); exit 1 when one differs"},
		),
		Action: extractAction,
	}
}

// readRun reads runDir's config.toml (experiments.ReadRun): a damaged
// or unknown key is bad input, one line naming file, line and key.
func readRun(runDir string) (*experiments.Spec, bool, error) {
	spec, ok, err := experiments.ReadRun(runDir)
	if err != nil {
		return nil, false, configError(err)
	}
	return spec, ok, nil
}

// trainedLoss is the loss the checkpoint ckpt was trained with, the
// [goldfish] table of its run's config.toml, for the completions'
// provenance; nil for a checkpoint outside a run (an imported model).
func trainedLoss(ckpt string) (*loss.Config, error) {
	abs, err := filepath.Abs(ckpt)
	if err != nil {
		return nil, err
	}
	runDir := checkpoint.RunDir(abs)
	if runDir == "" {
		return nil, nil
	}
	spec, ok, err := readRun(runDir)
	if err != nil || !ok {
		return nil, err
	}
	return &spec.Goldfish, nil
}

// runDirOfCheckpoint finds the run directory of a run, checkpoints/ or checkpoint path.
func runDirOfCheckpoint(path string) string {
	if _, err := os.Stat(filepath.Join(path, checkpoint.StateFile)); err == nil {
		return filepath.Dir(filepath.Dir(path)) // RUN/checkpoints/step-N
	}
	if filepath.Base(filepath.Clean(path)) == checkpoint.DirName {
		return filepath.Dir(filepath.Clean(path))
	}
	return path
}

func extractAction(c *cli.Context) error {
	if out := c.String("out"); out != "" {
		// A typo in --out would otherwise grow a directory tree.
		if st, err := os.Stat(filepath.Dir(out)); err != nil || !st.IsDir() {
			return usageError("extract: --out %s: directory %s does not exist", out, filepath.Dir(out))
		}
	}
	if c.IsSet("model") {
		return extractModel(c)
	}
	if c.NArg() != 1 {
		return usageError("extract: want one RUN-DIR or CHECKPOINT-DIR (or --model DIR --data RUN-DIR), got %d arguments", c.NArg())
	}
	target := c.Args().First()
	if st, err := os.Stat(target); err != nil || !st.IsDir() {
		return usageError("extract: %s: not a directory (want a run or checkpoint directory)", target)
	}
	ckpt, err := checkpoint.Resolve(target)
	if err != nil {
		return usageError("extract: %v", err)
	}
	// A damaged newest checkpoint is refused by name (Resolve), never
	// replaced by an older one: that takes naming its step directory.
	runDir := runDirOfCheckpoint(target)
	return extractWith(c, target, ckpt, runDir, false)
}

// extractModel is `memo extract --model DIR --data RUN-DIR`: any model
// (an imported one above all) attacked on another run's documents, with
// that run's [extract] settings and the flags. Without --out the
// completions go to RUN-DIR/<model>.<settings>.completions.arrow.
func extractModel(c *cli.Context) error {
	if c.NArg() != 0 {
		return usageError("extract: --model names the model; give no RUN-DIR beside it (got %q)", c.Args().First())
	}
	if !c.IsSet("data") {
		return usageError("extract: --model needs --data RUN-DIR, the run whose data/ holds the documents to attack")
	}
	target := c.String("model")
	ckpt := target
	if !checkpoint.IsHFDir(target) {
		dir, err := checkpoint.Resolve(target)
		if err != nil {
			return modelDirError("extract", target, "checkpoint", err)
		}
		ckpt = dir
	}
	return extractWith(c, target, ckpt, c.String("data"), true)
}

// modelDirError is cmd's refusal of --model dir, which Resolve rejected
// (err): a path holding no checkpoint is named as neither kind of model
// directory; a memo checkpoint that is damaged, or a Hugging Face
// directory that lacks a file, is refused for what Resolve found.
func modelDirError(cmd, dir, memoKind string, err error) error {
	if errors.Is(err, checkpoint.ErrNoCheckpoint) {
		return usageError("%s: --model %s: not a Hugging Face directory (config.json + safetensors) nor a memo %s: %v", cmd, dir, memoKind, oneLine(err.Error()))
	}
	return usageError("%s: --model %s: %v", cmd, dir, oneLine(err.Error()))
}

// extractWith attacks the model at ckpt with the [extract] settings of
// runDir's config.toml and the flags. foreign says the model is not the
// run's: its completions never take the run's own file name.
func extractWith(c *cli.Context, target, ckpt, runDir string, foreign bool) error {
	run, hasConfig, err := readRun(runDir)
	if err != nil {
		return err
	}
	trained, err := trainedLoss(ckpt)
	if err != nil {
		return err
	}
	cfg := run.Extract
	setTableFlags(c, "extract", &cfg)
	if err := decodingFlagsFit(c, "extract", cfg.Decoding); err != nil {
		return err
	}
	if c.IsSet("approximation") {
		// The name sets these keys itself: given too, they were dropped
		// and the output labelled with settings not asked for.
		for _, key := range extract.ApproximationKeys {
			if f := strings.ReplaceAll(key, "_", "-"); !strings.Contains(key, ".") && c.IsSet(f) {
				return usageError("extract: --approximation %s sets extract.kv_bits, attention and speculative itself, so --%s would be dropped: give one or the other (e.g. --approximation kv4+quantspec-g4)", c.String("approximation"), f)
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		return usageError("extract: %v (%s)", err, setBy(c, "extract", err, filepath.Join(runDir, runfiles.ConfigFile), hasConfig))
	}
	for _, set := range c.StringSlice("set") {
		if !strings.HasPrefix(strings.TrimSpace(set), "extract.") {
			key, _, _ := strings.Cut(set, "=")
			return usageError("extract: --set %s: extract takes only extract.KEY=VALUE; %s is not an attack setting (data, model and train keys belong to `memo run`)", set, strings.TrimSpace(key))
		}
		// memo extract attacks one model; the list of checkpoints is
		// memo run's, which attacks and scores each. Taken here it was
		// dropped without a word, and the newest checkpoint attacked.
		if key, _, _ := strings.Cut(set, "="); strings.TrimSpace(key) == "extract.checkpoints" {
			return usageError("extract: --set %s: memo extract attacks one model: name the checkpoint (memo extract RUN/checkpoints/step-000100); extract.checkpoints is memo run's, which attacks and scores each", set)
		}
	}
	// --set reaches every key, including those no flag copies.
	holder := struct {
		Extract extract.Config `toml:"extract"`
	}{cfg}
	if err := experiments.OverrideTables(&holder, c.StringSlice("set")); err != nil {
		return usageError("extract: %v", err)
	}
	cfg = holder.Extract
	dataDir := runDir
	if c.IsSet("data") {
		dataDir = c.String("data")
	}
	ds, err := data.Open(dataDir)
	if err != nil {
		return usageError("extract: %v", err)
	}
	// The run's own data/ built again since training, from a source file
	// changed since: its targets are other documents, and the run's
	// results were rewritten with members the model never saw.
	if st, err := checkpoint.ReadState(ckpt); err == nil && !c.IsSet("data") && st.Dataset != "" && st.Dataset != ds.Digest() {
		return usageError("extract: checkpoint %s was trained on another dataset (digest %.12s) than %s holds (%.12s, built since): its targets are not the model's members; restore the data it was trained on, or attack another run's documents with --data", ckpt, st.Dataset, filepath.Join(dataDir, "data"), ds.Digest())
	}
	// Another run's documents (--data) or an imported model: the model's
	// tokenizer must be the dataset's, as for extract.reference.
	if err := extract.SameTokenizer(ds, ckpt); err != nil {
		return usageError("extract: %v: the model would read the documents as other tokens; attack it on a dataset built with its tokenizer", err)
	}
	if c.Bool("scan") {
		if err := cfg.CheckScan(); err != nil {
			return err
		}
	} else if c.IsSet("scan-compare") {
		return usageError("extract: --scan-compare checks a scan: it needs --scan")
	}
	// Where this attack's completions go without --out: beside the
	// checkpoint attacked, the run's own file, or beside another run's
	// documents for a foreign model.
	def := defaultCompletions(target, runDir, ckpt, cfg, run.Extract, hasConfig && !c.IsSet("data"), dataDir)
	if foreign {
		abs, err := filepath.Abs(ckpt)
		if err != nil {
			abs = ckpt
		}
		def = filepath.Join(dataDir, filepath.Base(filepath.Clean(ckpt))+"."+cfg.Slug("model="+abs)+".completions.arrow")
	}
	out := c.String("out")
	switch {
	case out != "" && c.Bool("scan"):
		if err := extract.CheckScanOut(out); err != nil {
			return err
		}
	case out != "":
		// The run's own completions only for the run's own attack; any
		// other file only if it is this attack's (or new).
		runOwn := !foreign && outguard.Same(out, filepath.Join(runDir, runfiles.CompletionsFile)) && outguard.Same(out, def)
		if err := extract.CheckOut(out, ckpt, cfg, runOwn); err != nil {
			return err
		}
	default:
		out = def
	}
	if c.IsSet("out") {
		// --out names any file but those memo keeps in its own places
		// (checkpoints/, data/, the cache), unless it is the very file
		// the attack would write there without --out.
		same := def
		if c.Bool("scan") {
			same = extract.ScanPath(def)
		}
		if where := outguard.Inside(out, data.ResolveCacheDir("")); where != "" && !outguard.Same(out, same) {
			return usageError("extract: --out %s is in %s; results never go there: name a file elsewhere (without --out the attack of a checkpoint goes beside it)", out, where)
		}
	}
	// The run's own completions are the finished model's: eval, report and
	// `memo run` take them for it.
	// So is its scan (scan.parquet beside them): one of a model interrupted
	// at step 73 of 300 stayed there, beside the finished run's outputs.
	if !foreign && outguard.Same(out, filepath.Join(runDir, runfiles.CompletionsFile)) {
		if why := experiments.UnfinishedTraining(runDir); why != "" {
			return usageError("extract: %s has not finished training (manifest.json: train %s): resume it with memo run, or attack the checkpoint by naming it (memo extract %s), which writes beside it", runDir, why, ckpt)
		}
	}
	threads, _ := runThreads(c, rankenv.Config{}) // a Slurm job's CPUs, as memo run
	torchx.Init(threads, uint64(cfg.Seed))
	ctx, cancel := signalContext()
	defer cancel()
	// Interrupted, extract keeps nothing: its files are written whole or
	// not at all, and the same command starts over.
	if c.Bool("scan") {
		return startsOver(ctx, scanWith(c, ctx, cfg, ckpt, ds, out))
	}
	if err := extract.Run(ctx, cfg, ckpt, ds, out, trained); err != nil {
		if errors.Is(err, extract.ErrConfig) {
			return usageError("%v", err)
		}
		return startsOver(ctx, err)
	}
	fmt.Fprintf(c.App.Writer, "completions: %s\nscore them with: memo eval %s\n", out, out)
	return nil
}

// defaultCompletions is where extract writes without --out. The run's own
// completions.arrow is written only for the run's own attack: the run
// directory (its newest checkpoint) under the settings of its config.toml
// (ownSettings: there is one and the documents are the run's). Any other
// attack goes beside the checkpoint, named by its settings, so that it
// never overwrites the run's completions or another attack's.
func defaultCompletions(target, runDir, ckpt string, cfg, runCfg extract.Config, ownSettings bool, dataDir string) string {
	t, r := filepath.Clean(target), filepath.Clean(runDir)
	isRun := t == r || t == filepath.Join(r, checkpoint.DirName)
	// The batch size does not change the completions.
	cfg.BatchSize, runCfg.BatchSize = 0, 0
	if isRun && ownSettings && reflect.DeepEqual(cfg, runCfg) {
		return filepath.Join(runDir, runfiles.CompletionsFile)
	}
	return extract.BesidePath(ckpt, cfg, dataDir)
}
