package data

import (
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/hflib"
)

// sampleTexts are testdata/sample-texts.json and an 8 KB Opticks passage.
func sampleTexts(t *testing.T) []string {
	t.Helper()
	var f struct{ Texts []string }
	readTestdataJSON(t, "sample-texts.json", &f)
	op := opticksText(t)
	return append(f.Texts, op[40000:48000])
}

// TestHFLibraryAgrees: the tokenizer.json of every kind of tokenizer memo
// writes (trained "bpe:N", "gpt2", and a file memo wrote before with its
// "memo_native" key, in the form Save and `memo export` now write it)
// loads in Hugging Face's tokenizers library, which gives memo's ids for
// the sample texts, with and without special tokens, and decodes them to
// memo's text. The library refuses the old file as it was.
func TestHFLibraryAgrees(t *testing.T) {
	hflib.Need(t)
	texts := sampleTexts(t)
	dir := t.TempDir()
	kinds := map[string]*Tokenizer{}
	counts := countPieces([]string{opticksText(t)})
	for _, n := range []int{300, 2048} {
		tok, err := trainBPE(counts, n)
		if err != nil {
			t.Fatal(err)
		}
		kinds["bpe:"+strconv.Itoa(n)] = tok
	}
	if fetched(t, "gpt2") {
		tok, err := LoadTokenizer("gpt2")
		if err != nil {
			t.Fatal(err)
		}
		kinds["gpt2"] = tok
	}
	legacy := filepath.Join("testdata", "legacy-bpe2048.tokenizer.json")
	tok, err := LoadTokenizer(legacy)
	if err != nil {
		t.Fatal(err)
	}
	kinds["legacy bpe:2048"] = tok
	for name, tok := range kinds {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.NewReplacer(":", "", " ", "-").Replace(name)+".json")
			if err := tok.Save(path); err != nil {
				t.Fatal(err)
			}
			lib, err := hflib.Encode(path, texts)
			if err != nil {
				t.Fatal(err)
			}
			for i, text := range texts {
				ids, _ := tok.Encode(text)
				special, _ := tok.EncodeSpecial(text)
				short := text[:min(len(text), 40)]
				if !sameIDs(ids, lib[i].IDs) || !sameIDs(special, lib[i].IDsWithSpecial) {
					t.Errorf("%q: memo %v / %v, the library %v / %v", short, head(ids), head(special), head(lib[i].IDs), head(lib[i].IDsWithSpecial))
				}
				if got := tok.Decode(ids); got != lib[i].Decoded || got != text {
					t.Errorf("%q: memo decodes to %q, the library to %q", short, got[:min(len(got), 40)], lib[i].Decoded[:min(len(lib[i].Decoded), 40)])
				}
			}
		})
	}
	if _, err := hflib.Encode(legacy, texts[:1]); err == nil || !strings.Contains(err.Error(), "expected `,` or `}`") {
		t.Errorf("the library read the file with memo's old key (%v): then the key need not be dropped", err)
	}
}

func sameIDs(a, b []int32) bool { return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b) }

func head(ids []int32) []int32 { return ids[:min(len(ids), 12)] }
