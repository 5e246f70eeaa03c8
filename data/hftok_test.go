package data

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestHFTokenizers: "hf:DIR" and "hf:FILE" load the fetched Llama 3 and
// Llama 2-style tokenizer.json through hftok, with the ids the Hugging Face
// library gives (data/hftok/testdata/tokenizers.json), BOS and EOS from the
// post-processor or by name, and special tokens added only on request.
// fetchedModels is the models/ directory of a fetched tokenizer package
// (skipping the test where it is not fetched).
func fetchedModels(t *testing.T, corpus string) string {
	t.Helper()
	needFetched(t, corpus)
	dir, err := packageDir(fetchedCache(), corpus)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "models")
}

func TestHFTokenizers(t *testing.T) {
	for _, tc := range []struct {
		corpus           string
		text             string
		ids, withSpecial []int32
		bos, eos         int32
	}{
		// Llama 3's post-processor adds nothing; BOS and EOS are found by name.
		{"llama3-tokenizer", "Hello world!", []int32{9906, 1917, 0}, []int32{9906, 1917, 0}, 128000, 128001},
		// Llama 2's template prepends <s>; </s> is found by name.
		{"llama2-tokenizer", "Hello world!", []int32{22557, 1526, 28808}, []int32{1, 22557, 1526, 28808}, 1, 2},
	} {
		t.Run(tc.corpus, func(t *testing.T) {
			models := fetchedModels(t, tc.corpus)
			for _, spec := range []string{"hf:" + models, "hf:" + filepath.Join(models, "tokenizer.json")} {
				tok, err := LoadTokenizer(spec)
				if err != nil {
					t.Fatal(err)
				}
				ids, _ := tok.Encode(tc.text)
				special, _ := tok.EncodeSpecial(tc.text)
				if !reflect.DeepEqual(ids, tc.ids) || !reflect.DeepEqual(special, tc.withSpecial) {
					t.Errorf("%s: ids %v, with special tokens %v; want %v, %v", spec, ids, special, tc.ids, tc.withSpecial)
				}
				if tok.BOS() != tc.bos || tok.EOS() != tc.eos {
					t.Errorf("%s: BOS %d EOS %d, want %d %d", spec, tok.BOS(), tok.EOS(), tc.bos, tc.eos)
				}
				if got := tok.Decode(ids); got != tc.text {
					t.Errorf("%s: decode %v = %q", spec, ids, got)
				}
				// Decode keeps special tokens; DecodeText drops them.
				withEOS := append(append([]int32{}, special...), tok.EOS(), PadID)
				if got := tok.Decode(withEOS); !strings.HasSuffix(got, "</s>") && !strings.HasSuffix(got, "<|end_of_text|>") {
					t.Errorf("%s: Decode(%v) = %q: want the EOS kept", spec, withEOS, got)
				}
			}
		})
	}
}

// TestBuildWithHFTokenizer: a dataset built on the Opticks with a Hugging
// Face tokenizer keeps every chunk (each round-trips), stores the ids hftok
// gives, and the run's saved tokenizer.json reloads to hftok again.
func TestBuildWithHFTokenizer(t *testing.T) {
	for _, corpus := range []string{"llama3-tokenizer", "llama2-tokenizer"} {
		t.Run(corpus, func(t *testing.T) {
			needFetched(t, corpus)
			dir, err := packageDir(fetchedCache(), corpus)
			if err != nil {
				t.Fatal(err)
			}
			cfg := DefaultConfig()
			cfg.Tokenizer = "hf:" + filepath.Join(dir, "models")
			cfg.CacheDir = t.TempDir()
			ds := buildTest(t, cfg)
			for _, r := range ds.Report().Rejected {
				if strings.Contains(r.Reason, "round-trip") {
					t.Errorf("rejected %s: %s", r.Title, r.Reason)
				}
			}
			saved, err := ds.Tokenizer()
			if err != nil {
				t.Fatal(err)
			}
			want, err := LoadTokenizer(cfg.Tokenizer)
			if err != nil {
				t.Fatal(err)
			}
			if saved.lib == nil || saved.VocabSize() != want.VocabSize() || saved.EOS() != want.EOS() || saved.BOS() != want.BOS() {
				t.Fatalf("saved tokenizer: hftok %v vocab %d eos %d bos %d", saved.lib != nil, saved.VocabSize(), saved.EOS(), saved.BOS())
			}
			docs, err := ds.Docs(SplitTarget)
			if err != nil || len(docs) == 0 {
				t.Fatalf("targets: %d, %v", len(docs), err)
			}
			for _, d := range docs[:5] {
				ids, _ := want.Encode(d.Text)
				if !reflect.DeepEqual(d.IDs, ids) {
					t.Errorf("%s: stored ids differ from Encode", d.Title)
				}
				if saved.Decode(d.IDs) != d.Text {
					t.Errorf("%s: saved tokenizer does not decode the stored ids to the text", d.Title)
				}
			}
		})
	}
}

// TestDecodeAfter: a continuation decoded after its prompt keeps the
// space its first token begins with; Llama 2's decoder strips it from a
// continuation decoded alone ("Hello world" + "again").
func TestDecodeAfter(t *testing.T) {
	for _, corpus := range []string{"llama2-tokenizer", "llama3-tokenizer"} {
		t.Run(corpus, func(t *testing.T) {
			tok, err := LoadTokenizer("hf:" + fetchedModels(t, corpus))
			if err != nil {
				t.Fatal(err)
			}
			prompt, _ := tok.EncodeSpecial("Hello world")
			whole, _ := tok.EncodeSpecial("Hello world again")
			if len(whole) <= len(prompt) {
				t.Fatalf("%v does not continue %v", whole, prompt)
			}
			if got := tok.DecodeAfter(prompt, whole[len(prompt):]); got != " again" {
				t.Errorf("DecodeAfter = %q, want %q", got, " again")
			}
		})
	}
}
