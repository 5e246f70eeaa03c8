package plots

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/eval"
)

// TestCountTablesAndFigure: summary.json's by_corpus_count becomes
// corpus-counts.md/.csv and the extraction-against-count figure; a run
// without counts writes neither.
func TestCountTablesAndFigure(t *testing.T) {
	dir := t.TempDir()
	plain := []*runData{{Name: "a", Summary: &eval.Summary{}}}
	if files, err := writeCountTables(dir, plain); err != nil || files != nil {
		t.Fatalf("no counts: wrote %v, %v", files, err)
	}
	if p, err := extractionVsCount(DefaultConfig(), plain); p != nil || err != nil {
		t.Fatalf("no counts: a figure (%v)", err)
	}
	oneBucket := func(name string) *runData {
		return &runData{Name: name, Summary: &eval.Summary{ByCorpusCount: []eval.CountBucket{{Lo: 64, Hi: 127, Members: 32, ExactMatch: 1, LossAUC: 1}}}}
	}
	if p, err := extractionVsCount(DefaultConfig(), []*runData{oneBucket("k=0"), oneBucket("k=4")}); p != nil || err != nil {
		t.Fatalf("two runs with one count bucket each: a figure with no axis to read (%v)", err)
	}
	runs := []*runData{{Name: "a", Summary: &eval.Summary{ByCorpusCount: []eval.CountBucket{
		{Lo: 0, Hi: 0, Members: 2, ExactMatch: 0, LossAUC: 0.5},
		{Lo: 1, Hi: 1, Members: 10, ExactMatch: 0.1, LossAUC: 0.6},
		{Lo: 16, Hi: 31, Members: 4, ExactMatch: 0.75, LossAUC: 0.9, ExactMatchWilsonCI: &[2]eval.Num{0.3, 0.95}},
	}}}}
	if _, err := writeCountTables(dir, runs); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "corpus-counts.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The interval is eval's; a bucket from an older summary has none.
	for _, want := range []string{"| a | 16–31 | 4 | 75.0 [30.0, 95.0] |", "| a | 1 | 10 | 10.0 | 0.600 |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("corpus-counts.md lacks %q:\n%s", want, md)
		}
	}
	csv, err := os.ReadFile(filepath.Join(dir, "corpus-counts.csv"))
	if err != nil || !strings.Contains(string(csv), "a,16,31,4,0.75,0.3,0.95,0.9") {
		t.Errorf("corpus-counts.csv: %v\n%s", err, csv)
	}
	p, err := extractionVsCount(DefaultConfig(), runs)
	if err != nil || p == nil {
		t.Fatalf("figure: %v", err)
	}
	if _, err := save(p, DefaultConfig(), dir, "extraction-vs-corpus-count"); err != nil {
		t.Fatal(err)
	}
}
