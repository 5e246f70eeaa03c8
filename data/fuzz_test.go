package data

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/memo-research/memo/internal/runfiles"
)

// fuzzVocab is the vocabulary the fuzzed tokens.arrow files are checked
// against.
const fuzzVocab = 50

// sampleArrow writes a docs.arrow and tokens.arrow of n documents (two
// batches from batchRows+1 on) and returns their bytes.
func sampleArrow(t testing.TB, n int) (docs, tokens []byte) {
	t.Helper()
	dir := t.TempDir()
	splits := []string{SplitTarget, SplitControl, SplitBackground, SplitValidation}
	err := writeArrow(filepath.Join(dir, "docs.arrow"), runfiles.DocsSchema, n, func(b *array.RecordBuilder, i int) {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append("opticks")
		b.Field(2).(*array.StringBuilder).Append("doc " + strings.Repeat("x", i%5))
		b.Field(3).(*array.StringBuilder).Append(strings.Repeat("light ", i%7+1))
		b.Field(4).(*array.Int32Builder).Append(int32(i % 9))
		b.Field(5).(*array.StringBuilder).Append(splits[i%4])
		b.Field(6).(*array.Int32Builder).Append(int32(i % 3))
	})
	if err != nil {
		t.Fatal(err)
	}
	err = writeArrow(filepath.Join(dir, "tokens.arrow"), runfiles.TokensSchema, n, func(b *array.RecordBuilder, i int) {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		lb := b.Field(1).(*array.ListBuilder)
		lb.Append(true)
		for k := 0; k < i%9; k++ {
			lb.ValueBuilder().(*array.Int32Builder).Append(int32((i + k) % fuzzVocab))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if docs, err = os.ReadFile(filepath.Join(dir, "docs.arrow")); err != nil {
		t.Fatal(err)
	}
	if tokens, err = os.ReadFile(filepath.Join(dir, "tokens.arrow")); err != nil {
		t.Fatal(err)
	}
	return docs, tokens
}

// flip returns a copy of b with byte i xor-ed with x.
func flip(b []byte, i int, x byte) []byte {
	c := append([]byte(nil), b...)
	c[i%len(c)] ^= x
	return c
}

// FuzzDocsArrow: no docs.arrow, however corrupt, makes the reader panic; an
// error names the file. testdata/fuzz/FuzzDocsArrow holds the seeds and any
// input that once failed.
func FuzzDocsArrow(f *testing.F) {
	// Few documents: the fuzzer minimizes each new input byte by byte, which
	// takes minutes on a file of hundreds of documents.
	docs, _ := sampleArrow(f, 12)
	f.Add(docs)
	for _, i := range []int{8, 64, 200, len(docs) / 2, len(docs) - 40, len(docs) - 12} {
		f.Add(flip(docs, i, 0x40))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, index, err := scanDocs("docs.arrow", bytes.NewReader(raw), "")
		if err != nil {
			if !strings.Contains(err.Error(), "docs.arrow") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for j, d := range got {
			if index[d.ID] != j {
				t.Fatalf("doc %d: index %d, want %d", d.ID, index[d.ID], j)
			}
		}
	})
}

// FuzzTokensArrow: no tokens.arrow, however corrupt, makes the reader panic
// or hands out an id outside the vocabulary.
func FuzzTokensArrow(f *testing.F) {
	_, tokens := sampleArrow(f, 12)
	f.Add(tokens)
	for _, i := range []int{8, 64, 200, len(tokens) / 2, len(tokens) - 40, len(tokens) - 12} {
		f.Add(flip(tokens, i, 0x40))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		err := scanTokens("tokens.arrow", bytes.NewReader(raw), fuzzVocab, func(id int64, ids []int32) error {
			for _, v := range ids {
				if v < 0 || v >= fuzzVocab {
					t.Fatalf("doc %d: id %d handed out", id, v)
				}
			}
			return nil
		})
		if err != nil && !strings.Contains(err.Error(), "tokens.arrow") {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}

// TestTokenOutsideVocabulary: a tokens.arrow whose ids are fine for a
// larger vocabulary is refused with the file, document and id named.
func TestTokenOutsideVocabulary(t *testing.T) {
	_, tokens := sampleArrow(t, batchRows+3)
	err := scanTokens("run/data/tokens.arrow", bytes.NewReader(tokens), 10, func(int64, []int32) error { return nil })
	if err == nil {
		t.Fatal("ids up to 49 accepted with a vocabulary of 10")
	}
	for _, want := range []string{"run/data/tokens.arrow", "doc_id ", "id 10", "vocabulary of 10"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestCorruptArrowIsAnError: flipped bytes in the body of either file give
// an error naming it, never a panic or a silent success on these offsets.
func TestCorruptArrowIsAnError(t *testing.T) {
	docs, tokens := sampleArrow(t, batchRows+3)
	// The first string offsets of docs.arrow's first batch sit just after its
	// metadata; turning a high byte of one on makes it point past the data.
	bad := 0
	for i := 0; i < len(docs)-16; i += 5 {
		c := flip(docs, i, 0x7f)
		if _, _, err := scanDocs("docs.arrow", bytes.NewReader(c), ""); err != nil {
			bad++
			if !strings.Contains(err.Error(), "docs.arrow") {
				t.Fatalf("byte %d: error does not name the file: %v", i, err)
			}
		}
	}
	if bad == 0 {
		t.Fatal("no corruption of docs.arrow was noticed")
	}
	if _, _, err := scanDocs("docs.arrow", bytes.NewReader(tokens), ""); err == nil || !strings.Contains(err.Error(), "docs.arrow") {
		t.Fatalf("tokens.arrow read as docs.arrow: %v", err)
	}
	if _, _, err := scanDocs("docs.arrow", bytes.NewReader([]byte("not arrow")), ""); err == nil || errors.Is(err, os.ErrNotExist) {
		t.Fatalf("text read as docs.arrow: %v", err)
	}
}
