package eval

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/memo-research/memo/internal/arrowsafe"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/loss"
)

// TestPRCurveByHand: five guesses of three member documents, ranked by
// seq_logprob (given out of order):
//
//	rank  doc  log p  exact  correct wrong extracted  precision  recall
//	1     1    -1     yes    1       0     1          1          1/3
//	2     2    -2     no     1       1     1          1/2        1/3
//	3     1    -3     yes    2       1     1 (again)  2/3        1/3
//	4     3    -4     yes    3       1     2          3/4        2/3
//	5     2    -5     no     3       2     2          3/5        2/3
//
// Recall at <= 0 wrong guesses is 1/3 (after guess 1), at <= 1 it is 2/3
// (after guess 4), at <= 100 it is 2/3 with precision 3/5.
func TestPRCurveByHand(t *testing.T) {
	gs := []GuessScore{
		{DocID: 2, Rank: 1, SeqLogProb: -5},
		{DocID: 1, Rank: 1, SeqLogProb: -3, Exact: true},
		{DocID: 3, Rank: 0, SeqLogProb: -4, Exact: true},
		{DocID: 1, Rank: 0, SeqLogProb: -1, Exact: true},
		{DocID: 2, Rank: 0, SeqLogProb: -2},
	}
	curve := PRCurve(gs, 3)
	want := []PRPoint{
		{1, 1, 0, 1, 1, 1.0 / 3}, {2, 1, 1, 1, 0.5, 1.0 / 3}, {3, 2, 1, 1, 2.0 / 3, 1.0 / 3},
		{4, 3, 1, 2, 0.75, 2.0 / 3}, {5, 3, 2, 2, 0.6, 2.0 / 3},
	}
	if len(curve) != len(want) {
		t.Fatalf("%d points, want %d", len(curve), len(want))
	}
	for i, w := range want {
		c := curve[i]
		if c.Guesses != w.Guesses || c.Correct != w.Correct || c.Wrong != w.Wrong || c.Extracted != w.Extracted ||
			!near(c.Precision, w.Precision) || !near(c.Recall, w.Recall) {
			t.Errorf("point %d = %+v, want %+v", i+1, c, w)
		}
	}
	for _, c := range []struct {
		max  int
		r, p float64
	}{{0, 1.0 / 3, 1}, {1, 2.0 / 3, 0.75}, {100, 2.0 / 3, 0.6}} {
		if r, p := RecallAtWrong(curve, c.max); !near(r, c.r) || !near(p, c.p) {
			t.Errorf("at <= %d wrong: recall %v precision %v, want %v and %v", c.max, r, p, c.r, c.p)
		}
	}
	// A wrong first guess with no budget: nothing extracted.
	if r, p := RecallAtWrong(PRCurve([]GuessScore{{DocID: 1}}, 1), 0); r != 0 || p != 0 {
		t.Errorf("first guess wrong, budget 0: recall %v precision %v, want 0 and 0", r, p)
	}
	if r, _ := RecallAtWrong(nil, 100); !math.IsNaN(r) {
		t.Errorf("no guesses: recall %v, want NaN", r)
	}
	// Ties in log p go to the lower doc_id, then the lower rank.
	tied := PRCurve([]GuessScore{{DocID: 2, SeqLogProb: -1}, {DocID: 1, Rank: 1, SeqLogProb: -1, Exact: true}}, 2)
	if tied[0].Correct != 1 {
		t.Errorf("tie: first guess %+v, want doc 1's (correct)", tied[0])
	}
}

// TestRunScoresGuesses: eval reads guesses.arrow beside the completions,
// scores every guess, fills any_exact_match and best_rougeL and the
// summary's "guesses", and writes guess_scores.parquet.
func TestRunScoresGuesses(t *testing.T) {
	dir := t.TempDir()
	comps := crafted()
	writeTestCompletions(t, filepath.Join(dir, "completions.arrow"), comps)
	// Doc 2 (generated wrong) gets a second, exact guess; doc 3 two wrong
	// ones, the second with RougeL 1 ("hello world" vs "Hello, world").
	rows := []runfiles.Guess{
		{DocID: 1, Split: "target", Rank: 0, Generated: []int32{1, 2, 3, 4}, GeneratedText: "the cat sat down", SeqLogProb: -0.5},
		{DocID: 1, Split: "target", Rank: 1, Sample: 1, Generated: []int32{1, 2, 3, 9}, GeneratedText: "the cat sat up", SeqLogProb: -4},
		{DocID: 2, Split: "target", Rank: 0, Generated: []int32{1, 2, 9, 9}, GeneratedText: "the cat ran away", SeqLogProb: -1},
		{DocID: 2, Split: "target", Rank: 1, Sample: 1, Generated: []int32{1, 2, 3, 4}, GeneratedText: "the cat sat down", SeqLogProb: -3},
		{DocID: 3, Split: "target", Rank: 0, Generated: []int32{7, 6}, GeneratedText: "hello!", SeqLogProb: -2},
		{DocID: 3, Split: "target", Rank: 1, Sample: 1, Generated: []int32{8, 6}, GeneratedText: "hello world", SeqLogProb: -5},
		{DocID: 5, Split: "control", Rank: 0, Generated: []int32{3, 4}, GeneratedText: "z w", SeqLogProb: -1},
		{DocID: 5, Split: "control", Rank: 1, Sample: 1, Generated: []int32{1, 2}, GeneratedText: "x y", SeqLogProb: -9},
		{DocID: 6, Split: "control", Rank: 0, Generated: []int32{1, 4}, GeneratedText: "x w", SeqLogProb: -1},
	}
	if err := runfiles.WriteGuesses(runfiles.GuessesPath(filepath.Join(dir, "completions.arrow")), rows); err != nil {
		t.Fatal(err)
	}
	sum, err := Run(DefaultConfig(), dir, loss.Config{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	g := sum.Guesses
	if g == nil {
		t.Fatal("summary has no guesses")
	}
	// Members: docs 1 and 2 extracted by some guess, doc 3 not: 2/3. Best
	// RougeL: 1, 1, 1 (doc 3's second guess).
	if g.Samples != 2 || g.NGuesses != 6 || g.Members.N != 3 || !near(float64(g.Members.AnyExact), 2.0/3) || !near(float64(g.Members.BestRougeL), 1) {
		t.Errorf("guesses %+v: want samples 2, 6 member guesses, any-exact 2/3, best RougeL 1", g)
	}
	if !near(float64(g.Controls.AnyExact), 0.5) {
		t.Errorf("controls any-exact %v, want 1/2 (doc 5's second guess)", g.Controls.AnyExact)
	}
	// Member guesses ranked: -0.5 ✓ (doc 1), -1 ✗, -2 ✗, -3 ✓ (doc 2), -4 ✗, -5 ✗:
	// after at most 100 wrong, all six: recall 2/3, precision 2/6.
	if !near(float64(g.RecallAtMaxWrong), 2.0/3) || !near(float64(g.PrecisionAtMaxWrong), 1.0/3) || g.MaxWrong != 100 {
		t.Errorf("recall %v precision %v at <= %d wrong, want 2/3 and 1/3 at 100", g.RecallAtMaxWrong, g.PrecisionAtMaxWrong, g.MaxWrong)
	}
	// The single-guess columns are unchanged (exact match of completions.arrow: 1/3).
	if !near(float64(sum.Members.ExactMatch), 1.0/3) {
		t.Errorf("members exact %v, want 1/3", sum.Members.ExactMatch)
	}
	tbl, err := arrowsafe.ReadParquetFile(filepath.Join(dir, "guess_scores.parquet"), 64)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	if tbl.NumRows() != int64(len(rows)) || tbl.NumCols() != int64(GuessScores.Schema().NumFields()) {
		t.Errorf("guess_scores.parquet: %d rows × %d columns, want %d × %d", tbl.NumRows(), tbl.NumCols(), len(rows), GuessScores.Schema().NumFields())
	}
	for i, f := range GuessScores.Schema().Fields() {
		if got := tbl.Schema().Field(i); got.Name != f.Name || !arrow.TypeEqual(got.Type, f.Type) {
			t.Errorf("guess_scores.parquet column %d: %s %s, want %s %s", i, got.Name, got.Type, f.Name, f.Type)
		}
	}
	// Without guesses the stale guess scores go, and the summary has none.
	if err := os.Remove(filepath.Join(dir, "guesses.arrow")); err != nil {
		t.Fatal(err)
	}
	sum, err = Run(DefaultConfig(), dir, loss.Config{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "guess_scores.parquet")); err == nil || sum.Guesses != nil {
		t.Errorf("one guess per document: guess_scores.parquet left (%v) or summary guesses %v", err, sum.Guesses)
	}
	// A guess of a document the completions lack is refused.
	bad := append(rows, runfiles.Guess{DocID: 99, Split: "target"})
	if err := runfiles.WriteGuesses(filepath.Join(dir, "guesses.arrow"), bad); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(DefaultConfig(), dir, loss.Config{}, dir); err == nil {
		t.Error("a guess of an unknown document was accepted")
	}
}
