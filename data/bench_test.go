package data

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkEncode reports tokenization throughput of the Opticks text on
// one core: warm (the piece cache filled, as in Build after chunking) and
// cold (a freshly loaded tokenizer every iteration), for a BPE trained on
// the Opticks and for GPT-2.
func BenchmarkEncode(b *testing.B) {
	text := opticksText(b)
	toks := map[string]*Tokenizer{}
	var err error
	if toks["bpe4096"], err = trainBPE(countPieces([]string{text}), 4096); err != nil {
		b.Fatal(err)
	}
	if _, err := packageDir(fetchedCache(), "gpt2"); err == nil {
		if toks["gpt2"], err = LoadTokenizer("gpt2"); err != nil {
			b.Fatal(err)
		}
	}
	for _, name := range []string{"bpe4096", "gpt2"} {
		tok := toks[name]
		if tok == nil {
			continue
		}
		b.Run(name+"-warm", func(b *testing.B) {
			tok.Encode(text)
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tok.Encode(text)
			}
		})
		b.Run(name+"-cold", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				fresh, err := parseTokenizerJSON(tok.JSON())
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				fresh.Encode(text)
			}
		})
	}
}

// BenchmarkTrainBPE times learning a 4,096-token vocabulary from Opticks.
func BenchmarkTrainBPE(b *testing.B) {
	text := opticksText(b)
	counts := countPieces([]string{text})
	b.SetBytes(int64(len(text)))
	for i := 0; i < b.N; i++ {
		if _, err := trainBPE(counts, 4096); err != nil {
			b.Fatal(err)
		}
	}
}

// tokensFixture is 4,000 documents of 250 ids (4 MB of int32), as
// writeTokens takes them.
func tokensFixture() (int, func(int) (int64, []int32), int64) {
	ids := make([]int32, 250)
	for i := range ids {
		ids[i] = int32(i * 7 % 4096)
	}
	const n = 4000
	return n, func(k int) (int64, []int32) { return int64(k), ids }, int64(n * len(ids) * 4)
}

func BenchmarkArrowWrite(b *testing.B) {
	n, row, size := tokensFixture()
	path := filepath.Join(b.TempDir(), "tokens.arrow")
	b.SetBytes(size)
	for i := 0; i < b.N; i++ {
		if err := writeTokens(path, n, row); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkArrowRead(b *testing.B) {
	n, row, size := tokensFixture()
	dir := b.TempDir()
	if err := writeTokens(filepath.Join(dir, "tokens.arrow"), n, row); err != nil {
		b.Fatal(err)
	}
	ds := &Dataset{dir: dir}
	b.SetBytes(size)
	for i := 0; i < b.N; i++ {
		n := 0
		if err := ds.ScanTokens(func(_ int64, ids []int32) error { n += len(ids); return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuildOpticks is a whole Build (tokenizer from cache after the
// first iteration) of the default config.
func BenchmarkBuildOpticks(b *testing.B) {
	cfg := DefaultConfig()
	cfg.CacheDir = b.TempDir()
	dir := b.TempDir()
	for i := 0; i < b.N; i++ {
		if err := Build(context.Background(), cfg, dir); err != nil {
			b.Fatal(err)
		}
	}
}
