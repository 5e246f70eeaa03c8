package data

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/badinput"
)

// testConfig is a small, fast build on the Opticks file.
func testConfig(t testing.TB) Config {
	cfg := DefaultConfig()
	cfg.Targets, cfg.Controls, cfg.Validation = 20, 20, 10
	cfg.Tokenizer = "bpe:1024"
	cfg.CacheDir = t.TempDir()
	return cfg
}

func buildTest(t testing.TB, cfg Config) *Dataset {
	t.Helper()
	dir := t.TempDir()
	if err := Build(context.Background(), cfg, dir); err != nil {
		t.Fatalf("Build: %v", err)
	}
	ds, err := Open(dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return ds
}

func TestBuildOpticks(t *testing.T) {
	cfg := testConfig(t)
	ds := buildTest(t, cfg)
	for _, f := range []string{"docs.arrow", "tokens.arrow", "tokenizer.json", "report.json"} {
		if _, err := os.Stat(filepath.Join(ds.Dir(), f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	rep := ds.Report()
	want := map[string]int{SplitTarget: 20, SplitControl: 20, SplitValidation: 10}
	for s, n := range want {
		if rep.Splits[s] != n {
			t.Errorf("split %s: %d docs, want %d", s, rep.Splits[s], n)
		}
	}
	if rep.Splits[SplitBackground] == 0 {
		t.Errorf("no background documents: %+v", rep.Splits)
	}
	tok, err := ds.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 1024 {
		t.Errorf("vocab %d, want 1024", tok.VocabSize())
	}
	targets, err := ds.Docs(SplitTarget)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range targets {
		if len(d.IDs) < cfg.MinTokens || len(d.IDs) > cfg.ChunkTokens {
			t.Errorf("doc %d %q: %d tokens, want %d..%d", d.ID, d.Title, len(d.IDs), cfg.MinTokens, cfg.ChunkTokens)
		}
		if d.Repetitions != cfg.Repetitions {
			t.Errorf("doc %d: repetitions %d, want %d", d.ID, d.Repetitions, cfg.Repetitions)
		}
		if got := tok.Decode(d.IDs); got != d.Text {
			t.Errorf("doc %d does not round-trip", d.ID)
		}
	}
	t.Logf("report: splits %v, rejected %v, train tokens %d, %.1fs", rep.Splits, rep.RejectedBy, rep.TrainTokens, rep.Seconds)
}

func docIDs(t testing.TB, ds *Dataset, split string) map[int64]Doc {
	t.Helper()
	docs, err := ds.Docs(split)
	if err != nil {
		t.Fatal(err)
	}
	m := map[int64]Doc{}
	for _, d := range docs {
		m[d.ID] = d
	}
	return m
}

// TestSplitsDeterministicAndDisjoint: the same seed gives the same splits,
// another seed different ones; splits never share a document; no control
// shares a 50-token window with a target (checked by brute force).
func TestSplitsDeterministicAndDisjoint(t *testing.T) {
	cfg := testConfig(t)
	a, b := buildTest(t, cfg), buildTest(t, cfg)
	cfg2 := cfg
	cfg2.Seed++
	c := buildTest(t, cfg2)
	splits := []string{SplitTarget, SplitControl, SplitValidation, SplitBackground}
	owner := map[string]string{}
	for _, s := range splits {
		da, db := docIDs(t, a, s), docIDs(t, b, s)
		if len(da) != len(db) {
			t.Fatalf("%s: %d vs %d docs with the same seed", s, len(da), len(db))
		}
		for id, d := range da {
			if db[id].Text != d.Text {
				t.Fatalf("%s: doc %d differs between builds with the same seed", s, id)
			}
			if prev, ok := owner[d.Text]; ok {
				t.Fatalf("doc %d %q is in %s and %s", id, d.Title, prev, s)
			}
			owner[d.Text] = s
		}
	}
	ta, tc := docIDs(t, a, SplitTarget), docIDs(t, c, SplitTarget)
	same := 0
	for id := range ta {
		if _, ok := tc[id]; ok {
			same++
		}
	}
	if same == len(ta) {
		t.Error("another seed chose the same targets")
	}
	for _, ctl := range docIDs(t, a, SplitControl) {
		for _, tgt := range ta {
			if shareWindow(ctl.IDs, tgt.IDs, OverlapTokens) {
				t.Errorf("control %q shares a %d-token window with target %q", ctl.Title, OverlapTokens, tgt.Title)
			}
		}
	}
}

func shareWindow(a, b []int32, n int) bool {
	for i := 0; i+n <= len(a); i++ {
		if containsRun(b, a[i:i+n]) {
			return true
		}
	}
	return false
}

// TestControlOverlapRejected: with deduplication off, documents that repeat
// a target's text must not become controls; they are rejected by name.
func TestControlOverlapRejected(t *testing.T) {
	dir := t.TempDir()
	opticks := opticksText(t)
	paras := strings.Split(opticks, "\n\n")
	n := 0
	for i := 0; n < 30 && i < len(paras); i++ {
		if len(paras[i]) < 700 {
			continue
		}
		// every passage twice: whichever copy becomes a target, the other
		// would make a contaminated control
		writeFile(t, filepath.Join(dir, fmt.Sprintf("p%02d-a.txt", n)), paras[i])
		writeFile(t, filepath.Join(dir, fmt.Sprintf("p%02d-b.txt", n)), paras[i])
		n++
	}
	cfg := testConfig(t)
	cfg.Sources = []string{"txt:" + dir}
	cfg.ChunkTokens, cfg.MinTokens, cfg.DedupWords = 0, 50, 0
	cfg.Tokenizer = "bpe:512"
	cfg.Targets, cfg.Controls, cfg.Validation = 10, 5, 0
	ds := buildTest(t, cfg)
	rep := ds.Report()
	if rep.RejectedBy["control overlaps a target"] == 0 {
		t.Fatalf("no control rejected for overlap: %+v", rep.RejectedBy)
	}
	targets := docIDs(t, ds, SplitTarget)
	for _, ctl := range docIDs(t, ds, SplitControl) {
		for _, tgt := range targets {
			if shareWindow(ctl.IDs, tgt.IDs, OverlapTokens) {
				t.Errorf("control %q overlaps target %q", ctl.Title, tgt.Title)
			}
		}
	}
	// with deduplication on, the second copies go before any split
	cfg.DedupWords = 20
	rep = buildTest(t, cfg).Report()
	if rep.RejectedBy["duplicate passage"] != n || rep.RejectedBy["control overlaps a target"] != 0 {
		t.Errorf("dedup: rejected %v, want %d duplicate passages", rep.RejectedBy, n)
	}
}

func TestTrainRows(t *testing.T) {
	cfg := testConfig(t)
	cfg.RepetitionGroups = []int{1, 2, 4, 8}
	ds := buildTest(t, cfg)
	const block = 64
	rows, err := ds.TrainRows(block, 5)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := ds.TrainRows(block, 5)
	other, _ := ds.TrainRows(block, 6)
	if !reflect.DeepEqual(rows, again) {
		t.Error("TrainRows is not deterministic")
	}
	if reflect.DeepEqual(rows, other) {
		t.Error("another seed gave the same order")
	}
	// every target appears as often as its repetition count: count its
	// first row (block+1 leading tokens) in the stream
	first := map[string]int{}
	for _, r := range rows {
		if len(r) != block+1 {
			t.Fatalf("row of %d ids, want %d", len(r), block+1)
		}
		first[fmt.Sprint(r)]++
	}
	groups := map[int]int{}
	for _, d := range docIDs(t, ds, SplitTarget) {
		key := fmt.Sprint(padded(d.IDs[:min(block+1, len(d.IDs))], block+1))
		if first[key] != d.Repetitions {
			t.Errorf("target %q appears %d times, want %d", d.Title, first[key], d.Repetitions)
		}
		groups[d.Repetitions]++
	}
	if !reflect.DeepEqual(groups, map[int]int{1: 5, 2: 5, 4: 5, 8: 5}) {
		t.Errorf("repetition groups %v", groups)
	}
	// tokens in = tokens out: each document's tokens are targets exactly
	// once per occurrence in the padded layout
	want := 0
	for _, s := range []string{SplitTarget, SplitBackground} {
		for _, d := range docIDs(t, ds, s) {
			want += d.Repetitions * (len(d.IDs) - 1)
		}
	}
	got := 0
	for _, r := range rows {
		for _, id := range r[1:] {
			if id != PadID {
				got++
			}
		}
	}
	if got != want {
		t.Errorf("padded stream has %d non-pad targets, want %d", got, want)
	}
	val, err := ds.ValRows(block)
	if err != nil || len(val) < cfg.Validation {
		t.Fatalf("ValRows: %d rows, %v", len(val), err)
	}
}

// With pretraining passes the stream opens with background only, each
// background document that many times, and the mixed part that follows is
// the stream without them.
func TestPretrainPasses(t *testing.T) {
	cfg := testConfig(t)
	cfg.RepetitionGroups = []int{1, 4}
	mixed := buildTest(t, cfg)
	cfg.PretrainPasses = 2
	ds := buildTest(t, cfg)
	const block = 64
	base, err := mixed.TrainRows(block, 5)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := ds.TrainRows(block, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) <= len(base) {
		t.Fatalf("%d rows with pretraining, %d without", len(rows), len(base))
	}
	head := rows[:len(rows)-len(base)]
	if !reflect.DeepEqual(rows[len(head):], base) {
		t.Error("the mixed part changed when pretraining passes were added")
	}
	background := map[string]bool{}
	var bgRows int
	for _, d := range docIDs(t, ds, SplitBackground) {
		for _, r := range padRows([][]int32{d.IDs}, block) {
			background[fmt.Sprint(r)] = true
			bgRows++
		}
	}
	if len(head) != 2*bgRows {
		t.Errorf("pretraining head has %d rows, want 2 passes of %d", len(head), bgRows)
	}
	for i, r := range head {
		if !background[fmt.Sprint(r)] {
			t.Fatalf("pretraining row %d is not a background row", i)
		}
	}
	cfg.Background = 0
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "data.pretrain_passes") {
		t.Errorf("pretraining without background: error %v, want one naming data.pretrain_passes", err)
	}
}

func TestPackedRows(t *testing.T) {
	cfg := testConfig(t)
	cfg.Layout = LayoutPacked
	ds := buildTest(t, cfg)
	rows, err := ds.TrainRows(100, 1)
	if err != nil {
		t.Fatal(err)
	}
	eos := ds.Report().EOS
	var stream []int32
	for i, r := range rows {
		start := 1
		if i == 0 {
			start = 0
		}
		for _, id := range r[start:] {
			if id != PadID {
				stream = append(stream, id)
			}
		}
	}
	docs, units := 0, 0
	for _, s := range []string{SplitTarget, SplitBackground} {
		for _, d := range docIDs(t, ds, s) {
			docs += d.Repetitions * (len(d.IDs) + 1)
			units += d.Repetitions
		}
	}
	nEOS := 0
	for _, id := range stream {
		if id == eos {
			nEOS++
		}
	}
	if len(stream) != docs || nEOS != units {
		t.Errorf("packed stream: %d ids with %d EOS, want %d ids and %d EOS", len(stream), nEOS, docs, units)
	}
}

func TestPadRowsLongDocument(t *testing.T) {
	ids := make([]int32, 10)
	for i := range ids {
		ids[i] = int32(i)
	}
	got := padRows([][]int32{ids}, 4)
	want := [][]int32{{0, 1, 2, 3, 4}, {4, 5, 6, 7, 8}, {8, 9, -1, -1, -1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("padRows = %v, want %v", got, want)
	}
	if got := padRows([][]int32{ids[:5]}, 4); !reflect.DeepEqual(got, [][]int32{{0, 1, 2, 3, 4}}) {
		t.Errorf("exact fit: %v", got)
	}
}

// TestScanTokensBoundedMemory streams a 40 MB tokens table and checks that
// the heap grows by far less than the file.
func TestScanTokensBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 40 MB file")
	}
	dir := t.TempDir()
	const docs, n = 10000, 1000
	shared := make([]int32, n)
	for i := range shared {
		shared[i] = int32(i)
	}
	if err := writeTokens(filepath.Join(dir, "data", "tokens.arrow"), docs, func(k int) (int64, []int32) { return int64(k), shared }); err != nil {
		t.Fatal(err)
	}
	ds := &Dataset{dir: filepath.Join(dir, "data")}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	total := 0
	err := ds.ScanTokens(func(id int64, ids []int32) error {
		if len(ids) != n || ids[n-1] != n-1 {
			return fmt.Errorf("doc %d: %d ids", id, len(ids))
		}
		total++
		if total%500 == 0 {
			// Live memory, not garbage awaiting collection: without the
			// collection HeapAlloc depends on when the GC last ran (it
			// read 16.8 MB once in CI for a reader holding one batch).
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total != docs {
		t.Fatalf("scanned %d docs, want %d", total, docs)
	}
	grew := float64(peak-base) / (1 << 20)
	t.Logf("file 40 MB, heap grew %.1f MB", grew)
	if grew > 16 {
		t.Errorf("heap grew %.1f MB while streaming a 40 MB file", grew)
	}
}

// TestCorruptArrow: a damaged file gives an error naming it.
func TestCorruptArrow(t *testing.T) {
	cfg := testConfig(t)
	ds := buildTest(t, cfg)
	runDir := filepath.Dir(ds.Dir())
	for _, name := range []string{"tokens.arrow", "docs.arrow"} {
		path := filepath.Join(ds.Dir(), name)
		orig, _ := os.ReadFile(path)
		writeFile(t, path, string(orig[:len(orig)/2]))
		_, err := Open(runDir)
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("truncated %s: error %v, want one naming the file", name, err)
		}
		writeFile(t, path, "garbage")
		if _, err := Open(runDir); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("garbage %s: error %v", name, err)
		}
		writeFile(t, path, string(orig))
	}
	if _, err := Open(t.TempDir()); err == nil || !strings.Contains(err.Error(), "memo data build") {
		t.Errorf("missing dataset: %v", err)
	}
}

func TestTooFewDocuments(t *testing.T) {
	cfg := testConfig(t)
	cfg.Targets = 100000
	err := Build(context.Background(), cfg, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "data.targets") {
		t.Errorf("error %v, want one naming data.targets", err)
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		edit func(*Config)
		key  string // "" = valid
	}{
		{func(c *Config) {}, ""},
		{func(c *Config) { c.Sources = nil }, "data.sources"},
		{func(c *Config) { c.Sources = []string{"wikipedia"} }, "data.sources"},
		{func(c *Config) { c.Sources = []string{"opticks", "opticks"} }, `data.sources lists "opticks" twice`},
		{func(c *Config) { c.Sources = []string{"jsonl:a.jsonl", "jsonl:./a.jsonl#text"} }, `data.sources lists "jsonl:a.jsonl" and "jsonl:./a.jsonl#text", the same source`},
		{func(c *Config) { c.Tokenizer = "bpe:10" }, "data.tokenizer"},
		{func(c *Config) { c.Tokenizer = "gpt3" }, "data.tokenizer"},
		{func(c *Config) { c.Targets = -1 }, "data.targets"},
		{func(c *Config) { c.Repetitions = 0 }, "data.repetitions"},
		{func(c *Config) { c.RepetitionGroups = []int{1, 2, 4} }, "data.targets"},
		{func(c *Config) { c.RepetitionGroups = []int{1, 0} }, "data.repetition_groups[1]"},
		{func(c *Config) { c.Background = -2 }, "data.background"},
		{func(c *Config) { c.ChunkTokens = 4 }, "data.chunk_tokens"},
		{func(c *Config) { c.MinTokens = 500 }, "data.min_tokens"},
		{func(c *Config) { c.Layout = "stacked" }, "data.layout"},
		{func(c *Config) { c.TargetSources = []string{"kjv"} }, "data.target_sources"},
	}
	for _, c := range cases {
		cfg := DefaultConfig()
		c.edit(&cfg)
		err := cfg.Validate()
		if c.key == "" {
			if err != nil {
				t.Errorf("default config: %v", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("want an error naming %s, got %v", c.key, err)
		}
	}
}

func TestChunkTextKeepsBytes(t *testing.T) {
	text := opticksText(t)[:60000]
	m, err := trainBPE(countPieces([]string{text}), 600)
	if err != nil {
		t.Fatal(err)
	}
	count := func(s string) int { ids, _ := m.Encode(s); return len(ids) }
	piece := m.pieceCounter(text)
	if piece == nil {
		t.Fatal("no piece-by-piece counter for a byte-level BPE on text without added tokens")
	}
	chunks := chunkText(text, 64, 48, &counter{piece: piece, whole: count})
	if slow := chunkText(text, 64, 48, &counter{whole: count}); !reflect.DeepEqual(chunks, slow) {
		t.Error("incremental counting chunks differently from counting whole texts")
	}
	if strings.Join(chunks, "") != text {
		t.Fatal("chunks do not concatenate to the text")
	}
	short := 0
	for _, c := range chunks {
		if n := count(c); n > 64 {
			t.Errorf("chunk of %d tokens > 64", n)
		} else if n < 48 {
			short++
		}
	}
	if short > 1 {
		t.Errorf("%d chunks under min; only the last may be", short)
	}
}

// TestTargetSources: targets and controls come only from target_sources;
// the other sources fill background and validation.
func TestTargetSources(t *testing.T) {
	needFetched(t, "moby-dick")
	cfg := testConfig(t)
	cfg.Sources = []string{"opticks", "moby-dick"}
	cfg.TargetSources = []string{"moby-dick"}
	cfg.CacheDir = fetchedCache()
	ds := buildTest(t, cfg)
	for _, s := range []string{SplitTarget, SplitControl} {
		for _, d := range docIDs(t, ds, s) {
			if d.Source != "moby-dick" {
				t.Errorf("%s %q comes from %s", s, d.Title, d.Source)
			}
		}
	}
	bg := map[string]int{}
	for _, d := range docIDs(t, ds, SplitBackground) {
		bg[d.Source]++
	}
	if bg["opticks"] == 0 || bg["moby-dick"] == 0 {
		t.Errorf("background by source %v, want both", bg)
	}
	// A fixed background and the validation come from the other sources
	// first (they took the target source's leftovers, and a "Moby-Dick"
	// pretraining set was the targets' own book).
	cfg.Background = 30
	cfg.CacheDatasets = false // built here, not a cached entry of another memo
	fixed := buildTest(t, cfg)
	for _, s := range []string{SplitValidation, SplitBackground} {
		by := map[string]int{}
		for _, d := range docIDs(t, fixed, s) {
			by[d.Source]++
		}
		if by["moby-dick"] != 0 || by["opticks"] == 0 {
			t.Errorf("%s by source %v, want opticks alone", s, by)
		}
	}
}

// TestKJVDeduplicated: the Bible's repeated passages (genealogies, parallel
// accounts) are rejected before splitting, so no two documents left share a
// dedup_words-word passage.
func TestKJVDeduplicated(t *testing.T) {
	needFetched(t, "kjv")
	cfg := testConfig(t)
	cfg.Sources = []string{"kjv"}
	cfg.CacheDir = fetchedCache()
	ds := buildTest(t, cfg)
	rep := ds.Report()
	if rep.RejectedBy["duplicate passage"] < 100 {
		t.Errorf("only %d KJV chunks rejected as duplicates", rep.RejectedBy["duplicate passage"])
	}
	docs, err := ds.Docs("")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]string{}
	for _, d := range docs {
		for _, h := range wordWindows(d.Text, cfg.DedupWords) {
			if other, ok := seen[h]; ok && other != d.Title {
				t.Fatalf("%q and %q share a %d-word passage", d.Title, other, cfg.DedupWords)
			}
			seen[h] = d.Title
		}
	}
	t.Logf("KJV: %d documents kept, %d duplicate chunks rejected", len(docs), rep.RejectedBy["duplicate passage"])
}

// TestRoundTrips: the in-place comparison answers as Decode(ids) == text
// does, for ids that decode to the text, to more or less of it, to other
// bytes, and with ids Decode skips.
func TestRoundTrips(t *testing.T) {
	tok, err := trainBPE(countPieces([]string{"the cat sat on the mat, the end"}), 260)
	if err != nil {
		t.Fatal(err)
	}
	text := "the cat sat on the mat"
	ids, _ := tok.Encode(text)
	other, _ := tok.Encode("the cat sat on the hat")
	cases := map[string]struct {
		ids  []int32
		text string
	}{
		"exact":          {ids, text},
		"ids short":      {ids[:len(ids)-1], text},
		"text short":     {ids, text[:len(text)-1]},
		"other bytes":    {other, text},
		"skipped ids":    {append(append([]int32{-1}, ids...), int32(tok.VocabSize()), PadID), text},
		"empty":          {nil, ""},
		"empty ids":      {nil, text},
		"text longer":    {ids, text + " "},
		"ids, no text":   {ids, ""},
		"prefix matches": {append(append([]int32(nil), ids...), ids...), text},
	}
	for name, c := range cases {
		if got, want := roundTrips(tok, c.ids, c.text), tok.Decode(c.ids) == c.text; got != want {
			t.Errorf("%s: roundTrips %v, Decode(ids) == text %v", name, got, want)
		}
	}
}

// TestTokenizeOneStopsAtAnEncodeError: a document whose text the
// tokenizer cannot encode (a regex timing out, 5-10 s a try) fails after
// one encode, not once per piece chunking counts: 50 paragraphs cost 50
// timeouts, about 8 minutes, before the error showed.
func TestTokenizeOneStopsAtAnEncodeError(t *testing.T) {
	tok, err := LoadTokenizer(filepath.Join("..", "testdata", "tokenizers", "opticks-bpe2048.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The added token makes chunking count whole texts (no piece counter).
	text := strings.Repeat("A paragraph of a few words. Another sentence here.\n\n", 50) + EOSToken
	calls := 0
	encode := func(string) ([]int32, error) {
		calls++
		return nil, errors.New("a match timed out")
	}
	res := tokenizeOne(encode, tok, rawDoc{Source: "s", Title: "t", Text: text}, 16, 4, &buildTimes{})
	if res.err == nil || !strings.Contains(res.err.Error(), `tokenize s "t": a match timed out`) {
		t.Errorf("err = %v, want the encode error naming the document", res.err)
	}
	if calls != 1 {
		t.Errorf("%d encodes, want 1", calls)
	}
}

// TestBuildRefusesSymlinkedData: a run's data/ that is a symbolic link is
// refused before anything is written through it, with the cache on or
// off; a build had replaced the files of the cache entry it named.
func TestBuildRefusesSymlinkedData(t *testing.T) {
	for _, cached := range []bool{true, false} {
		cfg := testConfig(t)
		cfg.CacheDatasets = cached
		run, elsewhere := t.TempDir(), t.TempDir()
		precious := filepath.Join(elsewhere, "report.json")
		if err := os.WriteFile(precious, []byte("not memo's"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(elsewhere, filepath.Join(run, "data")); err != nil {
			t.Fatal(err)
		}
		err := Build(context.Background(), cfg, run)
		if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("cache %v: %v; want bad input naming the link", cached, err)
		}
		if b, err := os.ReadFile(precious); err != nil || string(b) != "not memo's" {
			t.Errorf("cache %v: the link's target was written: %q, %v", cached, b, err)
		}
		if entries, _ := os.ReadDir(elsewhere); len(entries) != 1 {
			t.Errorf("cache %v: %d files where the link points, want the one there", cached, len(entries))
		}
	}
}
