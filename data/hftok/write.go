package hftok

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// WriteByteLevelBPE lays out a byte-level BPE as a tokenizer.json, the way
// Hugging Face's GPT-2 file is laid out (ByteLevel pre-tokenizer without a
// prefix space, ByteLevel post-processor and decoder, no normalizer), so
// that Parse and the tokenizers library both read it and give it the same
// ids. tokens[id] is the token of each id, in the byte-level alphabet;
// merges are in rank order; specials name the tokens that are added
// special tokens (an end-of-text token), spelled as their text. The
// vocabulary is written in id order and the file is the same bytes for
// the same arguments.
func WriteByteLevelBPE(tokens []string, merges [][2]string, specials []string) ([]byte, error) {
	ids := make(map[string]int, len(tokens))
	for id, tok := range tokens {
		if prev, dup := ids[tok]; dup {
			return nil, fmt.Errorf("token %q is both id %d and id %d", tok, prev, id)
		}
		ids[tok] = id
	}
	type added struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		Lstrip     bool   `json:"lstrip"`
		Rstrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	}
	special := map[int]bool{}
	for _, s := range specials {
		id, ok := ids[s]
		if !ok {
			return nil, fmt.Errorf("special token %q is not in the vocabulary", s)
		}
		special[id] = true
	}
	addedTokens := []added{}
	for id, tok := range tokens { // in id order, as the library writes them
		if special[id] {
			addedTokens = append(addedTokens, added{ID: id, Content: tok, Normalized: true, Special: true})
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep "<|endoftext|>" readable
	put := func(v any) error {
		if err := enc.Encode(v); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
		return nil
	}
	const byteLevel = `{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}`
	b.WriteString(`{"version":"1.0","truncation":null,"padding":null,"added_tokens":`)
	if err := put(addedTokens); err != nil {
		return nil, err
	}
	b.WriteString(`,"normalizer":null,"pre_tokenizer":` + byteLevel + `,"post_processor":` + byteLevel +
		`,"decoder":` + byteLevel + `,"model":{"type":"BPE","dropout":null,"unk_token":null,` +
		`"continuing_subword_prefix":"","end_of_word_suffix":"","fuse_unk":false,"byte_fallback":false,"vocab":{`)
	for id, tok := range tokens {
		if id > 0 {
			b.WriteByte(',')
		}
		if err := put(tok); err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, ":%d", id)
	}
	b.WriteString(`},"merges":[`)
	for i, m := range merges {
		if strings.Contains(m[0]+m[1], " ") {
			return nil, fmt.Errorf("merge %d %q %q: a token holds a space, which a merge line cannot spell", i, m[0], m[1])
		}
		if i > 0 {
			b.WriteByte(',')
		}
		if err := put(m[0] + " " + m[1]); err != nil {
			return nil, err
		}
	}
	b.WriteString("]}}\n")
	return b.Bytes(), nil
}
