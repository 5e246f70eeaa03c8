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
			needFetched(t, tc.corpus)
			dir, err := packageDir(fetchedCache(), tc.corpus)
			if err != nil {
				t.Fatal(err)
			}
			models := filepath.Join(dir, "models")
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
