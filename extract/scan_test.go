package extract

import (
	"context"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/train"
	"github.com/sugarme/gotch/ts"
)

// TestScanMatchesGreedyGeneration trains a nano model on some passages
// until it reproduces them (the unseen ones match in part or not at
// all), then checks that the teacher-forced scan's matched
// length is, for every document and prompt mode, the length of the
// common prefix of greedy generation and the true suffix, so its exact
// match is generation's. The test fails unless the documents include
// exact, partial and no matches.
func TestScanMatchesGreedyGeneration(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	docs := opticksDocs(t, 8, 96)
	g := newModel(t, model.Config{Preset: "nano", Vocab: 256, Context: 128, Seed: 11})
	// Four passages memorized, four never seen.
	if l := memorize(t, g, [][]int32{docs[0].IDs, docs[1].IDs, docs[2].IDs, docs[3].IDs}, 600, 0.01); l > 0.05 {
		t.Fatalf("model did not memorize: loss %.4f", l)
	}
	t.Logf("trained in %v", time.Since(start).Round(time.Millisecond))
	var exact, partial, none int
	for _, mode := range []string{ModeReference, ModeFixed, ModePythia} {
		cfg := DefaultConfig()
		cfg.Mode, cfg.Prefix, cfg.Suffix, cfg.BatchSize = mode, 20, 40, 3
		prompts := BuildPrompts(cfg, docs, g.Config().Context)
		gen, err := generateAll(context.Background(), g, cfg, prompts, true)
		if err != nil {
			t.Fatal(err)
		}
		matched, err := scanAll(context.Background(), g, cfg, prompts)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range prompts {
			if p.Status != StatusOK {
				t.Fatalf("%s: %s not attacked: %s", mode, p.Doc.Title, p.Reason)
			}
			want := commonPrefix(gen[i], p.Suffix)
			if matched[i].Len != want {
				t.Errorf("%s: %s: scan matched %d tokens, greedy generation %d of %d (%q vs %q)",
					mode, p.Doc.Title, matched[i].Len, want, len(p.Suffix), bytesOf(gen[i]), bytesOf(p.Suffix))
			}
			switch want {
			case len(p.Suffix):
				exact++
			case 0:
				none++
			default:
				partial++
			}
		}
	}
	t.Logf("exact %d, partial %d, none %d; %v", exact, partial, none, time.Since(start).Round(time.Millisecond))
	if exact == 0 || partial == 0 || none == 0 {
		t.Errorf("exact %d, partial %d, none %d: the test needs each kind", exact, partial, none)
	}
}

// TestScanOnATrainedRun attacks a trained run's documents with Run and
// scans them with Scan under the same settings: every document's scan
// row must say what its completion says (exact match, matched length).
func TestScanOnATrainedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a dataset and trains a model")
	}
	ctx := context.Background()
	dir, ds, _ := trainTiny(t, func(d *data.Config) {
		d.Targets, d.Controls, d.Validation, d.Background = 6, 6, 2, 4
		d.Repetitions, d.ChunkTokens, d.MinTokens = 16, 64, 40
	}, func(c *train.Config) {
		c.Steps, c.Block, c.BatchSize, c.WarmupSteps, c.LR = 400, 64, 8, 5, 3e-3
	})
	cfg := DefaultConfig()
	cfg.Suffix, cfg.BatchSize = 16, 4
	tmp := t.TempDir()
	comp := filepath.Join(tmp, "attack.completions.arrow")
	if err := Run(ctx, cfg, dir, ds, comp, nil); err != nil {
		t.Fatal(err)
	}
	scan := filepath.Join(tmp, "attack"+runfiles.ScanSuffix)
	if err := Scan(ctx, cfg, dir, ds, scan); err != nil {
		t.Fatal(err)
	}
	comps, err := eval.ReadCompletions(comp)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := runfiles.Scans.ReadParquet(scan)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(comps) {
		t.Fatalf("%d scan rows for %d completions", len(rows), len(comps))
	}
	exact := 0
	for i, c := range comps {
		r := rows[i]
		want := commonPrefix(c.Generated, c.Suffix)
		if r.DocID != c.DocID || r.Split != c.Split || r.Status != c.Status || r.SuffixLen != len(c.Suffix) || r.PrefixLen != len(c.Prefix) {
			t.Errorf("row %d: scan %+v, completion doc %d %s %s prefix %d suffix %d", i, r, c.DocID, c.Split, c.Status, len(c.Prefix), len(c.Suffix))
		}
		if r.MatchedLen != want || r.ExactMatch != (want == len(c.Suffix)) {
			t.Errorf("doc %d: scan matched %d (exact %v), generation %d of %d", c.DocID, r.MatchedLen, r.ExactMatch, want, len(c.Suffix))
		}
		if r.ExactMatch {
			exact++
		}
		// Written and read back: a lead in logits where scanned, NaN where not.
		if ok := r.Status == StatusOK; ok != (r.Margin >= 0 && !math.IsInf(float64(r.Margin), 0)) || !ok && !math.IsNaN(float64(r.Margin)) {
			t.Errorf("doc %d (%s): margin %v", c.DocID, r.Status, r.Margin)
		}
	}
	t.Logf("%d documents, %d exact", len(rows), exact)
	if exact == 0 || exact == len(rows) {
		t.Errorf("%d of %d documents exact: the test needs both kinds (members memorized, controls not)", exact, len(rows))
	}
}

func TestCheckScan(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		ok   bool
	}{
		{"greedy", func(*Config) {}, true},
		{"quantspec", func(c *Config) { c.Speculative = SpecQuantSpec }, true},
		{"sample", func(c *Config) { c.Decoding = DecodeSample }, false},
		{"beam", func(c *Config) { c.Decoding = DecodeBeam }, false},
		{"kv4", func(c *Config) { c.KVBits = 4 }, false},
		{"sift", func(c *Config) { c.Approximation = "sift-q0.9" }, false},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		if err := c.CheckScan(); (err == nil) != tc.ok {
			t.Errorf("%s: CheckScan() = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

func TestScanPath(t *testing.T) {
	for in, want := range map[string]string{
		"runs/a/completions.arrow": "runs/a/scan.parquet",
		"runs/a/checkpoints/step-000100.fixed-p50-s50.greedy.1a2b3c4d.completions.arrow": "runs/a/checkpoints/step-000100.fixed-p50-s50.greedy.1a2b3c4d.scan.parquet",
		"runs/a/other.arrow": "runs/a/other.scan.parquet",
	} {
		if got := ScanPath(in); got != want {
			t.Errorf("ScanPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestScanTiesGoToTheLowestID zeroes every weight, so that every logit is
// exactly 0 and the whole vocabulary ties: greedy decoding then emits id 0
// at every step (engine.Argmax's rule), and the scan must count a suffix's
// leading zeros as matched and stop at its first other token.
func TestScanTiesGoToTheLowestID(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g := newModel(t, model.Config{Preset: "nano", Vocab: 256, Context: 64, Seed: 3})
	ts.NoGrad(func() {
		for _, p := range g.Params() {
			p.Tensor.MustZero_()
		}
	})
	doc := func(id int64, suffix ...int32) data.Doc {
		return data.Doc{ID: id, Split: "target", IDs: append([]int32{7, 8, 9, 10}, suffix...)}
	}
	docs := []data.Doc{doc(0, 0, 0, 5), doc(1, 0, 0, 0), doc(2, 3, 0, 0), doc(3, 1, 0, 0)}
	cfg := DefaultConfig()
	cfg.Mode, cfg.Prefix, cfg.Suffix, cfg.BatchSize = ModeFixed, 4, 3, 4
	prompts := BuildPrompts(cfg, docs, 64)
	gen, err := generateAll(context.Background(), g, cfg, prompts, true)
	if err != nil {
		t.Fatal(err)
	}
	matched, err := scanAll(context.Background(), g, cfg, prompts)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{2, 3, 0, 0}
	for i := range prompts {
		if matched[i].Len != want[i] || commonPrefix(gen[i], prompts[i].Suffix) != want[i] {
			t.Errorf("doc %d: scan matched %d, generation %v matched %d; want %d", i, matched[i].Len, gen[i], commonPrefix(gen[i], prompts[i].Suffix), want[i])
		}
		// Every logit equal: each verdict is a tie, broken by the rule.
		if matched[i].Margin != 0 {
			t.Errorf("doc %d: margin %v, want 0 (a tie)", i, matched[i].Margin)
		}
	}
	if n := TiedVerdicts(scanRows(prompts, matched)); n != len(prompts) {
		t.Errorf("TiedVerdicts = %d, want all %d", n, len(prompts))
	}
}

// TestScanRowsExactMatch: a scan row is an exact match only when the
// whole suffix is reproduced, matched length == suffix length; one token
// short (Len 3 of 4) is a partial match. The trained-model scan test has
// no suffix matched all but its last token, so a verdict that let the
// last token go (Len >= len(Suffix)-1) would pass there.
func TestScanRowsExactMatch(t *testing.T) {
	suffix := []int32{11, 12, 13, 14}
	for _, tc := range []struct {
		len  int
		want bool
	}{
		{0, false},
		{3, false},
		{4, true},
	} {
		prompts := []Prompt{{Doc: data.Doc{ID: 1, Split: "target"}, Prefix: []int32{7, 8}, Suffix: suffix, Status: StatusOK}}
		rows := scanRows(prompts, []engine.Match{{Len: tc.len, Margin: 1}})
		r := rows[0]
		if r.ExactMatch != tc.want || r.MatchedLen != tc.len || r.SuffixLen != 4 || r.PrefixLen != 2 {
			t.Errorf("Match{Len: %d} of a 4-token suffix: exact %v, matched %d, suffix %d, prefix %d; want exact %v, matched %d, suffix 4, prefix 2",
				tc.len, r.ExactMatch, r.MatchedLen, r.SuffixLen, r.PrefixLen, tc.want, tc.len)
		}
	}
}

func TestCompareScan(t *testing.T) {
	ok := func(doc int64, pre, suf, gen []int32) runfiles.Completion {
		return runfiles.Completion{DocID: doc, Status: StatusOK, Prefix: pre, Suffix: suf, Generated: gen}
	}
	row := func(doc int64, pre, suf, m int, margin ...float32) runfiles.ScanRow {
		r := runfiles.ScanRow{DocID: doc, Status: StatusOK, PrefixLen: pre, SuffixLen: suf, MatchedLen: m, ExactMatch: m == suf, Margin: 1}
		if len(margin) > 0 {
			r.Margin = margin[0]
		}
		return r
	}
	comps := []runfiles.Completion{
		ok(1, []int32{9}, []int32{1, 2, 3}, []int32{1, 2, 3}),
		ok(2, []int32{9}, []int32{1, 2, 3}, []int32{1, 5, 3}),
		ok(3, []int32{9}, []int32{1, 2, 3}, []int32{4, 2, 3}),
		{DocID: 4, Status: StatusTooShort},
	}
	agree := []runfiles.ScanRow{row(1, 1, 3, 3), row(2, 1, 3, 1), row(3, 1, 3, 0), {DocID: 4, Status: StatusTooShort}}
	a, err := CompareScan(agree, comps)
	if err != nil || a.Compared != 3 || a.Exact != 1 || len(a.Differ) != 0 {
		t.Errorf("agreeing scan: %+v, %v", a, err)
	}
	// Docs 1 and 3 part, at margins 0.25 and 0.125; doc 2 agrees at 0.2,
	// as near a tie as doc 1.
	differ := []runfiles.ScanRow{row(1, 1, 3, 2, 0.25), row(2, 1, 3, 1, 0.2), row(3, 1, 3, 1, 0.125)}
	if a, err := CompareScan(differ, comps); err != nil || len(a.Differ) != 2 || a.Differ[0] != 1 || a.Differ[1] != 3 ||
		!slices.Equal(a.DifferMargins, []float32{0.25, 0.125}) || a.AsNear != 3 {
		t.Errorf("differing scan: %+v, %v: want docs 1 and 3 at margins 0.25 and 0.125, 3 as near", a, err)
	} else if s := a.String(); !strings.Contains(s, "doc_ids [1 3], the scan's margins there [0.25 0.125] logits; 3 of 3 documents") {
		t.Errorf("differing scan reads %q", s)
	}
	if _, err := CompareScan([]runfiles.ScanRow{row(1, 2, 2, 0)}, comps); err == nil {
		t.Error("another prompt geometry: no error")
	}
	if _, err := CompareScan([]runfiles.ScanRow{row(7, 1, 3, 0)}, comps); err == nil {
		t.Error("no document in common: no error")
	}
}

func TestTiedVerdicts(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct {
		name string
		rows []runfiles.ScanRow
		want int
	}{
		{"none", nil, 0},
		{"a tie", []runfiles.ScanRow{{Status: StatusOK, Margin: 0}}, 1},
		{"a lead", []runfiles.ScanRow{{Status: StatusOK, Margin: 0.0625}}, 0},
		{"not scanned", []runfiles.ScanRow{{Status: StatusTooShort, Margin: nan}}, 0},
		{"written before margins", []runfiles.ScanRow{{Status: StatusOK, Margin: nan}}, 0},
		{"mixed", []runfiles.ScanRow{{Status: StatusOK, Margin: 0}, {Status: StatusOK, Margin: 1}, {Status: StatusOK, Margin: 0}}, 2},
	} {
		if got := TiedVerdicts(tc.rows); got != tc.want {
			t.Errorf("%s: TiedVerdicts = %d, want %d", tc.name, got, tc.want)
		}
	}
}
