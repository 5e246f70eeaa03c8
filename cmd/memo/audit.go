package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/data/labelled"
	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/eval/blind"
	"github.com/memo-research/memo/experiments"
	"github.com/memo-research/memo/extract"
	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/filehash"
	"github.com/memo-research/memo/internal/outguard"
	"github.com/memo-research/memo/internal/rankenv"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/plots"
	"github.com/urfave/cli/v2"
)

func auditCommand() *cli.Command {
	return &cli.Command{
		Name:  "audit",
		Usage: "score any model's membership statistics on labelled member/non-member texts, beside a blind baseline",
		Description: "Takes a model (a memo run or checkpoint, or a Hugging Face directory) and texts\n" +
			"labelled member or non-member of its training data: --data FILE, JSONL or Parquet with a\n" +
			"text and a label field (WikiMIA's input/label are found by themselves; labels 1/0,\n" +
			"true/false, member/nonmember) or MIMIR's paired member/nonmember fields; or\n" +
			"--members A --nonmembers B, one file per class (.txt: a text per line). Each text is\n" +
			"scored whole with the model's own tokenizer; one longer than the context in windows that\n" +
			"begin every --stride tokens, each scoring only the tokens the earlier ones did not (as\n" +
			"transformers' perplexity guide does). Beside the statistics it runs the blind baseline,\n" +
			"a classifier that reads the texts and never the model (Das et al. 2024): when it reaches\n" +
			"AUC 0.6 and a label-permutation test puts that above chance, the labels are separable\n" +
			"without the model, and the report says so. A text given twice is scored once; one given\n" +
			"under both labels is refused.\n" +
			"\n" +
			"Writes a new directory --out (refused if it exists): scores.parquet (an attack's columns,\n" +
			"the tokens each text contributed, the blind score), summary.json (per statistic AUC and\n" +
			"TPR at 0.1, 1 and 5 % FPR with bootstrap intervals, under an attack's keys, and blind),\n" +
			"report.md and figures/audit-roc.*. See docs/ATTACKS.md, \"Auditing any model\".",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Usage: "the model: a memo run, checkpoints/ or checkpoint `DIR`, or a Hugging Face directory"},
			&cli.StringFlag{Name: "data", Usage: "labelled texts, JSONL or Parquet `FILE`"},
			&cli.StringFlag{Name: "members", Usage: "member texts `FILE` (JSONL, Parquet or .txt), with --nonmembers"},
			&cli.StringFlag{Name: "nonmembers", Usage: "non-member texts `FILE`, with --members"},
			&cli.StringFlag{Name: "text-field", Usage: "the text field's `NAME` (default: input, text or document, whichever is there)"},
			&cli.StringFlag{Name: "label-field", Usage: "the label field's `NAME` (default: label)"},
			&cli.StringFlag{Name: "out", Usage: "new output `DIR`", DefaultText: "required"},
			&cli.StringFlag{Name: "tokenizer", Usage: "a tokenizer.json `FILE` for a model that has none beside it (default: the model's own)"},
			&cli.IntFlag{Name: "window", Usage: "the longest window in tokens (0: the model's context)"},
			&cli.IntFlag{Name: "stride", Usage: "tokens between window starts for texts longer than the window (0: half the window)"},
			&cli.BoolFlag{Name: "lowercase", Value: true, Usage: "score each text's lowercased version too, for the lowercase ratio (a second pass: twice the time); --lowercase=false skips it"},
			&cli.Float64Flag{Name: "mink-fraction", Value: 0.2, Usage: "K of Min-K% and Min-K%++ (mimir's 0.2)"},
			&cli.StringFlag{Name: "frequency-corpus", Usage: "texts `FILE` (JSONL, Parquet, or any other file as one text) whose token frequencies are DC-PDD's reference; without it DC-PDD is null"},
			&cli.Float64Flag{Name: "dcpdd-cap", Value: eval.DCPDDDefaultCap, Usage: "DC-PDD's clipping bound a"},
			&cli.IntFlag{Name: "bootstrap", Value: 1000, Usage: "bootstrap resamples behind each interval: 100 to 1000000, or 0 for none"},
			&cli.Int64Flag{Name: "seed", Value: 1234, Usage: "seeds the bootstrap and the blind baseline's folds"},
			&cli.IntFlag{Name: "folds", Value: blind.DefaultConfig().Folds, Usage: "the blind baseline's cross-validation folds"},
			&cli.IntFlag{Name: "blind-permutations", Value: blind.DefaultConfig().Permutations, Usage: "label permutations of the blind baseline's test against chance (its p-value is at least 1/(N+1); 0: no test, the AUC alone decides)"},
			&cli.StringFlag{Name: "device", Usage: "cpu, cuda or cuda:N (default: the CPU)"},
			&cli.StringFlag{Name: "precision", Usage: "fp32, bf16 or fp16 (default: fp32)"},
			&cli.IntFlag{Name: "batch-size", Usage: "windows per forward pass (0: from free memory)"},
			&cli.IntFlag{Name: "threads", Usage: "libtorch threads (0: all cores)"},
		},
		Action: auditAction,
	}
}

// auditArgs checks the flags that need no file read.
func auditArgs(c *cli.Context) error {
	switch {
	case c.NArg() > 0:
		return usageError("audit: unexpected argument %q: the model is --model DIR", c.Args().First())
	case c.String("model") == "":
		return usageError("audit: give --model DIR (a memo run or checkpoint, or a Hugging Face directory)")
	case c.String("out") == "":
		return usageError("audit: give --out DIR, a new directory for the results")
	case (c.String("data") == "") == (c.String("members") == "" && c.String("nonmembers") == ""):
		return usageError("audit: give --data FILE, or --members FILE and --nonmembers FILE")
	case c.String("data") == "" && (c.String("members") == "" || c.String("nonmembers") == ""):
		return usageError("audit: --members and --nonmembers go together")
	case !(c.Float64("mink-fraction") > 0 && c.Float64("mink-fraction") <= 1):
		return usageError("audit: --mink-fraction %v: must be in (0, 1]", c.Float64("mink-fraction"))
	case !(c.Float64("dcpdd-cap") > 0) || math.IsInf(c.Float64("dcpdd-cap"), 1):
		return usageError("audit: --dcpdd-cap %v: must be a finite number > 0", c.Float64("dcpdd-cap"))
	case c.Int("bootstrap") < 0 || c.Int("bootstrap") > 0 && c.Int("bootstrap") < 100:
		return usageError("audit: --bootstrap %d: must be 0 or at least 100", c.Int("bootstrap"))
	case c.Int("folds") < 2:
		return usageError("audit: --folds %d: must be >= 2", c.Int("folds"))
	case c.Int("blind-permutations") < 0 || c.Int("blind-permutations") > 0 && c.Int("blind-permutations") < 20:
		// p is at least 1/(1+permutations), and "separable" needs p < 0.05.
		return usageError("audit: --blind-permutations %d: must be 0 or at least 20 (a p-value below 0.05 needs 20 shuffles)", c.Int("blind-permutations"))
	}
	if err := atLeast(c, "audit", 0, "stride", "window", "batch-size"); err != nil {
		return err
	}
	if err := checkInferenceFlags(c, "audit"); err != nil {
		return err
	}
	out := c.String("out")
	if err := checkNewOutput("audit: --out", out, "directory"); err != nil {
		return err
	}
	if st, err := os.Stat(filepath.Dir(filepath.Clean(out))); err != nil || !st.IsDir() {
		return usageError("audit: --out %s: directory %s does not exist", out, filepath.Dir(filepath.Clean(out)))
	}
	warnAuditLeftovers(out)
	return nil
}

// warnAuditLeftovers names the temporary directories of audits into out
// that were killed outright (SIGKILL, a lost node) while writing: hidden
// beside out, they hold what looks like a whole audit but may lack
// files. They are not removed: another audit into out may be writing one.
func warnAuditLeftovers(out string) {
	dir, base := filepath.Split(filepath.Clean(out))
	ents, err := os.ReadDir(cmp.Or(dir, "."))
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.IsDir() && atomicfile.IsTemp(e.Name(), base) {
			slog.Warn("audit: an audit into this --out was killed while writing and left an incomplete directory; remove it", "path", filepath.Join(dir, e.Name()))
		}
	}
}

// readAuditTexts reads the labelled set the flags name, each distinct
// text once.
func readAuditTexts(c *cli.Context) (texts []labelled.Text, duplicates int, err error) {
	if c.String("data") != "" {
		t, err := labelled.Read(c.String("data"), labelled.Fields{Text: c.String("text-field"), Label: c.String("label-field")})
		if err != nil {
			return nil, 0, fmt.Errorf("audit: --data: %w", err)
		}
		texts = t
	} else {
		for _, f := range []struct {
			flag   string
			member bool
		}{{"members", true}, {"nonmembers", false}} {
			t, err := labelled.ReadClass(c.String(f.flag), f.member, c.String("text-field"))
			if err != nil {
				return nil, 0, fmt.Errorf("audit: --%s: %w", f.flag, err)
			}
			texts = append(texts, t...)
		}
	}
	texts, dropped, err := labelled.Dedup(texts)
	if err != nil {
		return nil, 0, fmt.Errorf("audit: %w", err)
	}
	if dropped > 0 {
		// A copy in another fold of the blind baseline puts the held-out
		// text's own features in its class's counts: 100 random texts
		// each given twice read AUC 0.99, "separable".
		slog.Warn("audit: texts given more than once under one label are scored once", "dropped", dropped)
	}
	if err := labelled.CheckClasses(texts, 2); err != nil {
		return nil, 0, fmt.Errorf("audit: %w", err)
	}
	return texts, dropped, nil
}

// frequencyCorpus counts the tokens of the --frequency-corpus texts.
func frequencyCorpus(path string, tok *data.Tokenizer, vocab int) (*eval.TokenFrequency, error) {
	var texts []string
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".parquet":
		t, err := labelled.ReadClass(path, false, "")
		if err != nil {
			return nil, err
		}
		for _, x := range t {
			texts = append(texts, x.Text)
		}
	default:
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, badinput.Errorf("--frequency-corpus: %v", err)
		}
		texts = []string{string(b)}
	}
	docs := make([][]int32, len(texts))
	for i, t := range texts {
		ids, err := tok.Encode(t)
		if err != nil {
			return nil, fmt.Errorf("--frequency-corpus: %w", err)
		}
		docs[i] = ids
	}
	f := eval.NewTokenFrequency(vocab, docs)
	if f.Total == 0 {
		return nil, badinput.Errorf("--frequency-corpus %s: no tokens", path)
	}
	return f, nil
}

// AuditSummary is the audit's summary.json.
type AuditSummary struct {
	Model          string          `json:"model"`
	Checkpoint     string          `json:"checkpoint"`
	WeightsSHA     string          `json:"weights_sha256"`                // of the weights scored (checkpoint.WeightsDigest); a LoRA checkpoint's adapters
	BaseSHA        string          `json:"base_weights_sha256,omitempty"` // a LoRA checkpoint's base weights
	Data           string          `json:"data"`
	DataSHA256     []string        `json:"data_sha256"`           // of --data, or of --members and --nonmembers
	TextField      string          `json:"text_field,omitempty"`  // as given or detected; joined with ", " where the files differ
	LabelField     string          `json:"label_field,omitempty"` // none for MIMIR pairs and class files
	Tokenizer      string          `json:"tokenizer"`             // --tokenizer, or "the model's own"
	TokenizerSHA   string          `json:"tokenizer_sha256"`      // of the tokenizer.json the texts were encoded with
	Device         string          `json:"device"`
	Precision      string          `json:"precision"`
	BatchSize      int             `json:"batch_size"` // windows a forward pass, as resolved (--batch-size 0: from free memory)
	Threads        int             `json:"threads"`    // libtorch threads
	Memo           string          `json:"memo"`       // the revision of memo that audited
	NMembers       int             `json:"n_members"`
	NNonmembers    int             `json:"n_nonmembers"`
	Duplicates     int             `json:"duplicates_dropped"`
	TokensScored   int             `json:"tokens_scored"`
	Context        int             `json:"context"`
	Window         int             `json:"window"`
	Stride         int             `json:"stride"`
	NWindows       int             `json:"n_windows"`
	MinKFraction   float64         `json:"mink_fraction"`
	Lowercase      bool            `json:"lowercase_pass"`
	FrequencyCorp  string          `json:"frequency_corpus,omitempty"`
	FrequencySHA   string          `json:"frequency_corpus_sha256,omitempty"`
	DCPDDCap       float64         `json:"dcpdd_cap"`
	Bootstrap      int             `json:"bootstrap"`
	Seed           int64           `json:"seed"`
	MIA            eval.AuditStats `json:"mia"`
	Blind          auditBlind      `json:"blind"`
	Separable      bool            `json:"labels_separable_without_model"`
	Interpretation string          `json:"interpretation"`
}

type auditBlind struct {
	Method       string   `json:"method"`
	Folds        int      `json:"folds"`
	Threshold    float64  `json:"threshold"`
	Permutations int      `json:"permutations"`
	P            eval.Num `json:"p_value"` // null without permutations
	Verdict      string   `json:"verdict"`
	eval.AuditStat
}

// readFields names the fields the texts were read from, given or
// detected, each distinct name once in the order met ("" for none:
// a .txt class file's lines).
func readFields(read []labelled.Text) (text, label string) {
	var fields, labels []string
	for _, t := range read {
		if t.Field != "" && !slices.Contains(fields, t.Field) {
			fields = append(fields, t.Field)
		}
		if t.LabelField != "" && !slices.Contains(labels, t.LabelField) {
			labels = append(labels, t.LabelField)
		}
	}
	return strings.Join(fields, ", "), strings.Join(labels, ", ")
}

// tokenizeAudit encodes each text, and its lowercase copy for the
// lowercase statistic when lowercase is set, with the special tokens the
// tokenizer's post-processor adds, as transformers' tokenizer(text)
// does and the published audits' code (Min-K%, mimir, DC-PDD) takes it:
// a Llama-family model then scores the text's first token after its BOS,
// as it was trained to. memo's own tokenizers, GPT-2's and Pythia's add
// none.
func tokenizeAudit(ctx context.Context, tok *data.Tokenizer, texts []labelled.Text, lowercase bool) ([]extract.AuditInput, error) {
	t0 := time.Now()
	inputs := make([]extract.AuditInput, len(texts))
	for i, t := range texts {
		if ctx.Err() != nil {
			return nil, errAuditInterrupted
		}
		ids, err := tok.EncodeSpecial(t.Text)
		if err != nil {
			return nil, fmt.Errorf("audit: %s: %w", t.Where, err)
		}
		var lower []int32
		if lowercase {
			if lower, err = tok.EncodeSpecial(strings.ToLower(t.Text)); err != nil {
				return nil, fmt.Errorf("audit: %s: %w", t.Where, err)
			}
		}
		inputs[i] = extract.AuditInput{Where: t.Where, Tokens: ids, LowerTokens: lower}
	}
	slog.Info("tokenized", "texts", len(texts), "seconds", fmt.Sprintf("%.1f", time.Since(t0).Seconds()))
	return inputs, nil
}

// blindBaseline tells members from non-members by their text alone, in
// folds stratified by class (fewer than folds where a class is smaller),
// with bootstrap resamples of its AUC.
func blindBaseline(ctx context.Context, texts []labelled.Text, folds, permutations, bootstrap int, seed int64) (blind.Result, blind.Config, error) {
	bodies := make([]string, len(texts))
	member := make([]bool, len(texts))
	nm := 0
	for i, t := range texts {
		bodies[i], member[i] = t.Text, t.Member
		if t.Member {
			nm++
		}
	}
	bcfg := blind.DefaultConfig()
	bcfg.Folds, bcfg.Seed, bcfg.Permutations = min(folds, nm, len(member)-nm), uint64(seed), permutations
	if bcfg.Folds < 2 {
		return blind.Result{}, bcfg, usageError("audit: the set has %d members and %d non-members: the blind baseline's cross-validation needs two of each", nm, len(member)-nm)
	}
	if bcfg.Folds < folds {
		slog.Warn("audit: fewer blind-baseline folds than --folds: a class is smaller", "folds", bcfg.Folds, "asked", folds, "members", nm, "nonmembers", len(member)-nm)
	}
	// Progress between the steps that have no bar of their own: at 10,000
	// texts the baseline alone is a minute of silence on a loaded machine.
	slog.Info("audit: blind baseline", "texts", len(texts), "folds", bcfg.Folds, "permutations", bcfg.Permutations)
	t0 := time.Now()
	// The collector runs for the steps that make no libtorch call:
	// torchx.Init paused it, and the baseline's and the bootstrap's
	// garbage, kept, was most of a 10,000-text audit's peak memory.
	var br blind.Result
	if err := untilInterrupted(ctx, func() (err error) {
		br, err = blind.Evaluate(bodies, member, bcfg, bootstrap, uint64(seed)^0x626c696e64)
		return err
	}); errors.Is(err, errAuditInterrupted) {
		return br, bcfg, err
	} else if err != nil {
		return br, bcfg, usageError("audit: %v", err)
	}
	slog.Info("audit: blind baseline done", "auc", fmt.Sprintf("%.3f", float64(br.AUC)), "p", br.P, "seconds", fmt.Sprintf("%.1f", time.Since(t0).Seconds()))
	return br, bcfg, nil
}

func auditAction(c *cli.Context) error {
	if err := auditArgs(c); err != nil {
		return err
	}
	// audit is one of gracefulCommands: it watches this context in every
	// step that takes long and, stopped, leaves no --out nor temporary
	// directory behind (errAuditInterrupted).
	ctx, cancel := signalContext()
	defer cancel()
	texts, duplicates, err := readAuditTexts(c)
	if err != nil {
		return err
	}
	modelArg := c.String("model")
	ckpt := modelArg
	if !checkpoint.IsHFDir(modelArg) {
		if ckpt, err = checkpoint.Resolve(modelArg); err != nil {
			return modelDirError("audit", modelArg, "run or checkpoint", err)
		}
		warnUnfinished("audit", modelArg, ckpt)
	}
	var tok *data.Tokenizer
	if p := c.String("tokenizer"); p != "" {
		if tok, err = data.LoadTokenizer("hf:" + p); err != nil {
			return usageError("audit: --tokenizer %s: %v", p, oneLine(err.Error()))
		}
		// --tokenizer is for a model with none beside it: another one
		// than its own would score ids the model was never trained on.
		if own, err := tokenizerOf(modelArg, ckpt); err == nil && !own.Same(tok) {
			return usageError("audit: --tokenizer %s: the model has a tokenizer of its own (beside --model %s), and this is another; leave --tokenizer out", p, modelArg)
		}
	} else if tok, err = tokenizerOf(modelArg, ckpt); err != nil {
		return usageError("audit: --model %s: %v; name the model's tokenizer.json with --tokenizer", modelArg, oneLine(err.Error()))
	}
	inputs, err := tokenizeAudit(ctx, tok, texts, c.Bool("lowercase"))
	if err != nil {
		return err
	}

	threads, _ := runThreads(c, rankenv.Config{}) // a Slurm job's CPUs, as memo run
	torchx.Init(threads, uint64(c.Int64("seed")))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	acfg := extract.AuditConfig{Device: c.String("device"), Precision: c.String("precision"), BatchSize: c.Int("batch-size"),
		Window: c.Int("window"), Stride: c.Int("stride"), MinKFraction: c.Float64("mink-fraction")}
	m, err := extract.OpenAuditModel(ckpt, acfg)
	if err != nil {
		return usageError("audit: --model %s: %s", modelArg, oneLine(err.Error()))
	}
	defer m.Close()
	if ctx.Err() != nil {
		return errAuditInterrupted
	}
	// Before scoring, so that an audit does not fail at its end: a
	// Hugging Face directory's weights are hashed, seconds a GB.
	weightsSHA, baseSHA, err := checkpoint.WeightsDigest(m.Checkpoint)
	if err != nil {
		return fmt.Errorf("audit: the weights' digest: %w", err)
	}
	if err := m.CheckTokens(tok.VocabSize(), inputs); err != nil {
		return usageError("audit: %v", err)
	}
	if acfg.Window, acfg.Stride, err = m.Windows(acfg); err != nil {
		return usageError("audit: %v", err)
	}
	acfg.BatchSize = m.BatchSize(acfg) // resolved once, and recorded
	var freq *eval.TokenFrequency
	if p := c.String("frequency-corpus"); p != "" {
		t0 := time.Now()
		if err := untilInterrupted(ctx, func() (err error) {
			freq, err = frequencyCorpus(p, tok, m.Vocab)
			return err
		}); errors.Is(err, errAuditInterrupted) {
			return err
		} else if err != nil {
			return usageError("audit: %v", err)
		}
		slog.Info("audit: DC-PDD's reference frequencies counted", "tokens", freq.Total, "seconds", fmt.Sprintf("%.1f", time.Since(t0).Seconds()))
	}

	// The blind baseline first: it needs no model and takes seconds.
	br, bcfg, err := blindBaseline(ctx, texts, c.Int("folds"), c.Int("blind-permutations"), c.Int("bootstrap"), c.Int64("seed"))
	if err != nil {
		return err
	}

	scored, err := m.Score(ctx, inputs, acfg)
	if ctx.Err() != nil {
		return errAuditInterrupted
	} else if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	rows := make([]eval.AuditScore, len(texts))
	total, windows := 0, 0
	for i, t := range texts {
		split := eval.SplitNonmember
		if t.Member {
			split = eval.SplitMember
		}
		rows[i] = eval.ScoreAuditText(eval.AuditText{ID: int64(i), Split: split, Title: t.Where, Text: t.Text,
			Tokens: inputs[i].Tokens, Losses: scored[i].Losses, LowerLosses: scored[i].LowerLosses,
			MinKPP: scored[i].MinKPP, NWindows: scored[i].NWindows}, acfg.MinKFraction, freq, c.Float64("dcpdd-cap"))
		rows[i].Blind = br.Scores[i]
		total += rows[i].NScored
		windows += rows[i].NWindows
	}
	ecfg := eval.DefaultConfig()
	ecfg.Bootstrap, ecfg.Seed = c.Int("bootstrap"), c.Int64("seed")
	slog.Info("audit: statistics' AUCs and bootstrap intervals", "texts", len(rows), "tokens_scored", total, "resamples", ecfg.Bootstrap)
	var stats eval.AuditStats
	if err := untilInterrupted(ctx, func() error { stats = eval.SummarizeAudit(rows, ecfg); return nil }); err != nil {
		return err
	}
	sum := AuditSummary{
		Model: modelArg, Checkpoint: m.Checkpoint, Data: c.String("data"), TokensScored: total,
		Context: m.Context, Window: acfg.Window, Stride: acfg.Stride, NWindows: windows, MinKFraction: acfg.MinKFraction, Lowercase: c.Bool("lowercase"),
		FrequencyCorp: c.String("frequency-corpus"), DCPDDCap: c.Float64("dcpdd-cap"),
		BatchSize: acfg.BatchSize, Threads: threads,
		Bootstrap: ecfg.Bootstrap, Seed: ecfg.Seed, MIA: stats,
		Blind: auditBlind{Method: "naive Bayes on binarized word uni- and bigrams (characters in scripts without spaces), stratified k-fold, label-permutation test",
			Folds: bcfg.Folds, Threshold: blind.SeparableAUC, Permutations: br.Permutations, P: eval.Num(br.P), Verdict: br.Verdict(), AuditStat: br.AuditStat},
		Separable:  br.Separable(),
		Duplicates: duplicates,
	}
	files := []string{c.String("data")}
	if sum.Data == "" {
		sum.Data = c.String("members") + " + " + c.String("nonmembers")
		files = []string{c.String("members"), c.String("nonmembers")}
	}
	for _, p := range files {
		h, err := filehash.SHA256(p)
		if err != nil {
			return fmt.Errorf("audit: hash %s: %w", p, err)
		}
		sum.DataSHA256 = append(sum.DataSHA256, h)
	}
	if p := c.String("frequency-corpus"); p != "" {
		if sum.FrequencySHA, err = filehash.SHA256(p); err != nil {
			return fmt.Errorf("audit: hash %s: %w", p, err)
		}
	}
	sum.WeightsSHA, sum.BaseSHA = weightsSHA, baseSHA
	sum.TokenizerSHA = fmt.Sprintf("%x", sha256.Sum256(tok.JSON()))
	sum.TextField, sum.LabelField = readFields(texts)
	sum.Tokenizer = c.String("tokenizer")
	if sum.Tokenizer == "" {
		sum.Tokenizer = "the model's own"
	}
	sum.Device, sum.Precision = m.Device, cmp.Or(acfg.Precision, "fp32")
	sum.Memo = versionLine(experiments.BuiltVersions())
	for _, t := range texts {
		if t.Member {
			sum.NMembers++
		} else {
			sum.NNonmembers++
		}
	}
	sum.Interpretation = auditVerdict(br)
	return writeAudit(ctx, c.String("out"), rows, &sum, c.App.Writer)
}

// errAuditInterrupted is an audit stopped by SIGINT or SIGTERM. An audit
// keeps nothing between runs (its --out appears whole, renamed from a
// temporary directory, at the very end), so the same command starts over
// rather than resumes; failure prints this line.
var errAuditInterrupted = errors.New("interrupted; nothing was written; the same command starts over")

// untilInterrupted runs f with the collector on (torchx.WithCollector)
// and returns its error, or errAuditInterrupted as soon as ctx ends: the
// pure-Go steps of an audit (the blind baseline, the bootstrap, counting
// a frequency corpus) watch no context and take a minute at 10,000
// texts. An f still running then dies with the process, having written
// nothing.
func untilInterrupted(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- torchx.WithCollector(f) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return errAuditInterrupted
	}
}

// auditVerdict is the report's sentence on the blind baseline.
func auditVerdict(r blind.Result) string {
	b := r.AuditStat
	auc := fmt.Sprintf("AUC %.3f [%.3f, %.3f]", float64(b.AUC), float64(b.AUCCI[0]), float64(b.AUCCI[1]))
	if math.IsNaN(float64(b.AUCCI[0])) {
		auc = fmt.Sprintf("AUC %.3f (no interval: --bootstrap 0)", float64(b.AUC))
	}
	if !math.IsNaN(r.P) {
		auc += fmt.Sprintf(", permutation p = %.3g of %d", r.P, r.Permutations)
	} else {
		auc += ", no permutation test (--blind-permutations 0)"
	}
	const intro = "The blind baseline, a bag-of-words classifier that reads the texts and never the model, "
	switch r.Verdict() {
	case blind.VerdictSeparable:
		return fmt.Sprintf(intro+"tells members from non-members with %s, at or above %.1f and above chance: the labels are "+
			"separable without the model (the classes differ in distribution: dates, topics, sources), so the statistics' AUCs "+
			"here do not measure memorization.", auc, blind.SeparableAUC)
	case blind.VerdictInconclusive:
		if float64(b.AUC) < 0.5 {
			return fmt.Sprintf(intro+"ranks members and non-members backwards with %s: out of fold, on a small set, this is "+
				"usually the cross-validation's own artifact, and it says nothing either way; the statistics' AUCs cannot be "+
				"vouched for without a larger or better-matched set.", auc)
		}
		return fmt.Sprintf(intro+"reaches %s, at or above %.1f but not distinguishable from chance on a set this size: "+
			"inconclusive; the statistics' AUCs cannot be vouched for without a larger set.", auc, blind.SeparableAUC)
	case blind.VerdictShift:
		return fmt.Sprintf(intro+"reaches %s: below %.1f, but above chance, so the classes differ a little in distribution; "+
			"read the statistics' AUCs against the baseline's, not against 0.5.", auc, blind.SeparableAUC)
	}
	return fmt.Sprintf(intro+"reaches %s: it found no shift between the classes. That is not proof that none is there "+
		"(Das et al. also detect dates and rare n-grams, which memo does not run); the statistics' AUCs are read as the "+
		"model's on that assumption.", auc)
}

// writeAudit writes every output into a temporary directory beside out
// and renames it to out, so that out appears whole or not at all.
func writeAudit(ctx context.Context, out string, rows []eval.AuditScore, sum *AuditSummary, stdout io.Writer) error {
	tmp, err := atomicfile.MkdirTemp(filepath.Dir(filepath.Clean(out)), "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := atomicfile.Write(filepath.Join(tmp, runfiles.ScoresFile), func(w io.Writer) error {
		return eval.AuditScores().WriteParquet(w, rows)
	}); err != nil {
		return fmt.Errorf("audit: scores.parquet: %w", err)
	}
	js, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(tmp, runfiles.SummaryFile), append(js, '\n')); err != nil {
		return fmt.Errorf("audit: summary.json: %w", err)
	}
	var rep bytes.Buffer
	auditReport(&rep, sum)
	if err := atomicfile.WriteFile(filepath.Join(tmp, "report.md"), rep.Bytes()); err != nil {
		return fmt.Errorf("audit: report.md: %w", err)
	}
	var curves []plots.AuditCurve
	for _, x := range eval.AuditStatistics() {
		var ms, cs []float64
		for i := range rows {
			v := eval.MemberScore(x.Value(&rows[i].Score), x.HigherMember)
			if rows[i].Split == eval.SplitMember {
				ms = append(ms, v)
			} else {
				cs = append(cs, v)
			}
		}
		for _, s := range sum.MIA {
			if s.Name == x.Name {
				curves = append(curves, plots.AuditCurve{Label: x.Label, Members: ms, Nonmembers: cs, Stat: s.MIAStat})
			}
		}
	}
	var bm, bc []float64
	for _, r := range rows {
		if r.Split == eval.SplitMember {
			bm = append(bm, r.Blind)
		} else {
			bc = append(bc, r.Blind)
		}
	}
	curves = append(curves, plots.AuditCurve{Label: "blind baseline (no model)", Members: bm, Nonmembers: bc, Stat: sum.Blind.MIAStat, Baseline: true})
	pc := plots.DefaultConfig()
	if _, err := plots.AuditROC(filepath.Join(tmp, "figures"), pc, curves); err != nil {
		return fmt.Errorf("audit: figure: %w", err)
	}
	if ctx.Err() != nil {
		return errAuditInterrupted // tmp is removed on the way out
	}
	if outguard.Exists(out) {
		return usageError("audit: --out %s: appeared while the audit ran; it never replaces a directory", out)
	}
	if err := atomicfile.RenameDir(tmp, out); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	_, err = stdout.Write(rep.Bytes())
	return err
}

// auditReport writes report.md: one row per statistic, the blind
// baseline's, and the verdict in words.
func auditReport(w io.Writer, s *AuditSummary) {
	num := func(x eval.Num) string {
		if math.IsNaN(float64(x)) {
			return "—"
		}
		return fmt.Sprintf("%.3f", float64(x))
	}
	ci := func(x eval.Num, c [2]eval.Num) string {
		if math.IsNaN(float64(c[0])) {
			return num(x)
		}
		return fmt.Sprintf("%s [%s, %s]", num(x), num(c[0]), num(c[1]))
	}
	fmt.Fprintf(w, "# Membership audit\n\nmodel %s (%s), data %s: %d members, %d non-members, %d tokens scored in %d windows (window %d of context %d, stride %d)\n\n",
		s.Model, s.Checkpoint, s.Data, s.NMembers, s.NNonmembers, s.TokensScored, s.NWindows, s.Window, s.Context, s.Stride)
	fmt.Fprintf(w, "| statistic | AUC | TPR @ 0.1%% FPR | TPR @ 1%% FPR | TPR @ 5%% FPR |\n|---|---|---|---|---|\n")
	row := func(label string, st eval.AuditStat) {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", label, ci(st.AUC, st.AUCCI), ci(st.TPR0_1, st.TPR0_1CI), ci(st.TPR1, st.TPR1CI), ci(st.TPR5, st.TPR5CI))
	}
	for _, st := range s.MIA {
		label := st.Name
		if x, ok := eval.LookupMIAStatistic(st.Name); ok {
			label = x.Label
		}
		row(label, st.AuditStat)
	}
	row("**blind baseline** (no model)", s.Blind.AuditStat)
	fmt.Fprintf(w, "\n%s\n", s.Interpretation)
	for _, st := range s.MIA {
		// A statistic undefined for some texts (NaN) is scored on the
		// rest: say so, since its AUC is then not over the same texts
		// as the others' and the baseline's.
		if (st.NMembers != 0 || st.NNonmembers != 0) && (st.NMembers != s.NMembers || st.NNonmembers != s.NNonmembers) {
			fmt.Fprintf(w, "\n%s is undefined for some texts and scored on %d of %d members and %d of %d non-members.\n",
				st.Name, st.NMembers, s.NMembers, st.NNonmembers, s.NNonmembers)
		}
	}
	if !s.Lowercase {
		fmt.Fprintf(w, "\nThe lowercase ratio is undefined: --lowercase=false skipped its second pass.\n")
	}
	if s.FrequencyCorp == "" {
		fmt.Fprintf(w, "\nDC-PDD is undefined: no --frequency-corpus named its reference token frequencies.\n")
	}
}
