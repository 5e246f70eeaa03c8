package hftok

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse feeds tokenizer.json files to Parse, and texts to the tokenizers
// that parse: neither may panic; a parsed tokenizer encodes any text to ids
// inside its vocabulary and decodes any ids, including ones outside it.
// The seeds cover each supported component (make fuzz runs it longer).
func FuzzParse(f *testing.F) {
	seeds := []map[string]string{
		nil,
		{"PRE": `{"type":"ByteLevel","add_prefix_space":false,"use_regex":true,"trim_offsets":true}`,
			"DEC": `{"type":"ByteLevel","add_prefix_space":false,"use_regex":true,"trim_offsets":true}`},
		{"NORM": `{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"String":" "},"content":"▁"}]}`,
			"DEC":  `{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]}`,
			"POST": `{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],"pair":[{"Sequence":{"id":"A","type_id":0}}],"special_tokens":{"<s>":{"id":"<s>","ids":[3],"tokens":["<s>"]}}}`},
		{"PRE": `{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"\\s+(?!\\S)|\\p{L}+"},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":false}]}`},
		{"MODEL": `{"type":"BPE","dropout":null,"unk_token":"<unk>","continuing_subword_prefix":null,"end_of_word_suffix":null,"fuse_unk":true,"byte_fallback":true,"vocab":{"<unk>":0,"<0x61>":1,"a":2,"b":4,"ab":5},"merges":[["a","b"]]}`},
	}
	for i, s := range seeds {
		raw := tinyJSON(s)
		if _, err := Parse([]byte(raw)); err != nil {
			f.Fatalf("seed %d does not parse: %v", i, err) // a seed must reach the encoder
		}
		f.Add([]byte(raw), "ab <s>a b\u00e9\U0001F600  x")
	}
	f.Add([]byte(`{}`), "")
	f.Fuzz(func(t *testing.T, raw []byte, text string) {
		tok, err := Parse(raw)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		for _, special := range []bool{false, true} {
			for _, id := range encodeOK(t, tok, text, special) {
				if id < 0 || int(id) >= tok.VocabSize() {
					t.Fatalf("Encode(%q) gave id %d outside the vocabulary of %d", text, id, tok.VocabSize())
				}
			}
		}
		ids := []int32{-1, 0, 1, 2, 3, int32(tok.VocabSize()), 1 << 30}
		for _, skip := range []bool{false, true} {
			if s := tok.Decode(ids, skip); !utf8.ValidString(s) {
				t.Fatalf("Decode gave invalid UTF-8 %q", s)
			}
		}
	})
}
