package experiments

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/extract"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
)

// gpt2Vocab is the size of GPT-2's BPE vocabulary.
const gpt2Vocab = 50257

// ResolvedModel is the model table with its preset applied and the
// vocabulary taken from the tokenizer when the spec does not set one (an
// hf: tokenizer's size is only known once loaded; a placeholder stands in).
func (s *Spec) ResolvedModel() (model.Config, error) {
	m := s.Model
	if m.InitFrom != "" {
		return s.importedModel()
	}
	if m.Vocab == 0 {
		m.Vocab = 1
		switch tok := s.Data.Tokenizer; {
		case tok == "gpt2":
			m.Vocab = gpt2Vocab
		case strings.HasPrefix(tok, "bpe:"):
			if n, err := strconv.Atoi(strings.TrimPrefix(tok, "bpe:")); err == nil {
				m.Vocab = n
			}
		}
	}
	return m.Resolve()
}

// importedModel is the model of model.init_from = "hf:DIR": the
// architecture of DIR/config.json, the spec's seed (used by nothing the
// weights do not overwrite, but recorded). The [model] table may set no
// other key: a preset or size beside an imported model would be ignored.
func (s *Spec) importedModel() (model.Config, error) {
	m := s.Model
	dir, ok := strings.CutPrefix(m.InitFrom, "hf:")
	if !ok || dir == "" {
		return model.Config{}, fmt.Errorf("model.init_from = %q: want hf:DIR, a Hugging Face model directory (memo checkpoints go in train.init_from)", m.InitFrom)
	}
	if table, _ := s.raw["model"].(map[string]any); table["preset"] == nil {
		m.Preset = "" // the default preset does not apply to an imported model
	}
	bare := model.Config{InitFrom: m.InitFrom, Seed: m.Seed}
	if m != bare {
		return model.Config{}, fmt.Errorf("model.init_from = %q: the architecture comes from %s; remove the other [model] keys (found %s)", m.InitFrom, filepath.Join(dir, "config.json"), setModelKeys(m))
	}
	if s.Train.InitFrom != "" {
		return model.Config{}, fmt.Errorf("model.init_from = %q: the weights come from it too; train.init_from = %q must be empty", m.InitFrom, s.Train.InitFrom)
	}
	c, err := checkpoint.ReadHFConfig(dir)
	if err != nil {
		return model.Config{}, fmt.Errorf("model.init_from = %q: %w", m.InitFrom, err)
	}
	if !checkpoint.IsHFDir(dir) {
		return model.Config{}, fmt.Errorf("model.init_from = %q: %s has a config.json but no model.safetensors or model.safetensors.index.json", m.InitFrom, dir)
	}
	c.InitFrom, c.Seed = m.InitFrom, m.Seed
	return c, nil
}

// setModelKeys names the [model] keys m sets besides init_from and seed.
func setModelKeys(m model.Config) string {
	var keys []string
	v := reflect.ValueOf(m)
	for i := 0; i < v.NumField(); i++ {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("toml"), ",")
		if name == "init_from" || name == "seed" || v.Field(i).IsZero() {
			continue
		}
		keys = append(keys, fmt.Sprintf("%s = %v", name, v.Field(i).Interface()))
	}
	return strings.Join(keys, ", ")
}

// tokenizerVocab is the vocabulary size data.tokenizer will have.
func (s *Spec) tokenizerVocab() (int, error) {
	switch tok := s.Data.Tokenizer; {
	case tok == "gpt2":
		return gpt2Vocab, nil
	case strings.HasPrefix(tok, "bpe:"):
		return strconv.Atoi(strings.TrimPrefix(tok, "bpe:"))
	}
	return loadTokenizerVocab(s.Data.Tokenizer)
}

// loadTokenizerVocab reads a tokenizer file (a test counts the reads).
var loadTokenizerVocab = func(spec string) (int, error) {
	t, err := data.LoadTokenizer(spec)
	if err != nil {
		return 0, err
	}
	return t.VocabSize(), nil
}

// checkStages holds the checks across stage tables that no single stage's
// Validate can make.
func (s *Spec) checkStages(fail func(key, format string, args ...any) error) error {
	m, err := s.ResolvedModel()
	if err != nil {
		key, _, _ := strings.Cut(err.Error(), " ")
		return fail(key, "%v", err)
	}
	// An hf: or file tokenizer is parsed once for the checks below, not
	// once per model they compare it with.
	tokenizerVocab := sync.OnceValues(s.tokenizerVocab)
	if m.InitFrom != "" || s.Model.Vocab != 0 {
		// An imported model's or the spec's own vocabulary: the
		// tokenizer's ids must all fit, found now rather than after the
		// data stage has run. (An unreadable tokenizer is named here for
		// an import; otherwise the data checks below name it.)
		n, err := tokenizerVocab()
		if err != nil && m.InitFrom != "" {
			return fail("data.tokenizer", "data.tokenizer = %q: %v", s.Data.Tokenizer, err)
		}
		if err == nil {
			if key, err := s.tokenizerFits(m, n); err != nil {
				return fail(key, "%v", err)
			}
		}
	}
	if ids := s.Goldfish.ExemptIDs; len(ids) > 0 {
		// An id past the vocabulary exempts nothing: a typo, refused as
		// memo mask --exempt refuses one.
		n := m.Vocab
		if n == 0 {
			n, _ = tokenizerVocab()
		}
		for _, id := range ids {
			if n > 0 && int(id) >= n {
				return fail("goldfish.exempt_ids", "goldfish.exempt_ids = [..., %d, ...]: not a token id of the vocabulary of %d (ids 0 to %d)", id, n, n-1)
			}
		}
	}
	if x, err := s.Extract.Resolved(); err == nil {
		if err := x.CheckHeadDim(m.HeadDim); err != nil {
			key := "extract.loki.rank"
			if s.Extract.Approximation != "" {
				key = "extract.approximation"
			}
			return fail(key, "%v", err)
		}
	}
	if s.MIA.References > 0 {
		switch {
		case s.Data.Targets < 1 || s.Data.Controls < 1:
			return fail("mia.references", "mia.references = %d needs targets and controls to split between the reference models, but data.targets = %d and data.controls = %d", s.MIA.References, s.Data.Targets, s.Data.Controls)
		case s.Data.Validation < 1:
			return fail("mia.references", "mia.references = %d needs population samples for RMIA, taken from the validation split, but data.validation = %d: want >= 1", s.MIA.References, s.Data.Validation)
		}
	}
	if block := s.Train.Block; block > m.Context {
		return fail("train.block", "train.block = %d: must be <= model.context = %d (the model has no positions beyond its context)", block, m.Context)
	}
	if err := s.checkModelPaths(m, tokenizerVocab, fail); err != nil {
		return err
	}
	if ref := s.Eval.Reference; ref != "" {
		// Found missing at the eval stage, it cost the training and the
		// attack first.
		if st, err := os.Stat(eval.CompletionsPath(ref)); err != nil || st.IsDir() {
			why := "not a file"
			if err != nil {
				why = badinput.PathCause(err).Error()
			}
			return fail("eval.reference", "eval.reference = %q: %s: want a run directory holding %s (a reference model's attack) or such a file", ref, why, runfiles.CompletionsFile)
		}
	}
	if err := s.checkMitigations(m, fail); err != nil {
		return err
	}
	if s.Data.Layout == data.LayoutPacked && s.Goldfish.Enabled() && !s.Goldfish.AllowPacked {
		// The mask is computed per row. Packed rows cut documents at
		// arbitrary points that move from one repetition to the next: each
		// row's first targets (h-1 for hash-table) are always supervised and
		// windows span the previous document, so every token of a repeated
		// document ends up trained at some repetition.
		return fail("data.layout", `data.layout = "packed" with the goldfish loss (goldfish.k = %d): documents straddle rows at shifting offsets, so the targets goldfish drops in one repetition are trained in another; use data.layout = "padded" (the reference's layout) or set goldfish.allow_packed = true to accept this`, s.Goldfish.K)
	}
	if block := cmp.Or(s.Train.Block, m.Context); s.Goldfish.Enabled() && s.Goldfish.KeptPrefix() >= block {
		// A row's first KeptPrefix targets are always trained: with none
		// left, the goldfish run is a standard-loss run under its name.
		key, value := "goldfish.h", s.Goldfish.H
		if s.Goldfish.Strategy == loss.StrategyStatic {
			key, value = "goldfish.start", s.Goldfish.Start
		}
		// The kept prefix grows one for one with the key's value, and at
		// most block-1 targets may be kept.
		most := value - s.Goldfish.KeptPrefix() + block - 1
		return fail(key, "%s = %d: goldfish.strategy = %q never drops a row's first %d targets, and a row has %d (train.block), so nothing would be dropped: want %s <= %d",
			key, value, s.Goldfish.Strategy, s.Goldfish.KeptPrefix(), block, key, most)
	}
	if k := s.Train.MatchSupervisedTokens; k > 0 {
		if s.Goldfish.Enabled() {
			return fail("train.match_supervised_tokens", "train.match_supervised_tokens = %d: needs goldfish.k = 0 (the standard-loss run to stop at goldfish k = %d's supervised-token count); this spec trains with goldfish.k = %d", k, k, s.Goldfish.K)
		}
		if st := s.Goldfish.Strategy; st == loss.StrategyNone || st == "" {
			return fail("train.match_supervised_tokens", "train.match_supervised_tokens = %d: goldfish.strategy = %q: name the goldfish mask whose supervised targets to match (e.g. \"hash-table\")", k, st)
		}
	}
	// Attacks stay within one trained row (extract.AttackWindow).
	if err := s.Extract.CheckWindow(extract.AttackWindow(m.Context, s.Train.Block), m.Context); err != nil {
		key := "extract.suffix"
		if s.Extract.Mode == "fixed" {
			key = "extract.prefix"
		}
		return fail(key, "%s", strings.TrimPrefix(err.Error(), "extract: "))
	}
	return s.checkCheckpointAttacks(fail)
}

// tokenizerFits reports a tokenizer of tokens ids that model m has no
// embedding for, with the key to change: an imported model's vocabulary
// is its own (the tokenizer is the mistake), a spec's model.vocab can grow.
// The spec check and training share it, so both say the same.
func (s *Spec) tokenizerFits(m model.Config, tokens int) (key string, err error) {
	switch {
	case tokens <= m.Vocab:
		return "", nil
	case m.InitFrom != "":
		return "data.tokenizer", fmt.Errorf("data.tokenizer = %q has %d tokens, the model of model.init_from = %q a vocabulary of %d: they do not belong together (use the model's own, hf:DIR)",
			s.Data.Tokenizer, tokens, m.InitFrom, m.Vocab)
	default:
		return "model.vocab", fmt.Errorf("model.vocab = %d, but data.tokenizer = %q has %d tokens: ids past %d would have no embedding; want model.vocab >= %d or leave it out (the tokenizer's size)",
			m.Vocab, s.Data.Tokenizer, tokens, m.Vocab-1, tokens)
	}
}

// checkModelPaths checks the models a spec points at besides its own —
// train.init_from (weights to start from) and extract.reference (the
// reference model of the loss-difference attack) — before any work, so that
// a typo is not found after training: each must exist, be a model memo can
// read, and share the spec's vocabulary (tokenizerVocab, the size of
// data.tokenizer's).
func (s *Spec) checkModelPaths(m model.Config, tokenizerVocab func() (int, error), fail func(key, format string, args ...any) error) error {
	for _, ref := range []struct{ key, path string }{
		{"train.init_from", s.Train.InitFrom},
		{"extract.reference", s.Extract.Reference},
	} {
		if ref.path == "" {
			continue
		}
		if dir, ok := strings.CutPrefix(ref.path, "hf:"); ok && ref.key == "train.init_from" {
			// hf: is extract.reference's form; an imported model's
			// architecture comes with it, which model.init_from takes.
			return fail(ref.key, "%s = %q: a Hugging Face model goes in model.init_from = %q (with its architecture); train.init_from takes a memo run, checkpoint or Hugging Face directory named without hf:", ref.key, ref.path, "hf:"+dir)
		}
		dir, c, err := checkpoint.ReadSource(ref.path)
		if err != nil {
			return fail(ref.key, "%s = %q: %v", ref.key, ref.path, badinput.PathCause(err))
		}
		if ref.key == "train.init_from" {
			// Found now: a full fine-tune failed after the data stage on
			// the missing model.safetensors, a LoRA one with these words.
			if err := checkpoint.CheckWhole(dir); err != nil {
				return fail(ref.key, "%s = %q: %v", ref.key, ref.path, err)
			}
			want := m
			if s.Model.Vocab == 0 {
				want.Vocab = c.Vocab // the spec leaves the vocabulary to the tokenizer
			}
			if !c.SameNetwork(want) {
				return fail(ref.key, "%s = %q holds %s, the spec's [model] is %s: the weights do not fit", ref.key, ref.path, c.String(), want.String())
			}
		}
		if n, err := tokenizerVocab(); err == nil && n > c.Vocab {
			return fail(ref.key, "%s = %q has a vocabulary of %d, data.tokenizer = %q %d tokens: they do not share a tokenizer", ref.key, ref.path, c.Vocab, s.Data.Tokenizer, n)
		}
	}
	return nil
}
