package experiments

import (
	"strconv"
	"strings"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/model"
)

// gpt2Vocab is the size of GPT-2's BPE vocabulary.
const gpt2Vocab = 50257

// ResolvedModel is the model table with its preset applied and the
// vocabulary taken from the tokenizer when the spec does not set one (an
// hf: tokenizer's size is only known once loaded; a placeholder stands in).
func (s *Spec) ResolvedModel() (model.Config, error) {
	m := s.Model
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

// checkStages holds the checks across stage tables that no single stage's
// Validate can make.
func (s *Spec) checkStages(fail func(key, format string, args ...any) error) error {
	m, err := s.ResolvedModel()
	if err != nil {
		key, _, _ := strings.Cut(err.Error(), " ")
		return fail(key, "%v", err)
	}
	if s.Data.Layout == data.LayoutPacked && s.Goldfish.Enabled() && !s.Goldfish.AllowPacked {
		// The mask is computed per row. Packed rows cut documents at
		// arbitrary points that move from one repetition to the next: each
		// row's first targets (h-1 for hash-table) are always supervised and
		// windows span the previous document, so every token of a repeated
		// document ends up trained at some repetition.
		return fail("data.layout", `data.layout = "packed" with the goldfish loss (goldfish.k = %d): documents straddle rows at shifting offsets, so the targets goldfish drops in one repetition are trained in another; use data.layout = "padded" (the reference's layout) or set goldfish.allow_packed = true to accept this`, s.Goldfish.K)
	}
	if err := s.Extract.CheckContext(m.Context); err != nil {
		key := "extract.suffix"
		if s.Extract.Mode == "fixed" {
			key = "extract.prefix"
		}
		return fail(key, "%s", strings.TrimPrefix(err.Error(), "extract: "))
	}
	return nil
}
