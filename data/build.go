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
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/runfiles"
)

// candidate is a tokenized chunk of a document on its way from a worker
// to the build's docTable.
type candidate struct {
	source, title, text string
	ids                 []int32
	failed              bool // it does not round-trip (rejected, a row only to number the chunks)
}

// tokenized is what tokenizeOne makes of one document.
type tokenized struct {
	cands []*candidate
	rej   []Rejected
	err   error
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
	// A run's data/ is a directory of its own (the cache's files are hard
	// links in it): written through a symbolic link, a build replaced the
	// files of a cache entry, or of whatever folder it named.
	if dir := filepath.Join(runDir, "data"); isSymlink(dir) {
		target, _ := os.Readlink(dir)
		return badinput.Errorf("data: %s is a symbolic link (to %s): a run's data/ is a directory memo writes itself; remove the link, or build into another run directory", dir, target)
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
	defer limitHeap()()
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

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	sp, err := newSpool(dir)
	if err != nil {
		return err
	}
	defer sp.close()
	// Every pass reads the sources again, document by document: none is
	// held beyond its tokenization. Only the pass that tokenizes records
	// the counts and rejections.
	read := func(record bool) func(emit func(rawDoc)) error {
		return func(emit func(rawDoc)) error {
			for _, s := range cfg.Sources {
				src, _ := ParseSource(s)
				n := 0
				var rej []Rejected
				err := streamSource(src, cache, func(d rawDoc) { n++; emit(d) }, func(r Rejected) { rej = append(rej, r) })
				if err != nil {
					return badinput.Wrap(err)
				}
				if record {
					rep.Sources[src.Name()] = &SourceCount{Documents: n + len(rej)}
					for _, r := range rej {
						reject(r, reasonKey(r.Reason))
					}
					slog.Info("data: source read", "source", src.Name(), "documents", n, "rejected", len(rej))
					if len(rej) > 0 {
						// A malformed line is a fault of the file the user
						// may want to mend: name the first where it is.
						r := rej[0]
						slog.Warn("data: documents rejected; the built dataset's report.json lists them all", "source", src.Name(), "count", len(rej),
							"first", rejectedWhere(r), "reason", r.Reason)
					}
				}
			}
			return nil
		}
	}
	noDocs := func() error {
		// No report.json is written: the line says why, by reason, with
		// where each reason first occurs.
		return badinput.Errorf("data.sources %v: no usable documents (%d rejected%s)", cfg.Sources, len(rep.Rejected), rejectionSummary(rep.Rejected))
	}

	tok, hit, nDocs, err := buildTokenizer(cfg, cache, read(false))
	if errors.Is(err, errNoDocuments) {
		if err := read(true)(func(rawDoc) {}); err != nil {
			return err
		}
		return noDocs()
	}
	if err != nil {
		return err
	}
	rep.TokenizerHit = hit
	rep.VocabSize, rep.EOS = tok.VocabSize(), tok.EOS()
	if cfg.Layout == LayoutPacked && tok.EOS() < 0 {
		return badinput.Errorf("data.layout = \"packed\" needs an EOS token, and tokenizer %s has none: use layout \"padded\"", cfg.Tokenizer)
	}

	times := &buildTimes{}
	t0 := time.Now()
	tab, rejs, nDocs, err := tokenizeStream(ctx, tok, sp, read(true), nDocs, cfg.ChunkTokens, cfg.MinTokens, times)
	if err != nil {
		return err
	}
	times.tokenize = time.Since(t0)
	t0 = time.Now()
	if nDocs == 0 {
		return noDocs()
	}
	for _, r := range rejs {
		reject(r, "tokenizer does not round-trip")
	}
	// kept: the rows that go on to the split, in input order; a document's
	// id is its position here.
	var kept []int32
	for i := int32(0); int(i) < tab.len(); i++ {
		if tab.failed(i) {
			continue
		}
		src := tab.source(i)
		rep.Sources[src].Chunks++
		if n := int(tab.nTokens[i]); n < cfg.MinTokens || n == 0 {
			reject(Rejected{Source: src, Title: tab.title(i), Reason: fmt.Sprintf("too short: %d tokens < data.min_tokens = %d", n, cfg.MinTokens)}, "too short")
			continue
		}
		kept = append(kept, i)
	}
	if cfg.DedupWords > 0 {
		var sample int
		kept, sample = dedupWords(kept, cfg.DedupWords, dedupSlots, tab.text, tab.textSize, func(c, with int32) {
			reject(Rejected{Source: tab.source(c), Title: tab.title(c), Reason: fmt.Sprintf("shares a %d-word passage with %s %q", cfg.DedupWords, tab.source(with), tab.title(with))}, "duplicate passage")
		})
		if sample > 0 {
			rep.DedupSample = 1 << sample
			slog.Warn("data: data.dedup_words: the kept documents' passages outgrew the passage set; the later documents were checked on a sample",
				"one_in", rep.DedupSample, "set_mib", dedupSlots*8>>20)
		}
	}
	if cfg.DedupTokens > 0 {
		if kept, err = dedupKept(dir, tab, kept, tok, cfg, rep, reject); err != nil {
			return err
		}
	}
	for _, i := range kept {
		sc := rep.Sources[tab.source(i)]
		sc.Kept++
		sc.Tokens += int(tab.nTokens[i])
	}
	reps, err := assignSplits(cfg, tab, kept, rep, reject)
	if err != nil {
		return badinput.Wrap(err)
	}
	if err := sp.err(); err != nil {
		return err
	}
	// out: the positions in kept (ids) of the documents with a split.
	var out []int32
	for p, i := range kept {
		if split := tab.split(i); split != "" {
			out = append(out, int32(p))
			n := int(tab.nTokens[i])
			rep.Splits[split]++
			rep.SplitTokens[split] += n
			rep.TrainTokens += reps.of(tab, i) * n
			if split == SplitBackground {
				rep.TrainTokens += cfg.PretrainPasses * n
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
	times.split = time.Since(t0)
	if err := writeDataset(dir, tab, kept, out, reps, tok, rep, start, times); err != nil {
		return err
	}
	times.log(time.Since(start))
	slog.Info("data: built", "dir", dir, "target", rep.Splits[SplitTarget], "control", rep.Splits[SplitControl],
		"background", rep.Splits[SplitBackground], "validation", rep.Splits[SplitValidation], "rejected", len(rep.Rejected),
		"train_tokens", rep.TrainTokens, "seconds", rep.Seconds)
	return nil
}

// buildHeapLimit is the soft limit on the Go heap a build sets unless
// GOMEMLIMIT does: what the build keeps is bounded by its buffers (a few
// hundred MB: the members' window index, per-document metadata), and the
// limit keeps the garbage collector from letting the heap grow to twice
// that, so that with the binary's own ~200 MB (libtorch's libraries) a
// build stays under 1 GB. A build whose live heap passes the limit only
// collects more often (the runtime caps that at half the CPU).
const buildHeapLimit = 640 << 20

// limitHeap sets buildHeapLimit and returns what restores the limit.
func limitHeap() func() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	old := debug.SetMemoryLimit(buildHeapLimit)
	return func() { debug.SetMemoryLimit(old) }
}

// rejectionSummary is ": N KEY (first at WHERE: REASON), ..." for each
// reason key of rejected, most frequent first, or "" for none.
func rejectionSummary(rejected []Rejected) string {
	type group struct {
		key   string
		n     int
		first Rejected
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, r := range rejected {
		k := reasonKey(r.Reason)
		g := byKey[k]
		if g == nil {
			g = &group{key: k, first: r}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.n++
	}
	slices.SortStableFunc(groups, func(a, b *group) int { return b.n - a.n })
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = fmt.Sprintf("%d %s (first at %s: %s)", g.n, g.key, rejectedWhere(g.first), g.first.Reason)
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, "; ")
}

// rejectedWhere is FILE:LINE of a rejected document, or its title.
func rejectedWhere(r Rejected) string {
	if r.File != "" && r.Line > 0 {
		return fmt.Sprintf("%s:%d", r.File, r.Line)
	}
	return r.Title
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

// writeDataset writes the documents out (positions in kept, which are
// their ids) and the report.
func writeDataset(dir string, tab *docTable, kept, out []int32, reps splitReps, tok *Tokenizer, rep *Report, start time.Time, times *buildTimes) error {
	// An old report.json would mark a half-rewritten directory as complete,
	// and an old cache.json would name a cache entry these files are not.
	for _, name := range []string{"report.json", CacheLinkFile} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rebuild %s: %w", dir, err)
		}
	}
	t0 := time.Now()
	err := writeArrow(filepath.Join(dir, "docs.arrow"), runfiles.DocsSchema, len(out), func(b *array.RecordBuilder, k int) {
		i := kept[out[k]]
		title, text := tab.titleText(i)
		b.Field(0).(*array.Int64Builder).Append(int64(out[k]))
		b.Field(1).(*array.StringBuilder).Append(tab.source(i))
		b.Field(2).(*array.StringBuilder).Append(title)
		b.Field(3).(*array.StringBuilder).Append(text)
		b.Field(4).(*array.Int32Builder).Append(int32(tab.nTokens[i]))
		b.Field(5).(*array.StringBuilder).Append(tab.split(i))
		b.Field(6).(*array.Int32Builder).Append(int32(reps.of(tab, i)))
	})
	if err != nil {
		return err
	}
	times.docs = time.Since(t0)
	t0 = time.Now()
	err = writeTokens(filepath.Join(dir, "tokens.arrow"), len(out), func(k int) (int64, []int32) {
		return int64(out[k]), tab.tokens(kept[out[k]])
	})
	if err != nil {
		return err
	}
	times.tokens = time.Since(t0)
	t0 = time.Now()
	defer func() { times.sums = time.Since(t0) }()
	if err := tab.sp.err(); err != nil {
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

// writeTokens writes tokens.arrow's n rows: row k's doc id and ids.
func writeTokens(path string, n int, row func(k int) (int64, []int32)) error {
	return writeArrow(path, runfiles.TokensSchema, n, func(b *array.RecordBuilder, k int) {
		id, ids := row(k)
		b.Field(0).(*array.Int64Builder).Append(id)
		lb := b.Field(1).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Int32Builder).AppendValues(ids, nil)
	})
}

func tokenizeOne(encode func(string) ([]int32, error), tok *Tokenizer, d rawDoc, chunkTokens, minTokens int, times *buildTimes) (res tokenized) {
	pieces := []string{d.Text}
	t0 := time.Now()
	if chunkTokens > 0 {
		var encErr error
		c := &counter{whole: func(s string) int {
			if encErr != nil {
				return 0 // the document fails: count no more (each try can time out)
			}
			ids, err := encode(s)
			if err != nil && encErr == nil {
				encErr = err
			}
			return len(ids)
		}}
		c.piece = tok.pieceCounter(d.Text)
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
		since(&times.encode, t0)
		t0 = time.Now()
		ok := roundTrips(tok, ids, p)
		since(&times.check, t0)
		t0 = time.Now()
		if !ok {
			res.rej = append(res.rej, Rejected{Source: d.Source, Title: title, Reason: "tokenizer does not round-trip the text"})
		}
		res.cands = append(res.cands, &candidate{source: d.Source, title: title, text: p, ids: ids, failed: !ok})
	}
	return res
}

// roundTrips reports whether tok.Decode(ids) == text, without building the
// decoded copy of every document for a byte-level tokenizer.
func roundTrips(tok *Tokenizer, ids []int32, text string) bool {
	return tok.lib.DecodesTo(ids, text)
}

// isSymlink reports whether path is a symbolic link.
func isSymlink(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&fs.ModeSymlink != 0
}
