// Package hftok encodes and decodes text with a Hugging Face tokenizer.json
// the way Hugging Face's tokenizers library (Rust, v0.22) does, in pure Go:
// added tokens found in the raw text, normalizers, pre-tokenizers, the BPE
// (or WordLevel) model, the post-processor's special tokens, and decoders.
//
// Every component and option of the file is implemented or refused by
// name when the file is loaded; only options that touch nothing but
// offsets (trim_offsets), a pair template, and top-level keys the library
// itself skips are passed over. Split regexes run
// through github.com/dlclark/regexp2 (Go's regexp has no look-ahead),
// except the GPT-2, Llama 3 and Qwen2 patterns, which run through faster
// hand-written scanners (scan.go) that the tests check against it.
package hftok

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Tokenizer is a loaded tokenizer.json. It is safe for concurrent use.
type Tokenizer struct {
	norm     normalizer
	pre      preTokenizer
	model    model
	post     postProcessor
	dec      decoder
	added    *addedVocab
	maxID    int32
	bos      int32
	eos      int32
	rawCache pieceCache // raw piece -> ids, for byte-level pieces

	// Warnings are what the library would log while loading the file
	// (added tokens whose "id" is not the one they get).
	Warnings []string
}

// Load reads path, a tokenizer.json file or a directory holding one.
func Load(path string) (*Tokenizer, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Parse builds a Tokenizer from the contents of a tokenizer.json.
func Parse(raw []byte) (*Tokenizer, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		if err == nil {
			err = fmt.Errorf("null")
		}
		return nil, fmt.Errorf("not a tokenizer.json: %w", err)
	}
	o := &obj{where: "top level", m: top, used: map[string]bool{}}
	t := &Tokenizer{}
	version, err := o.str("version", "1.0")
	if err != nil {
		return nil, err
	}
	if version != "1.0" {
		return nil, o.errorf("version %q: the library reads only \"1.0\"", version)
	}
	for _, k := range []string{"truncation", "padding"} {
		if o.has(k) {
			return nil, o.errorf("%s is set: truncation and padding are not supported (want null)", k)
		}
	}
	if t.norm, err = parseNormalizer(o.raw("normalizer"), "normalizer"); err != nil {
		return nil, err
	}
	if t.pre, err = parsePreTokenizer(o.raw("pre_tokenizer"), "pre_tokenizer"); err != nil {
		return nil, err
	}
	markLast(t.pre)
	if t.model, err = parseModel(o.raw("model")); err != nil {
		return nil, err
	}
	if t.post, err = parsePostProcessor(o.raw("post_processor"), "post_processor"); err != nil {
		return nil, err
	}
	if t.dec, err = parseDecoder(o.raw("decoder"), "decoder"); err != nil {
		return nil, err
	}
	if t.added, err = parseAdded(o.raw("added_tokens"), t.model, t.norm); err != nil {
		return nil, err
	}
	// Unknown top-level keys are not checked: the library skips them, so
	// they cannot change what it does (memo marks its own files with one).
	t.Warnings = t.added.warnings
	t.maxID = t.model.maxID()
	for id := range t.added.byID {
		t.maxID = max(t.maxID, id)
	}
	t.bos, t.eos = -1, -1
	if t.post != nil {
		t.bos, t.eos = t.post.bosEOS()
	}
	for _, id := range []int32{t.bos, t.eos} {
		if _, ok := t.IDToToken(id); id >= 0 && !ok {
			return nil, fmt.Errorf("tokenizer.json: post_processor adds id %d, which is not in the vocabulary", id)
		}
	}
	return t, nil
}

// Encode tokenizes text; with addSpecial the post-processor's special
// tokens (BOS, EOS) are added. Text that is not valid UTF-8 is first made
// valid with U+FFFD, as a JavaScript or Python caller of the library would.
func (t *Tokenizer) Encode(text string, addSpecial bool) []int32 {
	text = validUTF8(text)
	ids := make([]int32, 0, len(text)/3+1)
	model := func(p piece) {
		if p.byteLevel {
			ids = append(ids, t.byteLevelIDs(p.text)...)
			return
		}
		ids = t.model.tokenize(p.text, ids)
	}
	for _, p := range t.extract(text) {
		switch {
		case p.tok != nil:
			ids = append(ids, p.tok.id)
		case t.pre != nil:
			t.pre.apply(p, model)
		default:
			model(p)
		}
	}
	if t.post != nil {
		ids = t.post.process(ids, addSpecial)
	}
	return ids
}

// byteLevelIDs encodes a piece that still has to be mapped to the
// byte-level alphabet, through a cache keyed by the raw piece: most pieces
// of a long text repeat, and this skips the mapping for them.
func (t *Tokenizer) byteLevelIDs(raw string) []int32 {
	if ids, ok := t.rawCache.get(raw); ok {
		return ids
	}
	ids := t.model.tokenize(byteLevelString(raw), nil)
	t.rawCache.put(raw, ids)
	return ids
}

// extract finds the added tokens that match the raw text, normalizes the
// text between them, then finds those that match normalized text.
func (t *Tokenizer) extract(text string) []piece {
	var out []piece
	t.added.raw.split(text, func(s string, off int, tok *addedToken) {
		if tok != nil {
			out = append(out, piece{text: s, orig: off, tok: tok})
			return
		}
		p := piece{text: s, orig: off}
		if t.norm != nil {
			p = t.norm.normalize(p)
		}
		t.added.norm.split(p.text, func(s string, k int, tok *addedToken) {
			q := sub(p, k, k+len(s))
			q.tok = tok
			out = append(out, q)
		})
	})
	return out
}

// Decode turns ids into text as the library does: ids it does not know are
// dropped, special tokens too when skipSpecial, and the rest go through
// the decoder (joined with spaces when there is none).
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) string {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		s, ok := t.IDToToken(id)
		if !ok || skipSpecial && t.added.isSpecial(s) {
			continue
		}
		toks = append(toks, s)
	}
	if t.dec == nil {
		return strings.Join(toks, " ")
	}
	return strings.Join(t.dec.decodeChain(toks), "")
}

// IDToToken is the token an id stands for: an added token, else the model's.
func (t *Tokenizer) IDToToken(id int32) (string, bool) {
	if a, ok := t.added.byID[id]; ok {
		return a.content, true
	}
	return t.model.idToToken(id)
}

// TokenToID is the id of a token: an added token, else the model's.
func (t *Tokenizer) TokenToID(s string) (int32, bool) {
	if id, ok := t.added.byContent[s]; ok {
		return id, true
	}
	return t.model.tokenToID(s)
}

// IsSpecial reports whether id is a special added token (skipped by
// Decode with skipSpecial).
func (t *Tokenizer) IsSpecial(id int32) bool {
	s, ok := t.IDToToken(id)
	return ok && t.added.isSpecial(s)
}

// VocabSize is the largest id plus one: the rows an embedding needs.
func (t *Tokenizer) VocabSize() int { return int(t.maxID) + 1 }

// BOS and EOS are the ids the post-processor puts before and after a text
// when special tokens are added, or -1.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS: see BOS.
func (t *Tokenizer) EOS() int32 { return t.eos }
