package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/memo-research/memo/internal/badinput"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/provenance"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
)

// Run attacks the model of checkpointDir (a checkpoint, or a run directory
// whose newest good checkpoint is used) on the documents of ds in
// cfg.Splits and writes the completions to out (completions.arrow).
// trained is the loss the checkpoint was trained with, its run's
// [goldfish] table, which the completions record for eval; nil when it is
// unknown (a checkpoint outside a run directory, an imported model).
func Run(ctx context.Context, cfg Config, checkpointDir string, ds *data.Dataset, out string, trained *loss.Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	cfg, _ = cfg.Resolved() // Validate checked it
	if cfg.Reference != "" {
		// Found now: the reference model is loaded after the whole attack.
		ckpt, _, err := checkpoint.ReadSource(cfg.Reference)
		if err == nil {
			err = sameTokenizer(ds, ckpt)
		}
		if err != nil {
			return badinput.Errorf("extract.reference = %q: %w", cfg.Reference, err)
		}
	}

	// libtorch's grad mode (ts.NoGrad) is per OS thread: a goroutine that
	// moved between threads would build autograd graphs while decoding.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	a, err := loadAttack(cfg, checkpointDir, ds)
	if err != nil {
		return err
	}
	g, ckpt, window, cfg, tok, prompts := a.g, a.ckpt, a.window, a.cfg, a.tok, a.prompts
	mc := g.Config()
	short := 0
	for _, p := range prompts {
		if p.Status != StatusOK {
			short++
			slog.Warn("extract: document too short to attack; written with status too_short",
				"doc_id", p.Doc.ID, "title", p.Doc.Title, "split", p.Doc.Split, "reason", p.Reason)
		}
	}
	slog.Info("extract: attacking", "checkpoint", ckpt, "documents", len(prompts), "too_short", short,
		"mode", cfg.Mode, "decoding", cfg.Decoding, "window", window, "model", mc.String())

	guessed, approx, err := generateFor(ctx, g, cfg, ckpt, ds, prompts, window)
	if err != nil {
		return fmt.Errorf("extract: generate: %w", err)
	}
	gen := topIDs(guessed)
	scores, err := scoreAll(ctx, g, cfg, prompts)
	if err != nil {
		return fmt.Errorf("extract: scoring pass: %w", err)
	}
	losses := make([][]float32, len(scores))
	for i, s := range scores {
		losses[i] = s.losses
	}
	recall, prefix, err := recallFor(ctx, g, cfg, ds, prompts, losses, window)
	if err != nil {
		return fmt.Errorf("extract: %w", err)
	}
	gradNorms, err := gradNorms(ctx, g, cfg, prompts)
	if err != nil {
		return fmt.Errorf("extract: %w", err)
	}
	var refLosses [][]float32
	if cfg.Reference != "" {
		// The attacked model is done with: its memory goes to the
		// reference model, so the two are never held at once.
		if err := g.Release(); err != nil {
			return fmt.Errorf("extract: free the attacked model: %w", err)
		}
		if refLosses, err = referenceLosses(ctx, cfg, ds, prompts); err != nil {
			return err
		}
	}
	rows := make([]runfiles.Completion, len(prompts))
	for i, p := range prompts {
		r := runfiles.Completion{
			DocID: p.Doc.ID, Split: p.Doc.Split, Title: p.Doc.Title, Status: p.Status, Repetitions: p.Doc.Repetitions,
			Prefix: p.Prefix, Suffix: p.Suffix, Generated: gen[i], Text: p.Doc.Text, NTokens: len(p.Doc.IDs),
			TokenLosses: losses[i], RefLoss: math.NaN(),
			MinKPP: scores[i].minKPP, PExtract: scores[i].pExtract, ReCaLL: recall[i], GradNorm: gradNorms[i],
		}
		if approx != nil {
			r.Approx = approx[i]
			if r.Approx == nil {
				r.Approx = &runfiles.NoApprox
			}
		}
		if r.Prefix == nil {
			r.Prefix, r.Suffix, r.Generated = []int32{}, []int32{}, []int32{}
		}
		r.PrefixText = tok.Decode(r.Prefix)
		r.SuffixText, r.GeneratedText = scoredTexts(tok, r.Suffix, r.Generated)
		r.WindowText = tok.Decode(p.Window)
		r.Loss, r.MinK = eval.MeanLoss(losses[i]), eval.MinK(losses[i], cfg.MinKFraction)
		if refLosses != nil {
			r.RefLoss = eval.MeanLoss(refLosses[i])
		}
		rows[i] = r
	}
	meta, err := provenanceOf(ckpt, mc, trained)
	if err != nil {
		return fmt.Errorf("extract: %w", err)
	}
	if meta[provenance.Goldfish] == "" {
		slog.Warn("extract: the loss the checkpoint was trained with is unknown (no run directory with config.toml) and not recorded", "checkpoint", ckpt)
	}
	cj, err := json.Marshal(cfg.recorded())
	if err != nil {
		return fmt.Errorf("extract: %w", err)
	}
	meta[provenance.Extract] = string(cj)
	if prefix != nil {
		meta[MetaRecallPrefix] = prefix.json()
	}
	if approx != nil {
		meta[provenance.Approx] = cfg.approxName()
	}
	// The guesses first: completions.arrow existing means the attack is done.
	if err := writeGuesses(out, cfg, tok, prompts, guessed); err != nil {
		return fmt.Errorf("extract: %w", err)
	}
	if err := runfiles.WriteCompletions(out, rows, meta); err != nil {
		return fmt.Errorf("extract: %w", err)
	}
	slog.Info("extract: done", "out", out, "rows", len(rows), "too_short", short, "elapsed", time.Since(start).Round(time.Millisecond).String())
	return nil
}

// modelTokenizer is the dataset's tokenizer, refused when it has more
// tokens than the model at ckpt (mc) reads: not that model's dataset.
func modelTokenizer(ds *data.Dataset, mc model.Config, ckpt string) (*data.Tokenizer, error) {
	tok, err := ds.Tokenizer()
	if err != nil {
		return nil, fmt.Errorf("extract: %w", err)
	}
	if tok.VocabSize() > mc.Vocab {
		return nil, badinput.Errorf("extract: tokenizer of %s has %d tokens, model %s only %d: not the model of this dataset", ds.Dir(), tok.VocabSize(), ckpt, mc.Vocab)
	}
	return tok, nil
}

// attack is what an attack and a scan both start from (loadAttack).
type attack struct {
	g       *model.GPT
	ckpt    string // the checkpoint checkpointDir resolved to
	window  int    // the attack window, checked against cfg's prompt
	cfg     Config // with an automatic batch size chosen
	tok     *data.Tokenizer
	prompts []Prompt // of cfg.Splits' documents (attackedDocs)
}

// loadAttack loads the model an attack (or a scan) runs on and builds its
// prompts from ds, refusing a dataset whose tokenizer is not the model's.
// Run and Scan share it so that a scan decides the very prompts an attack
// with the same cfg would make.
func loadAttack(cfg Config, checkpointDir string, ds *data.Dataset) (attack, error) {
	g, ckpt, err := loadModel(checkpointDir, cfg.Device, cfg.Precision)
	if err != nil {
		return attack{}, fmt.Errorf("extract: %w", err)
	}
	mc := g.Config()
	window, err := attackWindow(ckpt, mc.Context)
	if err != nil {
		return attack{}, fmt.Errorf("extract: %w", err)
	}
	if err := cfg.CheckWindow(window, mc.Context); err != nil {
		return attack{}, err
	}
	if cfg.BatchSize == 0 {
		avail, maxBatch := batchMemory(g.Device())
		cfg.BatchSize = AutoBatch(mc, g.WeightBytes(), window, avail, maxBatch)
		slog.Info("extract: automatic batch size", "batch_size", cfg.BatchSize)
	}
	tok, err := modelTokenizer(ds, mc, ckpt)
	if err != nil {
		return attack{}, err
	}
	docs, err := attackedDocs(ds, cfg)
	if err != nil {
		return attack{}, err
	}
	return attack{g: g, ckpt: ckpt, window: window, cfg: cfg, tok: tok, prompts: BuildPrompts(cfg, docs, window)}, nil
}

// attackedDocs are the documents of cfg.Splits, in order, at most
// cfg.MaxDocs of each (the first by doc_id) when it is set.
func attackedDocs(ds *data.Dataset, cfg Config) ([]data.Doc, error) {
	var docs []data.Doc
	for _, split := range cfg.Splits {
		d, err := ds.Docs(split)
		if err != nil {
			return nil, fmt.Errorf("extract: %w", err)
		}
		if cfg.MaxDocs > 0 && len(d) > cfg.MaxDocs {
			d = d[:cfg.MaxDocs]
		}
		docs = append(docs, d...)
	}
	return docs, nil
}

// referenceLosses loads the reference model and computes its losses over
// the same windows, the same tokens the attacked model's losses cover: a
// window longer than the reference's context is scored in overlapping
// windows (StrideWindows, half the context apart), every token once with
// at least half a context before it. Cut to the context instead, the
// reference's mean covered the window's head and ref_diff compared it
// with the attacked model's mean over the whole window.
func referenceLosses(ctx context.Context, cfg Config, ds *data.Dataset, prompts []Prompt) ([][]float32, error) {
	ref, ckpt, err := loadModel(cfg.Reference, cfg.Device, cfg.Precision)
	if err != nil {
		return nil, fmt.Errorf("extract.reference = %q: %w", cfg.Reference, err)
	}
	if err := sameTokenizer(ds, ckpt); err != nil {
		return nil, fmt.Errorf("extract.reference = %q: %w", cfg.Reference, err)
	}
	window, vocab := ref.Config().Context, ref.Config().Vocab
	for _, p := range prompts {
		for _, id := range p.Window {
			if int(id) >= vocab {
				return nil, fmt.Errorf("extract.reference = %q: token %d outside its vocabulary of %d: a different tokenizer", cfg.Reference, id, vocab)
			}
		}
	}
	slog.Info("extract: reference losses", "checkpoint", ckpt)
	losses, err := strideLosses(ctx, ref, prompts, window, cfg.BatchSize, "extract: reference model")
	if err != nil {
		return nil, fmt.Errorf("extract.reference = %q: %w", cfg.Reference, err)
	}
	return losses, nil
}

// scoredTexts decodes the true suffix and the generation, the two texts
// RougeL compares, without special tokens, as the goldfish reference
// decodes them (skip_special_tokens=True): an EOS the model emits is not a
// word of its answer.
func scoredTexts(tok *data.Tokenizer, suffix, generated []int32) (suffixText, generatedText string) {
	return tok.DecodeText(suffix), tok.DecodeText(generated)
}

// attackWindow is the AttackWindow of the checkpoint at ckpt: its
// state.json records the row length (train.block) it was trained on. A
// checkpoint without one (imported weights) is attacked over the model
// context.
func attackWindow(ckpt string, context int) (int, error) {
	if _, err := os.Stat(filepath.Join(ckpt, checkpoint.StateFile)); errors.Is(err, fs.ErrNotExist) {
		return context, nil
	}
	st, err := checkpoint.VerifyWeights(ckpt)
	if err != nil {
		return 0, fmt.Errorf("trained row length of %s: %w", ckpt, err)
	}
	return AttackWindow(context, st.Block), nil
}
