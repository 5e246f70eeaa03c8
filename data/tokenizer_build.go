package data

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"
)

// bpeVersion names the trainer's algorithm in the cache key: bump it when
// trainBPE changes what it learns.
const bpeVersion = "memo-bpe-v1"

// buildTokenizer returns the tokenizer cfg.Tokenizer names; a trained BPE is
// cached in CacheDir/tokenizers by a hash of the corpus and the spec.
func buildTokenizer(cfg Config, cache string, docs []rawDoc) (*Tokenizer, bool, error) {
	spec, err := parseTokenizerSpec(cfg.Tokenizer)
	if err != nil {
		return nil, false, fmt.Errorf("data.tokenizer: %w", err)
	}
	switch spec.Kind {
	case "gpt2":
		t, err := loadGPT2(cache)
		return t, false, err
	case "hf":
		t, err := LoadTokenizer("hf:" + spec.Path)
		return t, false, err
	}
	texts := make([]string, len(docs))
	for i, d := range docs {
		texts[i] = d.Text
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00", bpeVersion, spec.Vocab)
	for _, t := range texts {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(t)))
		h.Write(n[:])
		h.Write([]byte(t))
	}
	path := filepath.Join(cache, "tokenizers", fmt.Sprintf("bpe%d-%s.json", spec.Vocab, hex.EncodeToString(h.Sum(nil))[:20]))
	if raw, err := os.ReadFile(path); err == nil {
		if t, err := parseTokenizerJSON(raw); err == nil && t.bpe != nil {
			slog.Info("data: tokenizer from cache", "path", path)
			return t, true, nil
		}
		slog.Warn("data: cached tokenizer unreadable, retraining", "path", path)
	}
	start := time.Now()
	m, err := trainBPE(countPiecesParallel(texts), spec.Vocab)
	if err != nil {
		return nil, false, fmt.Errorf("data.tokenizer = %q: %w", cfg.Tokenizer, err)
	}
	t := &Tokenizer{bpe: m, eos: m.eos}
	slog.Info("data: tokenizer trained", "spec", cfg.Tokenizer, "vocab", t.VocabSize(), "seconds", time.Since(start).Seconds())
	if err := t.Save(path); err != nil {
		slog.Warn("data: could not cache tokenizer", "err", err)
	}
	return t, false, nil
}

func countPiecesParallel(texts []string) map[string]int {
	workers := min(runtime.GOMAXPROCS(0), max(1, len(texts)))
	parts := make([]map[string]int, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var mine []string
			for i := w; i < len(texts); i += workers {
				mine = append(mine, texts[i])
			}
			parts[w] = countPieces(mine)
		}(w)
	}
	wg.Wait()
	total := parts[0]
	for _, p := range parts[1:] {
		for k, v := range p {
			total[k] += v
		}
	}
	return total
}
