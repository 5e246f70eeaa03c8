package data

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/progress"
)

// candidate is a tokenized document (or chunk) before splitting.
type candidate struct {
	id                  int64
	source, title, text string
	ids                 []int32
	split               string
	reps                int
	parent              int // index of the source document it was cut from
	chunk               int // its position among that document's chunks
}

// Build makes runDir/data/{docs.arrow,tokens.arrow,tokenizer.json,report.json}:
// with data.cache_datasets (the default) from the shared dataset cache,
// building the cache entry first if no valid one exists (dscache.go);
// otherwise built in place.
func Build(ctx context.Context, cfg Config, runDir string) error {
	// What the user's spec and files cause is bad input (exit 2 in the
	// CLI), not a failure of the machine.
	if err := cfg.Validate(); err != nil {
		return badinput.Wrap(err)
	}
	if cfg.CacheDatasets {
		return buildCached(ctx, cfg, runDir)
	}
	return buildDir(ctx, cfg, filepath.Join(runDir, "data"))
}

// buildDir reads the sources, makes or loads the tokenizer, cuts and
// tokenizes the documents, rejects unusable ones (reported by name), splits
// them and writes the dataset's files into dir. report.json is written
// last: its presence marks a complete build.
func buildDir(ctx context.Context, cfg Config, dir string) error {
	start := time.Now()
	cache := cfg.cacheDir()
	rep := &Report{Config: cfg, Tokenizer: cfg.Tokenizer, Layout: cfg.Layout, MemberSeparation: cfg.MemberSeparation(), Sources: map[string]*SourceCount{},
		Splits: map[string]int{}, SplitTokens: map[string]int{}, Repetitions: map[string]int{}, RejectedBy: map[string]int{}}
	reject := func(r Rejected, key string) {
		rep.Rejected = append(rep.Rejected, r)
		rep.RejectedBy[key]++
		if sc := rep.Sources[r.Source]; sc != nil {
			sc.Rejected++
		}
	}

	var raws []rawDoc
	for _, s := range cfg.Sources {
		src, _ := ParseSource(s)
		docs, rej, err := loadSource(src, cache)
		if err != nil {
			return badinput.Wrap(err)
		}
		rep.Sources[src.Name()] = &SourceCount{Documents: len(docs) + len(rej)}
		for _, r := range rej {
			reject(r, reasonKey(r.Reason))
		}
		raws = append(raws, docs...)
		slog.Info("data: source read", "source", src.Name(), "documents", len(docs), "rejected", len(rej))
	}
	if len(raws) == 0 {
		return badinput.Errorf("data.sources %v: no usable documents (%d rejected)", cfg.Sources, len(rep.Rejected))
	}

	tok, hit, err := buildTokenizer(cfg, cache, raws)
	if err != nil {
		return err
	}
	rep.TokenizerHit = hit
	rep.VocabSize, rep.EOS = tok.VocabSize(), tok.EOS()
	if cfg.Layout == LayoutPacked && tok.EOS() < 0 {
		return badinput.Errorf("data.layout = \"packed\" needs an EOS token, and tokenizer %s has none: use layout \"padded\"", cfg.Tokenizer)
	}

	cands, rejs, err := tokenizeAll(ctx, tok, raws, cfg.ChunkTokens, cfg.MinTokens)
	if err != nil {
		return err
	}
	for _, r := range rejs {
		reject(r, "tokenizer does not round-trip")
	}
	var kept []*candidate
	for _, c := range cands {
		rep.Sources[c.source].Chunks++
		if len(c.ids) < cfg.MinTokens || len(c.ids) == 0 {
			reject(Rejected{Source: c.source, Title: c.title, Reason: fmt.Sprintf("too short: %d tokens < data.min_tokens = %d", len(c.ids), cfg.MinTokens)}, "too short")
			continue
		}
		c.id = int64(len(kept))
		kept = append(kept, c)
	}
	if cfg.DedupWords > 0 {
		kept = dedupWords(kept, cfg.DedupWords, func(c *candidate, with *candidate) {
			reject(Rejected{Source: c.source, Title: c.title, Reason: fmt.Sprintf("shares a %d-word passage with %s %q", cfg.DedupWords, with.source, with.title)}, "duplicate passage")
		})
	}
	for _, c := range kept {
		rep.Sources[c.source].Kept++
		rep.Sources[c.source].Tokens += len(c.ids)
	}
	if err := assignSplits(cfg, kept, rep, reject); err != nil {
		return badinput.Wrap(err)
	}
	var out []*candidate
	for _, c := range kept {
		if c.split != "" {
			out = append(out, c)
			rep.Splits[c.split]++
			rep.SplitTokens[c.split] += len(c.ids)
			rep.TrainTokens += c.reps * len(c.ids)
			if c.split == SplitBackground {
				rep.TrainTokens += cfg.PretrainPasses * len(c.ids)
			}
		}
	}
	sort.Slice(rep.Rejected, func(i, j int) bool {
		a, b := rep.Rejected[i], rep.Rejected[j]
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		return a.Title < b.Title
	})
	if err := writeDataset(dir, out, tok, rep, start); err != nil {
		return err
	}
	slog.Info("data: built", "dir", dir, "target", rep.Splits[SplitTarget], "control", rep.Splits[SplitControl],
		"background", rep.Splits[SplitBackground], "validation", rep.Splits[SplitValidation], "rejected", len(rep.Rejected),
		"train_tokens", rep.TrainTokens, "seconds", rep.Seconds)
	return nil
}

// reasonKey is the rejected_by_reason key of a source's rejection.
func reasonKey(reason string) string {
	for _, k := range []struct{ prefix, key string }{
		{"invalid UTF-8", "invalid UTF-8"},
		{"empty", "empty"},
		{"not a JSON object", "not JSON"},
		{"no \"", "no text field"},
		{"field \"", "text not a string"},
		{"null text", "null text"},
	} {
		if strings.HasPrefix(reason, k.prefix) {
			return k.key
		}
	}
	return "unreadable"
}

func writeDataset(dir string, docs []*candidate, tok *Tokenizer, rep *Report, start time.Time) error {
	// An old report.json would mark a half-rewritten directory as complete,
	// and an old cache.json would name a cache entry these files are not.
	for _, name := range []string{"report.json", CacheLinkFile} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rebuild %s: %w", dir, err)
		}
	}
	err := writeArrow(filepath.Join(dir, "docs.arrow"), docsSchema, len(docs), func(b *array.RecordBuilder, i int) {
		c := docs[i]
		b.Field(0).(*array.Int64Builder).Append(c.id)
		b.Field(1).(*array.StringBuilder).Append(c.source)
		b.Field(2).(*array.StringBuilder).Append(c.title)
		b.Field(3).(*array.StringBuilder).Append(c.text)
		b.Field(4).(*array.Int32Builder).Append(int32(len(c.ids)))
		b.Field(5).(*array.StringBuilder).Append(c.split)
		b.Field(6).(*array.Int32Builder).Append(int32(c.reps))
	})
	if err != nil {
		return err
	}
	if err := writeTokens(filepath.Join(dir, "tokens.arrow"), docs); err != nil {
		return err
	}
	if err := tok.Save(filepath.Join(dir, "tokenizer.json")); err != nil {
		return err
	}
	if rep.Files, err = sumFiles(dir); err != nil {
		return err
	}
	rep.Seconds = time.Since(start).Seconds()
	raw, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("write report.json: %w", err)
	}
	return atomicfile.WriteFile(filepath.Join(dir, "report.json"), append(raw, '\n'))
}

func writeTokens(path string, docs []*candidate) error {
	return writeArrow(path, tokensSchema, len(docs), func(b *array.RecordBuilder, i int) {
		b.Field(0).(*array.Int64Builder).Append(docs[i].id)
		lb := b.Field(1).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Int32Builder).AppendValues(docs[i].ids, nil)
	})
}

// tokenizeAll chunks and encodes every document in parallel, keeping the
// input order. A chunk whose ids do not decode to its exact text is
// rejected.
func tokenizeAll(ctx context.Context, tok *Tokenizer, raws []rawDoc, chunkTokens, minTokens int) ([]*candidate, []Rejected, error) {
	type result struct {
		cands []*candidate
		rej   []Rejected
		err   error
	}
	results := make([]result, len(raws))
	encode := tok.Encode // both encoders are safe for concurrent use
	work := make(chan int)
	var wg sync.WaitGroup
	// Documents, tokens and MB/s of text, on a terminal or every 30 s.
	bar := progress.New("data: tokenize documents", len(raws))
	start := time.Now()
	var done, tokens, bytes atomic.Int64
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				results[i] = tokenizeOne(encode, tok, raws[i], chunkTokens, minTokens)
				n := 0
				for _, c := range results[i].cands {
					n += len(c.ids)
				}
				tokens.Add(int64(n))
				mb := float64(bytes.Add(int64(len(raws[i].Text)))) / (1 << 20)
				bar.Update(int(done.Add(1)), fmt.Sprintf("%d tokens, %.1f MB/s", tokens.Load(), mb/max(time.Since(start).Seconds(), 1e-9)))
			}
		}()
	}
	var err error
	for i := range raws {
		if err = ctx.Err(); err != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	bar.Done()
	if err != nil {
		return nil, nil, err
	}
	var cands []*candidate
	var rej []Rejected
	for i, r := range results {
		if r.err != nil {
			return nil, nil, r.err
		}
		for _, c := range r.cands {
			c.parent = i
		}
		cands = append(cands, r.cands...)
		rej = append(rej, r.rej...)
	}
	return cands, rej, nil
}

func tokenizeOne(encode func(string) ([]int32, error), tok *Tokenizer, d rawDoc, chunkTokens, minTokens int) (res struct {
	cands []*candidate
	rej   []Rejected
	err   error
}) {
	pieces := []string{d.Text}
	if chunkTokens > 0 {
		var encErr error
		c := &counter{whole: func(s string) int {
			ids, err := encode(s)
			if err != nil && encErr == nil {
				encErr = err
			}
			return len(ids)
		}}
		if tok.bpe != nil {
			c.piece = tok.bpe.pieceTokens
		}
		pieces = chunkText(d.Text, chunkTokens, minTokens, c)
		if encErr != nil {
			res.err = fmt.Errorf("tokenize %s %q: %w", d.Source, d.Title, encErr)
			return res
		}
	}
	for k, p := range pieces {
		title := d.Title
		if len(pieces) > 1 {
			title += " #" + strconv.Itoa(k+1)
		}
		ids, err := encode(p)
		if err != nil {
			res.err = fmt.Errorf("tokenize %s %q: %w", d.Source, title, err)
			return res
		}
		if tok.Decode(ids) != p {
			res.rej = append(res.rej, Rejected{Source: d.Source, Title: title, Reason: "tokenizer does not round-trip the text"})
			continue
		}
		res.cands = append(res.cands, &candidate{source: d.Source, title: title, text: p, ids: ids, chunk: k})
	}
	return res
}
