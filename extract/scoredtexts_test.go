package extract

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/eval"
)

// A generation that emits EOS is scored on its words alone: the EOS is not
// decoded into a word that RougeL would count against the model (the
// reference decodes with skip_special_tokens=True).
func TestScoredTextsSkipSpecialTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	const js = `{"version":"1.0","added_tokens":[{"id":0,"content":"[UNK]","special":true},{"id":4,"content":"<|endoftext|>","special":true}],
"normalizer":null,"pre_tokenizer":{"type":"Whitespace"},"post_processor":null,"decoder":null,
"model":{"type":"WordLevel","vocab":{"[UNK]":0,"hello":1,"world":2,"again":3,"<|endoftext|>":4},"unk_token":"[UNK]"}}`
	if err := os.WriteFile(path, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := data.LoadTokenizer("hf:" + path)
	if err != nil {
		t.Fatal(err)
	}
	suffix := []int32{1, 2, 3}    // hello world again
	generated := []int32{1, 2, 4} // hello world <EOS>
	st, gt := scoredTexts(tok, suffix, generated)
	if strings.Contains(gt, "endoftext") || st != "hello world again" {
		t.Fatalf("scored texts %q, %q: want the suffix's words and no EOS", st, gt)
	}
	r := eval.RougeL(eval.RougeTokens(st), eval.RougeTokens(gt))
	if r.Precision != 1 || r.Recall != 2.0/3 {
		t.Errorf("RougeL precision %v recall %v, want 1 and 2/3: every generated word is in the suffix", r.Precision, r.Recall)
	}
}
