package data

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDecodeTextSkipsSpecialTokens: the text scored by RougeL holds no
// special token, for our byte-level BPE and for a tokenizer.json that runs
// through sugarme/tokenizer, while Decode keeps them so that ids round-trip.
func TestDecodeTextSkipsSpecialTokens(t *testing.T) {
	bpe, err := trainBPE(countPieces([]string{opticksText(t)}), 400)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "wordlevel.json")
	writeFile(t, path, `{"version":"1.0","added_tokens":[{"id":0,"content":"[UNK]","special":true},{"id":4,"content":"</s>","special":true}],
"normalizer":null,"pre_tokenizer":{"type":"Whitespace"},"post_processor":null,"decoder":null,
"model":{"type":"WordLevel","vocab":{"[UNK]":0,"hello":1,"world":2,".":3,"</s>":4},"unk_token":"[UNK]"}}`)
	lib, err := LoadTokenizer("hf:" + path)
	if err != nil {
		t.Fatal(err)
	}
	if lib.EOS() != 4 {
		t.Fatalf("word-level tokenizer: EOS %d, want 4", lib.EOS())
	}

	for _, tc := range []struct {
		name    string
		tok     *Tokenizer
		text    string
		special string
	}{
		{"byte-level BPE", bpe, "Light is reflected", EOSToken},
		{"word-level", lib, "hello world .", "</s>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, err := tc.tok.Encode(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			withEOS := append([]int32{tc.tok.EOS()}, ids...)
			withEOS = append(withEOS, tc.tok.EOS(), PadID)
			if got := tc.tok.Decode(withEOS); !strings.Contains(got, tc.special) {
				t.Fatalf("Decode(%v) = %q: want the special token %q kept", withEOS, got, tc.special)
			}
			if got, want := tc.tok.DecodeText(withEOS), tc.tok.Decode(ids); got != want || strings.Contains(got, tc.special) {
				t.Errorf("DecodeText(%v) = %q, want %q without %q", withEOS, got, want, tc.special)
			}
		})
	}
}
