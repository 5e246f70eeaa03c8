package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/experiments"
	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/lossyutf8"
	"github.com/memo-research/memo/internal/outguard"
	"github.com/memo-research/memo/internal/readcap"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/precision"
)

// memo score, memo generate and memo export: small commands a person (and
// a check) can drive by token ids, on any model memo can load.

const modelArgHelp = "`DIR` is a Hugging Face model directory (config.json + safetensors), a memo run,\n" +
	"its checkpoints/ directory or one step-NNNNNN checkpoint."

func scoreGenerateExportCommands() (cmds []*cli.Command) {
	// --model is checked by the actions (modelArgs): urfave/cli's own
	// check of a required flag prints the help on stdout and exits 1.
	modelFlag := &cli.StringFlag{Name: "model", Usage: "the model (required): a Hugging Face directory, a memo run or a memo checkpoint (`DIR`)"}
	idsFlag := &cli.StringFlag{Name: "ids-json", Usage: "token ids as JSON, {\"ids\": [[...], ...]} or [[...], ...] (`FILE`, or - for stdin)"}
	deviceFlag := &cli.StringFlag{Name: "device", Value: "cpu", Usage: "cpu, cuda or cuda:N"}
	precisionFlag := &cli.StringFlag{Name: "precision", Value: "fp32", Usage: "fp32, bf16 or fp16: the dtype of the linear layers' weights and products (attention too where libtorch has its fused kernel; norms and the scores stay float32)"}
	cmds = append(cmds, &cli.Command{
		Name:  "score",
		Usage: "per-token negative log-likelihood of token-id rows under a model",
		Description: "Prints {\"nll\": [[...], ...]}: for each row, the natural-log NLL of every id after\n" +
			"the first given the ids before it (what transformers' loss computes per token).\n" +
			modelArgHelp,
		Flags: []cli.Flag{modelFlag, idsFlag, deviceFlag, precisionFlag, &cli.IntFlag{Name: "batch", Aliases: []string{"batch-size"}, Value: 8, Usage: "rows scored per forward pass"}, &cli.BoolFlag{Name: "json", Usage: "print JSON only (the default output is JSON too; kept for symmetry)"},
			&cli.StringFlag{Name: "logits-out", Usage: "also write every row's next-token logits to `FILE` (a new file) as JSON {\"ids\": rows, \"logits\": [row][position][vocab]}, position j predicting token j+1 (scripts/peft_check.py compares them with peft's)"}},
		Action: scoreAction,
	})
	cmds = append(cmds, &cli.Command{
		Name:  "generate",
		Usage: "greedy continuation of token-id rows (or of a text prompt) under a model",
		Description: "With --ids-json prints {\"ids\": [[...], ...]}, the new tokens of each row (greedy,\n" +
			"ties to the lowest id, the KV cache on). With --prompt TEXT the text is encoded with\n" +
			"the model's own tokenizer (special tokens added as the tokenizer does) and the\n" +
			"prompt printed with its continuation as text; --json prints the continuation alone,\n" +
			"its ids and text. The continuation of a prompt ends at the first end-of-sequence\n" +
			"token (the tokenizer's EOS, and a Hugging Face directory's generation_config.json\n" +
			"eos_token_id), kept in the ids and left out of the text, as transformers' generate\n" +
			"stops; --ignore-eos generates all --max-new tokens. Rows of ids never stop early.\n" + modelArgHelp,
		Flags: []cli.Flag{modelFlag, idsFlag, deviceFlag, precisionFlag,
			&cli.StringFlag{Name: "prompt", Usage: "a text prompt instead of --ids-json"},
			&cli.IntFlag{Name: "max-new", Value: 32, Usage: "tokens to generate per row"},
			&cli.BoolFlag{Name: "no-cache", Usage: "recompute the whole sequence for every token (the check on the cache)"},
			&cli.BoolFlag{Name: "ignore-eos", Usage: "with --prompt: go on past an end-of-sequence token to --max-new tokens"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
		Action: generateAction,
	})
	cmds = append(cmds, &cli.Command{
		Name:      "export",
		Usage:     "write a memo checkpoint as a Hugging Face model directory",
		ArgsUsage: "CHECKPOINT OUT",
		Description: "CHECKPOINT is a run, its checkpoints/ directory or a step-NNNNNN directory (a run's\n" +
			"newest checkpoint, refused by name if damaged; name an older step to export it).\n" +
			"OUT receives config.json, model.safetensors (Hugging Face names, float32),\n" +
			"tokenizer.json (the run's) and generation_config.json, so that\n" +
			"transformers' from_pretrained(OUT) loads it and memo --model OUT reads it back with\n" +
			"identical logits. OUT must not exist; it is written under a temporary name and renamed.\n" +
			"--transformers 4 writes config.json in transformers 4's form (rope_theta, rope_scaling,\n" +
			"torch_dtype) for code that predates transformers 5's rope_parameters and dtype.\n" +
			"--merge exports a LoRA run (train.lora): its base with the adapters merged in\n" +
			"(W + alpha/r·B·A, PEFT's merge_and_unload), a plain model; the base must be where the run\n" +
			"recorded it, unchanged. A LoRA checkpoint is itself a PEFT adapter directory.",
		Flags: []cli.Flag{&cli.IntFlag{Name: "transformers", Value: 5, Usage: "the transformers major version whose config.json form to write: 5 or 4"},
			&cli.BoolFlag{Name: "merge", Usage: "merge a LoRA run's adapters into its base and write the plain model"}},
		Action: exportAction,
	})
	return cmds
}

// loadAnyModel loads a Hugging Face directory or a memo checkpoint; errors
// are bad input (exit 2): the user named the model.
func loadAnyModel(c *cli.Context, cmd string) (*model.GPT, string, error) {
	path, device, prec := c.String("model"), c.String("device"), c.String("precision")
	if err := checkInferenceFlags(c, cmd); err != nil {
		return nil, "", err
	}
	t0 := time.Now()
	g, dir, err := checkpoint.LoadModel(path, device, prec)
	if err != nil {
		// The device is this command's --device, not a spec key.
		msg := strings.ReplaceAll(oneLine(err.Error()), "train.device = ", "--device ")
		if !strings.HasPrefix(msg, path+":") && !strings.HasPrefix(msg, path+" ") {
			msg = path + ": " + msg // the checkpoint's errors mostly begin with it
		}
		return nil, "", usageError("%s: --model %s", cmd, msg)
	}
	slog.Info("model loaded", "from", dir, "params", g.Config().Params(), "seconds", fmt.Sprintf("%.2f", time.Since(t0).Seconds()))
	warnUnfinished(cmd, path, dir)
	return g, dir, nil
}

// checkInferenceFlags refuses, as bad input naming the flag, a --device
// this process cannot use or a --precision inference does not take there.
func checkInferenceFlags(c *cli.Context, cmd string) error {
	dev, err := torchx.ResolveDeviceFor("--device", c.String("device"))
	if err != nil {
		return usageError("%s: %v", cmd, err)
	}
	if err := precision.Check(c.String("precision"), false, dev); err != nil {
		return usageError("%s: --precision: %v", cmd, err)
	}
	return nil
}

// readIDRows reads {"ids": [[...]]} or [[...]] from a file or stdin.
// maxIDsJSONBytes bounds --ids-json: some 30 million ids.
const maxIDsJSONBytes = 256 << 20

func readIDRows(cmd, src string) ([][]int32, error) {
	if src == "" {
		return nil, usageError("%s: give --ids-json FILE (or - for stdin)", cmd)
	}
	in := io.Reader(os.Stdin)
	if src != "-" {
		f, err := os.Open(src)
		if err != nil {
			return nil, usageError("%s: --ids-json %s: %v", cmd, src, err)
		}
		defer f.Close()
		in = f
	}
	// Bounded, so that /dev/zero or an endless pipe is refused, not read
	// until memory runs out.
	raw, err := readcap.All(in, maxIDsJSONBytes)
	if err != nil {
		return nil, usageError("%s: --ids-json %s: %v", cmd, src, err)
	}
	// Read loosely first, so that a bad value is named by row and position.
	var wrapped struct {
		IDs [][]json.RawMessage `json:"ids"`
	}
	var loose [][]json.RawMessage
	if err := json.Unmarshal(raw, &wrapped); err == nil && wrapped.IDs != nil {
		loose = wrapped.IDs
	} else if lerr := json.Unmarshal(raw, &loose); lerr != nil {
		if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' && err != nil {
			lerr = err // an object: what is wrong inside it
		}
		return nil, usageError("%s: --ids-json %s: want {\"ids\": [[...], ...]} or [[...], ...], rows of token ids (found %s)", cmd, src, jsonProblem(lerr))
	}
	if len(loose) == 0 {
		return nil, usageError("%s: --ids-json %s holds no rows", cmd, src)
	}
	rows := make([][]int32, len(loose))
	for i, r := range loose {
		rows[i] = make([]int32, len(r))
		for j, v := range r {
			if err := json.Unmarshal(v, &rows[i][j]); err != nil {
				return nil, usageError("%s: --ids-json %s: row %d, position %d: %s is not a token id (an integer from 0 to 2147483647)", cmd, src, i, j, v)
			}
		}
	}
	return rows, nil
}

// checkIDs refuses ids the model has no embedding for.
func checkIDs(cmd string, rows [][]int32, vocab int) error {
	for i, r := range rows {
		if len(r) == 0 {
			return usageError("%s: row %d is empty", cmd, i)
		}
		for j, id := range r {
			if id < 0 || int(id) >= vocab {
				return usageError("%s: row %d, token %d: id %d is outside the model's vocabulary [0, %d)", cmd, i, j, id, vocab)
			}
		}
	}
	return nil
}

// checkScoreRows refuses rows score cannot take for a model of cfg.
func checkScoreRows(rows [][]int32, cfg model.Config) error {
	if err := checkIDs("score", rows, cfg.Vocab); err != nil {
		return err
	}
	for i, r := range rows {
		if len(r) < 2 {
			return usageError("score: row %d has one token: the NLL is of each token after the first, so a row needs at least 2", i)
		}
	}
	for i, r := range rows {
		if len(r) > cfg.Context {
			return usageError("score: row %d has %d tokens, more than the model's context %d", i, len(r), cfg.Context)
		}
	}
	return nil
}

// modelConfig reads the config of the model --model names without its
// weights; ok is false where it cannot, and loading then says why.
func modelConfig(path string) (model.Config, bool) {
	_, cfg, err := checkpoint.ReadSource(path)
	return cfg, err == nil
}

func printJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, string(b))
	return err
}

// modelArgs checks what score and generate take: --model, and no
// positional argument (a second model or file would be ignored).
func modelArgs(cmd string, c *cli.Context) error {
	if c.String("model") == "" {
		return usageError("%s: give --model DIR (a Hugging Face directory, a memo run or a memo checkpoint)", cmd)
	}
	if c.NArg() > 0 {
		return usageError("%s: unexpected argument %q: the model is --model DIR and the input --ids-json FILE%s", cmd, c.Args().First(), map[bool]string{true: " or --prompt TEXT"}[cmd == "generate"])
	}
	if _, err := os.Stat(c.String("model")); err != nil {
		return usageError("%s: --model %s does not exist", cmd, c.String("model"))
	}
	return nil
}

func scoreAction(c *cli.Context) error {
	if err := modelArgs("score", c); err != nil {
		return err
	}
	rows, err := readIDRows("score", c.String("ids-json"))
	if err != nil {
		return err
	}
	if c.Int("batch") < 1 {
		return usageError("score: --batch %d: must be >= 1", c.Int("batch"))
	}
	logitsOut := c.String("logits-out")
	if logitsOut != "" {
		if err := checkNewFile("score: --logits-out", logitsOut); err != nil {
			return err
		}
	}
	runtime.LockOSThread() // libtorch's no-grad mode is per OS thread
	defer runtime.UnlockOSThread()
	// Rows are checked against the model's config.json before its
	// weights load (minutes for a large model); against the loaded model
	// where the config alone does not read.
	cfg, checked := modelConfig(c.String("model"))
	if checked {
		if err := checkScoreRows(rows, cfg); err != nil {
			return err
		}
	}
	g, _, err := loadAnyModel(c, "score")
	if err != nil {
		return err
	}
	if !checked {
		if err := checkScoreRows(rows, g.Config()); err != nil {
			return err
		}
	}
	t0 := time.Now()
	nll := make([][]float32, 0, len(rows))
	var logits [][][]float32
	tokens := 0
	for lo := 0; lo < len(rows); lo += c.Int("batch") {
		batch := rows[lo:min(lo+c.Int("batch"), len(rows))]
		var part [][]float32
		if logitsOut == "" {
			part, err = engine.TokenNLL(g, batch)
		} else {
			part, err = scoreLogits(g, batch, &logits)
		}
		if err != nil {
			return fmt.Errorf("score: %w", err)
		}
		for _, p := range part {
			tokens += len(p) + 1
		}
		nll = append(nll, part...)
		torchx.Collect()
	}
	secs := time.Since(t0).Seconds()
	slog.Info("scored", "rows", len(rows), "tokens", tokens, "seconds", fmt.Sprintf("%.3f", secs), "tokens_per_s", fmt.Sprintf("%.1f", float64(tokens)/secs))
	if logitsOut != "" {
		b, err := json.Marshal(map[string]any{"ids": rows, "logits": logits})
		if err != nil {
			return fmt.Errorf("score: logits: %w", err)
		}
		if err := atomicfile.WriteFile(logitsOut, append(b, '\n')); err != nil {
			return fmt.Errorf("score: --logits-out: %w", err)
		}
	}
	return printJSON(map[string]any{"nll": nll})
}

// scoreLogits is TokenNLL of batch (bit for bit: ScoreWindows' NLL is
// TokenNLL's) with every position's logits, from the same pass, appended
// to logits: what another implementation's logits are compared with,
// where the NLL alone would hide a difference off the target token.
func scoreLogits(g *model.GPT, batch [][]int32, logits *[][][]float32) ([][]float32, error) {
	spans := make([][2]int, len(batch))
	for i, r := range batch {
		spans[i] = [2]int{0, len(r) - 1}
	}
	scores, err := engine.ScoreWindows(g, batch, spans, engine.SpanOptions{Logits: true})
	if err != nil {
		return nil, err
	}
	nll := make([][]float32, len(scores))
	for i, s := range scores {
		nll[i] = s.NLL
		*logits = append(*logits, s.Logits)
	}
	return nll, nil
}

// tokenizerOf finds the tokenizer that belongs to a model: tokenizer.json
// of a Hugging Face directory, or the run's data/tokenizer.json.
func tokenizerOf(modelArg, dir string) (*data.Tokenizer, error) {
	candidates := []string{filepath.Join(modelArg, checkpoint.HFTokenizerFile)}
	if run := checkpoint.RunDir(dir); run != "" {
		candidates = append(candidates, filepath.Join(run, "data", "tokenizer.json"))
	}
	candidates = append(candidates, filepath.Join(modelArg, "data", "tokenizer.json"))
	for i, p := range candidates {
		if _, err := os.Stat(p); err == nil {
			if i == 0 {
				return data.LoadTokenizer("hf:" + p) // a Hugging Face directory's own
			}
			// A run's: verified against its data/report.json, as extract does.
			return data.OpenTokenizer(filepath.Dir(p))
		}
	}
	return nil, fmt.Errorf("no tokenizer.json found beside %s (looked for %s)", modelArg, strings.Join(candidates, ", "))
}

// stopIDs reports the tokens that end a prompt's continuation: the
// tokenizer's EOS, and the eos_token_id (a number or a list: Llama 3
// instruct ends a turn with <|eot_id|>) of the generation_config.json
// beside a Hugging Face model.
func stopIDs(modelArg string, tok *data.Tokenizer) func(int32) bool {
	stop := map[int32]bool{}
	if tok.EOS() >= 0 {
		stop[tok.EOS()] = true
	}
	var gen struct {
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if b, err := os.ReadFile(filepath.Join(modelArg, checkpoint.HFGenerationConfigFile)); err == nil && json.Unmarshal(b, &gen) == nil {
		var one int32
		var list []int32
		if json.Unmarshal(gen.EOS, &one) == nil {
			stop[one] = true
		} else if json.Unmarshal(gen.EOS, &list) == nil {
			for _, id := range list {
				stop[id] = true
			}
		}
	}
	return func(id int32) bool { return stop[id] }
}

func generateAction(c *cli.Context) error {
	if err := modelArgs("generate", c); err != nil {
		return err
	}
	prompt := c.String("prompt")
	if c.IsSet("prompt") && prompt == "" {
		return usageError("generate: --prompt is empty: give the text to continue")
	}
	if (prompt == "") == (c.String("ids-json") == "") {
		return usageError("generate: give exactly one of --ids-json FILE and --prompt TEXT")
	}
	if c.Int("max-new") < 1 {
		return usageError("generate: --max-new %d: must be >= 1", c.Int("max-new"))
	}
	if c.IsSet("ignore-eos") && prompt == "" {
		return usageError("generate: --ignore-eos goes with --prompt: rows of ids never stop early")
	}
	var rows [][]int32
	var err error
	if prompt == "" {
		if rows, err = readIDRows("generate", c.String("ids-json")); err != nil {
			return err
		}
	}
	if cfg, ok := modelConfig(c.String("model")); ok && prompt == "" {
		if err := checkIDs("generate", rows, cfg.Vocab); err != nil {
			return err
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g, dir, err := loadAnyModel(c, "generate")
	if err != nil {
		return err
	}
	var tok *data.Tokenizer
	if prompt != "" {
		if tok, err = tokenizerOf(c.String("model"), dir); err != nil {
			return usageError("generate: --prompt needs the model's tokenizer: %v", oneLine(err.Error()))
		}
		if tok.VocabSize() > g.Config().Vocab {
			return usageError("generate: the tokenizer has %d tokens, the model's vocabulary %d: they do not belong together", tok.VocabSize(), g.Config().Vocab)
		}
		ids, err := tok.EncodeSpecial(prompt)
		if err != nil {
			return usageError("generate: --prompt: %v", err)
		}
		rows = [][]int32{ids}
	}
	if err := checkIDs("generate", rows, g.Config().Vocab); err != nil {
		return err
	}
	t0 := time.Now()
	out, err := engine.Generate(g, rows, c.Int("max-new"), engine.GenOptions{UseCache: !c.Bool("no-cache")})
	if ce := (*engine.ContextError)(nil); errors.As(err, &ce) {
		if ce.MostNew() < 1 {
			// "at most --max-new 0" named a value generate refuses.
			return usageError("generate: the longest row's %d tokens fill the model's context of %d: no room for a new token; give rows of at most %d", ce.Longest, ce.Context, ce.Context)
		}
		return usageError("generate: --max-new %d: the longest row's %d tokens and %d new ones need %d positions, the model's context has %d (at most --max-new %d)",
			ce.New, ce.Longest, ce.New, ce.Longest+ce.New-1, ce.Context, ce.MostNew())
	}
	if err != nil {
		return usageError("generate: %v", err)
	}
	slog.Info("generated", "rows", len(rows), "tokens", len(rows)*c.Int("max-new"), "seconds", fmt.Sprintf("%.3f", time.Since(t0).Seconds()))
	if tok == nil {
		return printJSON(map[string]any{"ids": out})
	}
	shown := out[0]
	if !c.Bool("ignore-eos") {
		if i := slices.IndexFunc(out[0], stopIDs(c.String("model"), tok)); i >= 0 {
			out[0], shown = out[0][:i+1], out[0][:i]
		}
	}
	text := lossyutf8.String([]byte(tok.DecodeAfter(rows[0], shown)))
	if c.Bool("json") {
		return printJSON(map[string]any{"ids": out, "text": []string{text}})
	}
	_, err = fmt.Fprintln(stdout, prompt+text)
	return err
}

func exportAction(c *cli.Context) error {
	if c.NArg() != 2 {
		return usageError("export: want CHECKPOINT OUT, got %d arguments", c.NArg())
	}
	src, out := c.Args().Get(0), c.Args().Get(1)
	// An existing OUT first: an earlier export holds model.safetensors and
	// would otherwise be named as a checkpoint directory.
	if outguard.Exists(out) {
		return usageError("export: %s exists; export writes a new directory", out)
	}
	if where := outguard.Inside(out, data.ResolveCacheDir("")); where != "" {
		return usageError("export: %s is in %s; an export never goes there: name a new directory elsewhere", out, where)
	}
	if checkpoint.IsHFDir(src) {
		return usageError("export: %s is a Hugging Face directory already: export writes one from a memo checkpoint or run", src)
	}
	dir, err := checkpoint.Resolve(src)
	if err != nil {
		return usageError("export: %v", oneLine(err.Error()))
	}
	warnUnfinished("export", src, dir)
	_, isLoRA := checkpoint.ReadLoRAState(dir)
	merge := c.Bool("merge")
	switch {
	case merge && !isLoRA:
		return usageError("export --merge: %s holds no LoRA adapters (a full model): export it without --merge", dir)
	case !merge && isLoRA:
		return usageError("export: %s is a LoRA checkpoint (adapters, not a model): use memo export --merge", dir)
	}
	opt := checkpoint.ExportOptions{BOS: -1, EOS: -1}
	switch v := c.Int("transformers"); v {
	case 5:
		opt.Form = model.HFForm5
	case 4:
		opt.Form = model.HFForm4
	default:
		return usageError("export: --transformers %d: want 5 (rope_parameters, dtype) or 4 (rope_theta, rope_scaling, torch_dtype)", v)
	}
	// From here a signal ends the export with its one line and exit 130,
	// also during the check's load (a minute for a 7B model).
	ctx, cancel := signalContext()
	defer cancel()
	if !merge {
		// Loaded as every command that runs it loads it (header, shapes,
		// dtypes, every tensor present, finite weights), so an export never
		// hands on what memo itself refuses; the copy is then of the
		// verified file. A merge loads and checks as it writes.
		g, _, err := checkpoint.LoadModel(dir, "cpu", "fp32")
		if err != nil {
			return usageError("export: %s: %s", src, oneLine(err.Error()))
		}
		g.Release()
	}
	if run := checkpoint.RunDir(dir); run != "" {
		if p := filepath.Join(run, "data", "tokenizer.json"); fileExists(p) {
			// Written from the loaded tokenizer, not copied: a file memo
			// wrote before carries a key the library refuses.
			tok, err := data.OpenTokenizer(filepath.Dir(p))
			if err != nil {
				return usageError("export: %v", err)
			}
			opt.Tokenizer, opt.BOS, opt.EOS = tok.JSON(), int(tok.BOS()), int(tok.EOS())
			if cfg, err := checkpoint.ReadConfig(dir); err == nil {
				opt.TokenizerFiles = tokenizerCompanions(run, cfg, tok)
			}
		}
	}
	if opt.Tokenizer == nil {
		slog.Warn("export: the checkpoint is not in a run directory with data/tokenizer.json, so the export has no tokenizer.json and generation_config.json no eos_token_id (AutoTokenizer fails on it; copy the tokenizer in yourself)", "checkpoint", dir)
	}
	export := checkpoint.Export
	if merge {
		export = checkpoint.ExportMerged
	}
	if err := startsOver(ctx, export(ctx, dir, out, opt)); err != nil {
		if errors.Is(err, errInterruptedAtOnce) {
			return err // its temporary directory is gone
		}
		// A damaged source is bad input (exit 2); an output that cannot
		// be written is a failure (exit 1), as for every command.
		return fmt.Errorf("export: %w", err)
	}
	fmt.Fprintf(os.Stderr, "memo: exported %s to %s\n", dir, out)
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// warnUnfinished logs that a command named a run (or its checkpoints/)
// whose training has not finished, so that the model it resolved to is
// an intermediate one: export, score, generate and audit go on with it
// (a researcher may want a partial model), but say which. A checkpoint
// named by its step directory is the user's choice and says nothing.
func warnUnfinished(cmd, arg, dir string) {
	if why := unfinishedRun(arg); why != "" {
		slog.Warn(cmd+": the run has not finished training: using its newest checkpoint, not a finished model", "run", arg, "train", why, "checkpoint", dir)
	}
}

// unfinishedRun is why the run arg names (a run directory or its
// checkpoints/) has not finished training, "" when it has or arg names
// no run.
func unfinishedRun(arg string) string {
	runDir := filepath.Clean(arg)
	if filepath.Base(runDir) == checkpoint.DirName {
		runDir = filepath.Dir(runDir)
	}
	if _, err := os.Stat(filepath.Join(runDir, checkpoint.DirName)); err != nil {
		return ""
	}
	return experiments.UnfinishedTraining(runDir)
}
