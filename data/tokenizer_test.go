package data

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sugarme/tokenizer/pretrained"
)

func TestSplitWordsGPT2Pattern(t *testing.T) {
	cases := []struct {
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
	}
	for _, c := range cases {
		var got []string
		splitWords(c.in, func(p string) { got = append(got, p) })
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("splitWords(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestSplitWordsCoversInput: the pieces of every source concatenate back to
// the text, so no byte is lost before BPE.
func TestSplitWordsCoversInput(t *testing.T) {
	for name, texts := range sourceTexts(t, 50) {
		for i, s := range texts {
			var b strings.Builder
			splitWords(s, func(p string) {
				if p == "" {
					t.Fatalf("%s doc %d: empty piece", name, i)
				}
				b.WriteString(p)
			})
			if b.String() != s {
				t.Fatalf("%s doc %d: pieces do not rebuild the text", name, i)
			}
		}
	}
}

func TestGPT2KnownIDs(t *testing.T) {
	needFetched(t, "gpt2")
	tok, err := LoadTokenizer("gpt2")
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 50257 || tok.EOS() != 50256 {
		t.Fatalf("vocab %d eos %d, want 50257 and 50256", tok.VocabSize(), tok.EOS())
	}
	// Ids from OpenAI's GPT-2 tokenizer.
	for text, want := range map[string][]int32{
		"Hello world": {15496, 995},
		" Hello":      {18435},
	} {
		got, _ := tok.Encode(text)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Encode(%q) = %v, want %v", text, got, want)
		}
	}
}

// TestGPT2MatchesSugarme checks our encoder against sugarme/tokenizer's on
// text whose whitespace is single spaces, where the two pre-tokenizers agree.
func TestGPT2MatchesSugarme(t *testing.T) {
	needFetched(t, "gpt2")
	ours, err := LoadTokenizer("gpt2")
	if err != nil {
		t.Fatal(err)
	}
	lib := sugarmeGPT2(t)
	for name, texts := range sourceTexts(t, 3) {
		for _, text := range texts {
			text = strings.Join(strings.Fields(text), " ")
			text = strings.ToValidUTF8(text[:min(2000, len(text))], "")
			want := libIDs(t, lib, text)
			got, _ := ours.Encode(text)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: ids differ from sugarme's on %q", name, text[:80])
			}
		}
	}
}

func roundTrip(t *testing.T, name string, tok *Tokenizer, s string) {
	t.Helper()
	ids, err := tok.Encode(s)
	if err != nil {
		t.Fatalf("%s: encode: %v", name, err)
	}
	if got := tok.Decode(ids); got != s {
		t.Fatalf("%s: round trip of %q gave %q", name, s[:min(len(s), 60)], got[:min(len(got), 60)])
	}
}

// TestRoundTripProperty: every tokenizer gives back the exact bytes of
// random slices of every available source, and of random bytes.
func TestRoundTripProperty(t *testing.T) {
	texts := sourceTexts(t, 40)
	var all []string
	for _, ts := range texts {
		all = append(all, ts...)
	}
	bpeTok, err := trainBPE(countPieces(all), 1024)
	if err != nil {
		t.Fatal(err)
	}
	toks := map[string]*Tokenizer{"bpe:1024": {bpe: bpeTok, eos: bpeTok.eos}}
	if fetched(t, "gpt2") {
		g, err := LoadTokenizer("gpt2")
		if err != nil {
			t.Fatal(err)
		}
		toks["gpt2"] = g
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for tname, tok := range toks {
		for sname, ts := range texts {
			for _, s := range ts {
				roundTrip(t, tname+"/"+sname, tok, s)
				for k := 0; k < 5; k++ { // slices that may cut characters
					i := rng.IntN(len(s))
					j := i + rng.IntN(min(len(s)-i, 500)+1)
					roundTrip(t, tname+"/"+sname+"/slice", tok, s[i:j])
				}
			}
		}
		for k := 0; k < 200; k++ {
			b := make([]byte, rng.IntN(64))
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
			roundTrip(t, tname+"/random-bytes", tok, string(b))
		}
		roundTrip(t, tname+"/empty", tok, "")
		roundTrip(t, tname+"/spaces", tok, "  leading and trailing  \n\n\t")
	}
}

func TestTrainBPEDeterministic(t *testing.T) {
	counts := countPieces([]string{opticksText(t)})
	a, err := trainBPE(counts, 700)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := trainBPE(counts, 700)
	ja, _ := a.marshalHF()
	jb, _ := b.marshalHF()
	if string(ja) != string(jb) {
		t.Fatal("two trainings on the same counts learned different tokenizers")
	}
	if len(a.tokens) != 700 || a.tokens[699] != EOSToken || a.eos != 699 {
		t.Fatalf("vocab %d, last %q, eos %d", len(a.tokens), a.tokens[len(a.tokens)-1], a.eos)
	}
	if _, err := trainBPE(counts, 100); err == nil {
		t.Error("vocab 100 accepted")
	}
}

// TestSaveLoadHF: a saved tokenizer.json loads back (by bare path, as a
// run directory's) to our native encoder with the same ids; as "hf:PATH"
// hftok reads it as a Hugging Face file and gives the same ids too; and
// sugarme/tokenizer reads it.
func TestSaveLoadHF(t *testing.T) {
	texts := []string{opticksText(t)}
	m, err := trainBPE(countPieces(texts), 800)
	if err != nil {
		t.Fatal(err)
	}
	tok := &Tokenizer{bpe: m, eos: m.eos}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := tok.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := LoadTokenizer(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.bpe == nil || back.EOS() != tok.EOS() || back.VocabSize() != 800 {
		t.Fatalf("reloaded: native %v eos %d vocab %d", back.bpe != nil, back.EOS(), back.VocabSize())
	}
	sample := texts[0][:5000]
	a, _ := tok.Encode(sample)
	b, _ := back.Encode(sample)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("reloaded tokenizer encodes differently")
	}
	viaHF, err := LoadTokenizer("hf:" + path)
	if err != nil {
		t.Fatal(err)
	}
	if viaHF.lib == nil || viaHF.EOS() != tok.EOS() || viaHF.VocabSize() != 800 {
		t.Fatalf("as hf: hftok %v eos %d vocab %d", viaHF.lib != nil, viaHF.EOS(), viaHF.VocabSize())
	}
	if c, _ := viaHF.Encode(sample); !reflect.DeepEqual(a, c) {
		t.Fatal("hftok encodes our tokenizer.json differently from the native encoder")
	}
	if got := viaHF.Decode(a); got != sample {
		t.Fatal("hftok does not decode our ids to the text")
	}
	lib, err := pretrained.FromFile(path)
	if err != nil {
		t.Fatalf("sugarme cannot read our tokenizer.json: %v", err)
	}
	if lib.GetVocabSize(true) != 800 {
		t.Errorf("sugarme sees %d tokens, want 800", lib.GetVocabSize(true))
	}
	single := strings.Join(strings.Fields(sample), " ")
	enc, err := lib.EncodeSingle(single, false)
	if err != nil {
		t.Fatal(err)
	}
	ours, _ := tok.Encode(single)
	if len(enc.Ids) != len(ours) {
		t.Fatalf("sugarme encodes %d tokens, we %d", len(enc.Ids), len(ours))
	}
	for i := range ours {
		if int32(enc.Ids[i]) != ours[i] {
			t.Fatalf("token %d: sugarme %d, ours %d", i, enc.Ids[i], ours[i])
		}
	}
	if _, err := LoadTokenizer("bpe:4096"); err == nil {
		t.Error("LoadTokenizer(bpe:4096) should explain that Build trains it")
	}
	if _, err := LoadTokenizer(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
}

// TestHFLibraryTokenizer: a tokenizer.json that is not byte-level (a
// WordLevel model) runs through hftok, and Build rejects by name the
// documents it cannot reproduce.
func TestHFLibraryTokenizer(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "wordlevel.json")
	writeFile(t, path, `{"version":"1.0","added_tokens":[{"id":0,"content":"[UNK]","special":true}],"normalizer":null,
"pre_tokenizer":{"type":"Whitespace"},"post_processor":null,"decoder":null,
"model":{"type":"WordLevel","vocab":{"[UNK]":0,"hello":1,"world":2,".":3},"unk_token":"[UNK]"}}`)
	tok, err := LoadTokenizer("hf:" + path)
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := tok.Encode("hello world.")
	if tok.bpe != nil || !reflect.DeepEqual(ids, []int32{1, 2, 3}) || tok.EOS() != -1 || tok.VocabSize() != 4 {
		t.Fatalf("ids %v eos %d vocab %d", ids, tok.EOS(), tok.VocabSize())
	}
	writeFile(t, filepath.Join(dir, "txt", "a.txt"), "hello world")
	writeFile(t, filepath.Join(dir, "txt", "b.txt"), "hello world.")
	cfg := DefaultConfig()
	cfg.Sources, cfg.Tokenizer, cfg.CacheDir = []string{"txt:" + filepath.Join(dir, "txt")}, "hf:"+path, dir
	cfg.Targets, cfg.Controls, cfg.Validation, cfg.ChunkTokens, cfg.MinTokens, cfg.DedupWords = 1, 0, 0, 0, 1, 0
	ds := buildTest(t, cfg)
	rep := ds.Report()
	if len(rep.Rejected) != 1 || rep.Rejected[0].Title != "b.txt" || !strings.Contains(rep.Rejected[0].Reason, "round-trip") {
		t.Errorf("rejected %+v, want b.txt for not round-tripping", rep.Rejected)
	}
	back, err := ds.Tokenizer()
	if err != nil || back.lib == nil {
		t.Fatalf("saved tokenizer: %v", err)
	}
	cfg.Layout = LayoutPacked
	if err := Build(context.Background(), cfg, t.TempDir()); err == nil || !strings.Contains(err.Error(), "EOS") {
		t.Errorf("packed layout without EOS: %v", err)
	}
}

// TestAddPrefixSpaceQuirk: a ByteLevel tokenizer.json with add_prefix_space
// on is used with it off, so that decoding gives back the text.
func TestAddPrefixSpaceQuirk(t *testing.T) {
	m, err := trainBPE(countPieces([]string{opticksText(t)}), 600)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := m.marshalHF()
	raw = []byte(strings.Replace(string(raw), `"add_prefix_space":false`, `"add_prefix_space":true`, 1))
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	writeFile(t, path, string(raw))
	tok, err := LoadTokenizer(path)
	if err != nil || tok.bpe == nil {
		t.Fatalf("load: %v (native %v)", err, tok != nil && tok.bpe != nil)
	}
	roundTrip(t, "prefix-space", tok, "Light is refracted.")
}

func TestTrainBPETooSmallCorpus(t *testing.T) {
	_, err := trainBPE(countPieces([]string{"the cat sat on the mat"}), 1000)
	if err == nil || !strings.Contains(err.Error(), "fewer than the 1000") {
		t.Errorf("tiny corpus: %v", err)
	}
}
