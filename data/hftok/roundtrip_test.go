package hftok

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// opticks is Newton's Opticks, the copy package data embeds (hftok cannot
// import data, which imports it).
func opticks(t testing.TB) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "opticks", "Isaac.Newton-Opticks.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestRoundTrip: decode(encode(x)) == x, line by line over a few thousand
// lines of the Opticks and for the golden texts, for both tokenizers.
func TestRoundTrip(t *testing.T) {
	lines := strings.Split(opticks(t), "\n")
	if len(lines) < 3000 {
		t.Fatalf("Opticks has %d lines", len(lines))
	}
	lines = lines[:3000]
	for name, cases := range goldens(t, "tokenizers.json") {
		t.Run(name, func(t *testing.T) {
			tok := fetched(t, name)
			texts := append([]string{}, lines...)
			for _, c := range cases {
				texts = append(texts, c.Text)
			}
			bad := 0
			for _, s := range texts {
				if got := tok.Decode(encodeOK(t, tok, s, false), true); got != s {
					bad++
					if bad <= 5 {
						t.Errorf("round trip %q gave %q", s, got)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d texts did not round-trip", bad, len(texts))
			}
		})
	}
}

func benchmarkEncode(b *testing.B, name string) {
	tok := fetched(b, name)
	text := opticks(b)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tok.Encode(text, false)
	}
}

// BenchmarkEncodeLlama3 reports MB/s over the whole Opticks (about 570 KB).
func BenchmarkEncodeLlama3(b *testing.B) { benchmarkEncode(b, "llama3.json") }

// BenchmarkEncodeLlama2 reports MB/s over the whole Opticks.
func BenchmarkEncodeLlama2(b *testing.B) { benchmarkEncode(b, "llama2.json") }

func BenchmarkParseLlama3(b *testing.B) {
	f := fetchedFiles["llama3.json"]
	fetched(b, "llama3.json")
	raw, err := os.ReadFile(filepath.Join(cacheDir(), "corpora", f.corpus, "package", "models", "tokenizer.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Parse(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// TestConcurrentEncode: goroutines sharing a Tokenizer (and its caches)
// get the ids one goroutine gets alone. Run with -race to check the caches.
func TestConcurrentEncode(t *testing.T) {
	lines := strings.Split(opticks(t), "\n")[:2000]
	for _, name := range []string{"llama3.json", "llama2.json"} {
		tok := fetched(t, name)
		fresh, err := Parse(mustRead(t, name))
		if err != nil {
			t.Fatal(err)
		}
		want := make([][]int32, len(lines))
		for i, l := range lines {
			want[i] = encodeOK(t, fresh, l, true)
		}
		errs := make(chan string, 4)
		for w := 0; w < 4; w++ {
			go func(w int) {
				for i := w; i < len(lines); i += 4 {
					if got, err := tok.Encode(lines[i], true); err != nil || !equalIDs(got, want[i]) {
						errs <- fmt.Sprintf("%s line %d: %v (error %v), want %v", name, i, got, err, want[i])
						return
					}
				}
				errs <- ""
			}(w)
		}
		for w := 0; w < 4; w++ {
			if e := <-errs; e != "" {
				t.Error(e)
			}
		}
	}
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	f := fetchedFiles[name]
	raw, err := os.ReadFile(filepath.Join(cacheDir(), "corpora", f.corpus, "package", "models", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// BenchmarkEncodeLlama3Cold is BenchmarkEncodeLlama3 with empty piece
// caches at every iteration: the first document a process encodes.
func BenchmarkEncodeLlama3Cold(b *testing.B) {
	tok := fetched(b, "llama3.json")
	text := opticks(b)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tok.rawCache = pieceCache{}
		tok.model.(*bpe).cache = pieceCache{}
		tok.Encode(text, false)
	}
}
