package hftok

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlclark/regexp2"
)

// tiny is a small valid tokenizer.json; the error cases edit one part.
const tiny = `{"version":"1.0","truncation":null,"padding":null,
"added_tokens":[{"id":3,"content":"<s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
"normalizer":NORM,"pre_tokenizer":PRE,"post_processor":POST,"decoder":DEC,
"model":MODEL}`

const tinyModel = `{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":null,"end_of_word_suffix":null,
"fuse_unk":false,"byte_fallback":false,"vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}`

func tinyJSON(parts map[string]string) string {
	s := tiny
	for _, k := range []string{"NORM", "PRE", "POST", "DEC", "MODEL"} {
		v, ok := parts[k]
		if !ok {
			v = "null"
			if k == "MODEL" {
				v = tinyModel
			}
		}
		s = strings.Replace(s, k, v, 1)
	}
	return s
}

// TestParseErrors: malformed files, and components or options we do not
// implement, are refused with an error naming them.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		json string
		want string
	}{
		{"not JSON", "vocab: a", "not a tokenizer.json"},
		{"JSON array", "[1, 2]", "not a tokenizer.json"},
		{"truncated", tinyJSON(nil)[:100], "not a tokenizer.json"},
		{"unknown version", strings.Replace(tinyJSON(nil), `"1.0"`, `"2.0"`, 1), `version "2.0"`},
		{"truncation set", strings.Replace(tinyJSON(nil), `"truncation":null`, `"truncation":{"max_length":8}`, 1), "truncation is set"},
		{"padding set", strings.Replace(tinyJSON(nil), `"padding":null`, `"padding":{}`, 1), "padding is set"},
		{"unsupported pre-tokenizer", tinyJSON(map[string]string{"PRE": `{"type":"UnicodeScripts"}`}),
			`tokenizer.json: pre_tokenizer type "UnicodeScripts" is not supported`},
		{"unsupported nested pre-tokenizer", tinyJSON(map[string]string{"PRE": `{"type":"Sequence","pretokenizers":[{"type":"Whitespace"},{"type":"BertPreTokenizer"}]}`}),
			`pre_tokenizer.pretokenizers[1] type "BertPreTokenizer" is not supported`},
		{"unsupported normalizer", tinyJSON(map[string]string{"NORM": `{"type":"Precompiled","precompiled_charsmap":"AA=="}`}),
			`normalizer type "Precompiled" is not supported`},
		{"unsupported decoder", tinyJSON(map[string]string{"DEC": `{"type":"WordPiece","prefix":"##","cleanup":true}`}),
			`decoder type "WordPiece" is not supported (memo reads ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, BPEDecoder, Sequence)`},
		{"unsupported post-processor", tinyJSON(map[string]string{"POST": `{"type":"Foo"}`}),
			`post_processor type "Foo" is not supported`},
		{"unsupported model", tinyJSON(map[string]string{"MODEL": `{"type":"Unigram","vocab":[["a",0.0]]}`}),
			`model type "Unigram" is not supported`},
		{"unknown option", tinyJSON(map[string]string{"PRE": `{"type":"ByteLevel","add_prefix_space":false,"use_regex":true,"trim_offsets":true,"frobnicate":1}`}),
			`pre_tokenizer: option "frobnicate" is not supported`},
		{"dropout", strings.Replace(tinyJSON(nil), `"dropout":null`, `"dropout":0.1`, 1), "dropout = 0.1"},
		{"bad behavior", tinyJSON(map[string]string{"PRE": `{"type":"Split","pattern":{"String":" "},"behavior":"Sideways","invert":false}`}),
			`behavior "Sideways"`},
		{"bad regex", tinyJSON(map[string]string{"PRE": `{"type":"Split","pattern":{"Regex":"(a"},"behavior":"Isolated","invert":false}`}),
			`pattern: Regex "(a"`},
		{"pattern neither", tinyJSON(map[string]string{"PRE": `{"type":"Split","pattern":{"Glob":"*"},"behavior":"Isolated","invert":false}`}),
			`want {"String": ...} or {"Regex": ...}`},
		{"merge outside vocab", strings.Replace(tinyJSON(nil), `["a b"]`, `["a c"]`, 1), `merges[0] "a" "c": token not in the vocabulary`},
		{"merged token outside vocab", strings.Replace(tinyJSON(nil), `"ab":2`, `"c":2`, 1), `merged token "ab" not in the vocabulary`},
		{"merge not a pair", strings.Replace(tinyJSON(nil), `["a b"]`, `["a b c"]`, 1), `merges[0] = "a b c"`},
		{"unk outside vocab", strings.Replace(tinyJSON(nil), `"unk_token":null`, `"unk_token":"<unk>"`, 1), `unk_token "<unk>" is not in the vocabulary`},
		{"no model", strings.Replace(tinyJSON(nil), `"model":`+tinyModel, `"model":null`, 1), "model is missing"},
		{"vocab wrong type", strings.Replace(tinyJSON(nil), `"vocab":{"a":0,"b":1,"ab":2}`, `"vocab":["a"]`, 1), "model: vocab"},
		{"template without A", tinyJSON(map[string]string{"POST": `{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}}],"pair":[],"special_tokens":{"<s>":{"id":"<s>","ids":[3],"tokens":["<s>"]}}}`}),
			"single has no Sequence A"},
		{"template unknown special", tinyJSON(map[string]string{"POST": `{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<x>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],"pair":[],"special_tokens":{}}`}),
			`special token "<x>" is not in special_tokens`},
		{"template id outside vocab", tinyJSON(map[string]string{"POST": `{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<x>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],"pair":[],"special_tokens":{"<x>":{"id":"<x>","ids":[99],"tokens":["<x>"]}}}`}),
			"adds id 99, which is not in the vocabulary"},
		{"metaspace prefix contradiction", tinyJSON(map[string]string{"PRE": `{"type":"Metaspace","replacement":"▁","add_prefix_space":false}`}),
			"add_prefix_space false does not match"},
		{"added token not an object", strings.Replace(tinyJSON(nil), `"added_tokens":[{`, `"added_tokens":[7,{`, 1), "added_tokens[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// encodeOK is tok.Encode(s, special), failing t on an error.
func encodeOK(t testing.TB, tok interface {
	Encode(string, bool) ([]int32, error)
}, s string, special bool) []int32 {
	t.Helper()
	ids, err := tok.Encode(s, special)
	if err != nil {
		t.Fatalf("Encode(%.40q): %v", s, err)
	}
	return ids
}

// TestRegexTimeout: a Split or Replace regex that backtracks without
// bound ((a+)+b on 40 a's: 24 took 7.5 s, 40 never finished) makes Encode
// fail within its match timeout, naming the pattern, instead of hanging.
func TestRegexTimeout(t *testing.T) {
	defer func(d time.Duration) { matchTimeout = d }(matchTimeout)
	matchTimeout = time.Second // compiled into the patterns Parse builds
	for _, tc := range []struct{ name, part, json string }{
		{"Split", "PRE", `{"type":"Split","pattern":{"Regex":"(a+)+b"},"behavior":"Isolated","invert":false}`},
		{"Replace", "NORM", `{"type":"Replace","pattern":{"Regex":"(a+)+b"},"content":"b"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := Parse([]byte(tinyJSON(map[string]string{tc.part: tc.json})))
			if err != nil {
				t.Fatal(err)
			}
			if ids, err := tok.Encode("aaab", false); err != nil || len(ids) == 0 {
				t.Fatalf("a short text: %v, %v", ids, err)
			}
			start := time.Now()
			ids, err := tok.Encode(strings.Repeat("a", 40), false)
			took := time.Since(start)
			var re *RegexError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), `Regex "(a+)+b": a match timed out after 1s`) || ids != nil {
				t.Errorf("Encode: %v, %v; want a timeout naming the pattern", ids, err)
			}
			if took > 5*time.Second {
				t.Errorf("Encode took %v; want about the 1 s timeout", took)
			}
		})
	}
}

// TestRegexTimeoutWhileLoading: an added token marked normalized is run
// through the normalizer when the file is read; a Replace regex that
// times out on it is Parse's error, not a panic out of Parse.
func TestRegexTimeoutWhileLoading(t *testing.T) {
	defer func(d time.Duration) { matchTimeout = d }(matchTimeout)
	matchTimeout = 300 * time.Millisecond
	doc := tinyJSON(map[string]string{"NORM": `{"type":"Replace","pattern":{"Regex":"(a+)+b"},"content":"b"}`})
	doc = strings.Replace(doc, `"normalized":false,"special":true}]`, `"normalized":false,"special":true},
{"id":4,"content":"`+strings.Repeat("a", 40)+`","single_word":false,"lstrip":false,"rstrip":false,"normalized":true,"special":false}]`, 1)
	tok, err := Parse([]byte(doc))
	var re *RegexError
	if tok != nil || !errors.As(err, &re) || !strings.Contains(err.Error(), `Regex "(a+)+b": a match timed out`) {
		t.Errorf("Parse: %v, %v; want a timeout naming the pattern", tok, err)
	}
}

// A timeout that regexp2 reports before half the budget has passed is
// its clock's (stale after idle, jumping when starved), not the
// pattern's: the match is run again. A real one, and one that keeps
// coming back, is returned.
func TestMatchRetrying(t *testing.T) {
	spurious := errors.New("match timeout after 10s on input `aaa`")
	found := &regexp2.Match{}
	calls := 0
	m, err := matchRetrying(func() (*regexp2.Match, error) {
		if calls++; calls < 3 {
			return nil, spurious
		}
		return found, nil
	})
	if m != found || err != nil || calls != 3 {
		t.Errorf("after two early timeouts: %v, %v in %d calls; want the match on the third", m, err, calls)
	}
	calls = 0
	if _, err := matchRetrying(func() (*regexp2.Match, error) { calls++; return nil, spurious }); err != spurious || calls != spuriousRetries+1 {
		t.Errorf("a timeout every time: %v after %d calls; want it after %d", err, calls, spuriousRetries+1)
	}
	defer func(d time.Duration) { matchTimeout = d }(matchTimeout)
	matchTimeout = 20 * time.Millisecond
	calls = 0
	if _, err := matchRetrying(func() (*regexp2.Match, error) { calls++; time.Sleep(15 * time.Millisecond); return nil, spurious }); err != spurious || calls != 1 {
		t.Errorf("a timeout after the budget's half: %v after %d calls; want it returned at once", err, calls)
	}
}

// TestTiny: the base of the error cases is valid, and small files exercise
// what the library goldens do not: WordLevel, Whitespace, the BPE decoder.
func TestTiny(t *testing.T) {
	tok, err := Parse([]byte(tinyJSON(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if got := encodeOK(t, tok, "ab<s>ba", false); len(got) != 4 || got[0] != 2 || got[1] != 3 || got[2] != 1 || got[3] != 0 {
		t.Errorf("ab<s>ba: %v, want [2 3 1 0]", got)
	}
	if got := tok.Decode([]int32{2, 3, 1, 0, 42}, true); got != "ab b a" {
		t.Errorf("decode without a decoder: %q, want tokens joined by spaces, <s> and the unknown id left out", got)
	}
	// Merges may also be spelled as pairs.
	pairs, err := Parse([]byte(strings.Replace(tinyJSON(nil), `["a b"]`, ` [ ["a", "b"]]`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := encodeOK(t, pairs, "abab", false); len(got) != 2 || got[0] != 2 || got[1] != 2 {
		t.Errorf("pair-spelled merges: %v, want [2 2]", got)
	}
	wl := `{"version":"1.0","added_tokens":[],"normalizer":{"type":"Lowercase"},"pre_tokenizer":{"type":"Whitespace"},
"post_processor":{"type":"BertProcessing","sep":["[SEP]",1],"cls":["[CLS]",2]},"decoder":{"type":"BPEDecoder","suffix":"</w>"},
"model":{"type":"WordLevel","vocab":{"[UNK]":0,"[SEP]":1,"[CLS]":2,"hello</w>":3,"world":4,",":5},"unk_token":"[UNK]"}}`
	tok, err = Parse([]byte(wl))
	if err != nil {
		t.Fatal(err)
	}
	got := encodeOK(t, tok, "Hello, WORLD  foo", true)
	want := []int32{2, 0, 5, 4, 0, 1}
	if len(got) != len(want) {
		t.Fatalf("word level: %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("word level: %v, want %v", got, want)
		}
	}
	if tok.BOS() != 2 || tok.EOS() != 1 {
		t.Errorf("BOS %d EOS %d, want 2 1", tok.BOS(), tok.EOS())
	}
	if got := tok.Decode([]int32{3, 4, 3}, false); got != "hello worldhello" { // the suffix marks word ends
		t.Errorf("BPE decoder: %q", got)
	}
}

// TestLoadDirectory: Load takes a tokenizer.json or the directory holding it.
func TestLoadDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(tinyJSON(nil)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "tokenizer.json")} {
		if _, err := Load(p); err != nil {
			t.Errorf("Load(%s): %v", p, err)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing file: %v", err)
	}
}
