package hftok

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// smallByteLevel is a byte-level BPE written by WriteByteLevelBPE: the 256
// byte tokens, a few merges and an end-of-text token.
func smallByteLevel(t *testing.T) *Tokenizer {
	t.Helper()
	var tokens []string
	for b := 0; b < 256; b++ {
		tokens = append(tokens, ByteLevelString(string([]byte{byte(b)})))
	}
	merges := [][2]string{{"Ġ", "t"}, {"h", "e"}, {"Ġt", "he"}, {"Ã", "©"}}
	for _, m := range merges {
		tokens = append(tokens, m[0]+m[1])
	}
	tokens = append(tokens, "<|endoftext|>")
	raw, err := WriteByteLevelBPE(tokens, merges, []string{"<|endoftext|>"})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Parse(raw)
	if err != nil {
		t.Fatalf("WriteByteLevelBPE's file: %v", err)
	}
	if again, _ := WriteByteLevelBPE(tokens, merges, []string{"<|endoftext|>"}); string(again) != string(raw) {
		t.Fatal("WriteByteLevelBPE wrote two different files for the same arguments")
	}
	return tok
}

func TestSplitGPT2(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"Hello world", []string{"Hello", " world"}},
		{"a  b", []string{"a", " ", " b"}},
		{"a\n\nb", []string{"a", "\n", "\n", "b"}},
		{"end.  ", []string{"end", ".", "  "}},
		{"I'm he's they'll", []string{"I", "'m", " he", "'s", " they", "'ll"}},
		{"x 's", []string{"x", " '", "s"}},
		{"1999 cats!!", []string{"1999", " cats", "!!"}},
		{"\t\tx", []string{"\t", "\t", "x"}},
		{"naïve—café", []string{"naïve", "—", "café"}},
		{"a\xffb", []string{"a", "\xff", "b"}},
		// U+001C..U+001F are symbols to the library (Python's str.isspace
		// calls them white space; Oniguruma's \s does not).
		{"x \x1c\x1d y", []string{"x", " \x1c\x1d", " y"}},
	} {
		var got []string
		SplitGPT2(c.in, func(p string) { got = append(got, p) })
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("SplitGPT2(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestByteLevel: a file in GPT-2's scheme is ByteLevel; its ids stand for
// bytes (any bytes round-trip through Encode and DecodeBytes, where Decode
// writes U+FFFD as the library does), an Encoder and the piece counts give
// Encode's ids, and other files are not ByteLevel.
func TestByteLevel(t *testing.T) {
	tok := smallByteLevel(t)
	if !tok.ByteLevel() {
		t.Fatal("WriteByteLevelBPE's file is not ByteLevel")
	}
	eos, _ := tok.TokenToID("<|endoftext|>")
	// Ġt=256 he=257 Ġthe=258 é=259: " the" merges whole, " café" into Ġ c a f é.
	if got, want := encodeOK(t, tok, " the café", false), []int32{258, 32, 99, 97, 102, 259}; !slices.Equal(got, want) {
		t.Errorf("Encode(\" the café\") = %v, want %v", got, want)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	enc := tok.NewEncoder(64)
	for k := 0; k < 300; k++ {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		s := string(b)
		ids := encodeOK(t, tok, s, false)
		if got := tok.DecodeBytes(ids, false); got != s {
			t.Fatalf("DecodeBytes(Encode(%q)) = %q", s, got)
		}
		if !tok.DecodesTo(ids, s) || len(s) > 0 && tok.DecodesTo(ids, s[1:]) || tok.DecodesTo(ids, s+"x") {
			t.Fatalf("DecodesTo(Encode(%q)) disagrees with DecodeBytes", s)
		}
		if got := encodeOK(t, enc, s, false); !slices.Equal(got, ids) {
			t.Fatalf("Encoder.Encode(%q) = %v, Encode %v", s, got, ids)
		}
		n := 0
		SplitGPT2(s, func(p string) { n += enc.PieceLen(p) })
		if n != len(ids) || tok.HasAddedToken(s) {
			t.Fatalf("%q: pieces count %d ids, Encode gives %d", s, n, len(ids))
		}
	}
	half := encodeOK(t, tok, "\xc3", false)
	if lib, exact := tok.Decode(half, false), tok.DecodeBytes(half, false); lib != "\uFFFD" || exact != "\xc3" {
		t.Errorf("a lone lead byte: Decode %q (want U+FFFD, the library's), DecodeBytes %q (want the byte)", lib, exact)
	}
	withEOS := encodeOK(t, tok, "the<|endoftext|>", false)
	if !slices.Contains(withEOS, eos) || !tok.HasAddedToken("the<|endoftext|>") {
		t.Errorf("Encode(the<|endoftext|>) = %v: want EOS %d", withEOS, eos)
	}
	if got := tok.DecodeBytes(withEOS, true); got != "the" {
		t.Errorf("DecodeBytes skipping special tokens = %q", got)
	}
	if got := tok.DecodeBytes(append(withEOS, -1, 1<<20), false); got != "the<|endoftext|>" {
		t.Errorf("DecodeBytes = %q: want unknown ids dropped, EOS kept", got)
	}

	// Not GPT-2's scheme: a prefix space, a normalizer, no decoder.
	raw := string(mustWrite(t))
	for name, edit := range map[string]func(string) string{
		"prefix space": func(s string) string {
			return strings.Replace(s, `"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false`, `"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":true`, 1)
		},
		"normalizer": func(s string) string {
			return strings.Replace(s, `"normalizer":null`, `"normalizer":{"type":"Lowercase"}`, 1)
		},
		"no decoder": func(s string) string {
			return strings.Replace(s, `"decoder":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}`, `"decoder":null`, 1)
		},
	} {
		edited := edit(raw)
		if edited == raw {
			t.Fatalf("%s: the edit changed nothing", name)
		}
		other, err := Parse([]byte(edited))
		if err != nil {
			t.Fatal(err)
		}
		if other.ByteLevel() {
			t.Errorf("%s: ByteLevel", name)
		}
		if got := other.DecodeBytes([]int32{0xC3}, false); got != other.Decode([]int32{0xC3}, false) {
			t.Errorf("%s: DecodeBytes %q is not Decode %q", name, got, other.Decode([]int32{0xC3}, false))
		}
	}
}

func mustWrite(t *testing.T) []byte {
	var tokens []string
	for b := 0; b < 256; b++ {
		tokens = append(tokens, ByteLevelString(string([]byte{byte(b)})))
	}
	raw, err := WriteByteLevelBPE(tokens, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestWriteByteLevelBPEErrors(t *testing.T) {
	for _, c := range []struct {
		name     string
		tokens   []string
		merges   [][2]string
		specials []string
		want     string
	}{
		{"duplicate token", []string{"a", "b", "a"}, nil, nil, `token "a" is both id 0 and id 2`},
		{"special missing", []string{"a"}, nil, []string{"<|endoftext|>"}, `special token "<|endoftext|>" is not in the vocabulary`},
		{"space in a merge", []string{"a", "b c"}, [][2]string{{"a", "b c"}}, nil, "holds a space"},
	} {
		if _, err := WriteByteLevelBPE(c.tokens, c.merges, c.specials); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}
