package data

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
)

func opticksTokenizer(b *testing.B, vocab int) (*bpeModel, string) {
	text := opticksText(b)
	m, err := trainBPE(countPieces([]string{text}), vocab)
	if err != nil {
		b.Fatal(err)
	}
	return m, text
}

// BenchmarkEncode reports tokenization throughput of the Opticks text on
// one core: warm (the piece cache filled, as in Build after chunking) and
// cold (an empty cache every iteration).
func BenchmarkEncode(b *testing.B) {
	m, text := opticksTokenizer(b, 4096)
	b.Run("bpe4096-warm", func(b *testing.B) {
		m.encode(text, nil)
		b.SetBytes(int64(len(text)))
		for i := 0; i < b.N; i++ {
			m.encode(text, nil)
		}
	})
	b.Run("bpe4096-cold", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for i := 0; i < b.N; i++ {
			m.cache = sync.Map{}
			m.cacheSize.Store(0)
			m.encode(text, nil)
		}
	})
	if _, err := packageDir(fetchedCache(), "gpt2"); err == nil {
		g, err := LoadTokenizer("gpt2")
		if err != nil {
			b.Fatal(err)
		}
		b.Run("gpt2-cold", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for i := 0; i < b.N; i++ {
				g.bpe.cache = sync.Map{}
				g.bpe.cacheSize.Store(0)
				g.bpe.encode(text, nil)
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

// tokensFixture is 4,000 documents of 250 ids (4 MB of int32).
func tokensFixture() ([]*candidate, int64) {
	ids := make([]int32, 250)
	for i := range ids {
		ids[i] = int32(i * 7 % 4096)
	}
	docs := make([]*candidate, 4000)
	for i := range docs {
		docs[i] = &candidate{id: int64(i), ids: ids}
	}
	return docs, int64(len(docs) * len(ids) * 4)
}

func BenchmarkArrowWrite(b *testing.B) {
	docs, size := tokensFixture()
	path := filepath.Join(b.TempDir(), "tokens.arrow")
	b.SetBytes(size)
	for i := 0; i < b.N; i++ {
		if err := writeTokens(path, docs, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkArrowRead(b *testing.B) {
	docs, size := tokensFixture()
	dir := b.TempDir()
	if err := writeTokens(filepath.Join(dir, "tokens.arrow"), docs, nil); err != nil {
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
