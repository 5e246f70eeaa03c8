package data

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/memo-research/memo/data/hftok"
)

// bpeVersion names the trainer's algorithm in the cache key: bump it when
// trainBPE changes what it learns. v2: pieces are cut by hftok.SplitGPT2,
// as the library cuts them (U+001C..U+001F are symbols, not white space),
// and the file is a plain Hugging Face tokenizer.json.
const bpeVersion = "memo-bpe-v2"

// errNoDocuments: the sources gave no usable document to train on.
var errNoDocuments = errors.New("no usable documents")

// buildTokenizer returns the tokenizer cfg.Tokenizer names; a trained BPE is
// cached in CacheDir/tokenizers by a hash of the corpus and the spec. read
// streams the corpus (it is called once for the hash, and once more to
// count pieces when the cache misses); for a BPE the number of documents is
// returned too (0 when not counted).
func buildTokenizer(cfg Config, cache string, read func(emit func(rawDoc)) error) (*Tokenizer, bool, int, error) {
	spec, err := parseTokenizerSpec(cfg.Tokenizer)
	if err != nil {
		return nil, false, 0, fmt.Errorf("data.tokenizer: %w", err)
	}
	switch spec.Kind {
	case "gpt2":
		t, err := loadGPT2(cache)
		return t, false, 0, err
	case "hf":
		t, err := LoadTokenizer("hf:" + spec.Path)
		return t, false, 0, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00", bpeVersion, spec.Vocab)
	docs := 0
	err = read(func(d rawDoc) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(d.Text)))
		h.Write(n[:])
		h.Write([]byte(d.Text))
		docs++
	})
	if err != nil {
		return nil, false, 0, err
	}
	if docs == 0 {
		return nil, false, 0, errNoDocuments
	}
	path := filepath.Join(cache, tokenizersDir, fmt.Sprintf("bpe%d-%s.json", spec.Vocab, hex.EncodeToString(h.Sum(nil))[:20]))
	if raw, err := os.ReadFile(path); err == nil {
		if t, err := parseTokenizerJSON(raw); err == nil && t.lib.ByteLevel() && t.VocabSize() == spec.Vocab {
			slog.Info("data: tokenizer from cache", "path", path)
			return t, true, docs, nil
		}
		slog.Warn("data: cached tokenizer unreadable, retraining", "path", path)
	}
	start := time.Now()
	counts, err := countPiecesStream(read)
	if err != nil {
		return nil, false, 0, err
	}
	t, err := trainBPE(counts, spec.Vocab)
	if err != nil {
		return nil, false, 0, fmt.Errorf("data.tokenizer = %q: %w", cfg.Tokenizer, err)
	}
	slog.Info("data: tokenizer trained", "spec", cfg.Tokenizer, "vocab", t.VocabSize(), "seconds", time.Since(start).Seconds())
	if err := t.Save(path); err != nil {
		slog.Warn("data: could not cache tokenizer", "err", err)
	}
	return t, false, docs, nil
}

// countPiecesStream counts the pre-tokenized pieces of every text read
// gives, in parallel workers with a map each, summed at the end (counts are
// sums: the order of the texts does not matter).
func countPiecesStream(read func(emit func(rawDoc)) error) (map[string]int, error) {
	workers := runtime.GOMAXPROCS(0)
	texts := make(chan string, 2*workers)
	parts := make([]map[string]int, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			counts := map[string]int{}
			for t := range texts {
				hftok.SplitGPT2(t, func(p string) { counts[p]++ })
			}
			parts[w] = counts
		}(w)
	}
	err := read(func(d rawDoc) { texts <- d.Text })
	close(texts)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	total := parts[0]
	for _, p := range parts[1:] {
		for k, v := range p {
			total[k] += v
		}
	}
	return total, nil
}
