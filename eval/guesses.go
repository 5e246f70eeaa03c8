package eval

import (
	"cmp"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"

	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/runfiles"
)

// MaxWrong is the extraction benchmark's budget of wrong guesses: recall
// is read where the ranked guesses have made at most this many mistakes.
const MaxWrong = 100

// GuessScore is one row of guess_scores.parquet: one guess of an attack
// with extract.samples > 1, scored against its document's suffix.
type GuessScore struct {
	DocID      int64   `arrow:"doc_id"`
	Split      string  `arrow:"split"`
	Rank       int     `arrow:"rank"` // within the document, by SeqLogProb (0 = best)
	Sample     int     `arrow:"sample"`
	SeqLogProb float64 `arrow:"seq_logprob"` // the model's log-probability of the guess (see runfiles.Guess)
	Exact      bool    `arrow:"exact_match"`
	RougeL     float64 `arrow:"rougeL"` // F1
}

// GuessScores is guess_scores.parquet's codec.
var GuessScores = runfiles.NewTable[GuessScore](runfiles.GuessScoresFile)

// GuessScoresPath names the guess scores beside a scores file:
// scores.parquet gives guess_scores.parquet, NAME.scores.parquet gives
// NAME.guess_scores.parquet.
func GuessScoresPath(scores string) string {
	return runfiles.BesideScores(scores, runfiles.GuessScoresFile)
}

// PRPoint is the precision–recall curve after the first Guesses guesses:
// Correct of them reproduce their suffix exactly, Wrong do not, and
// Extracted documents have at least one correct guess among them.
type PRPoint struct {
	Guesses, Correct, Wrong, Extracted int
	Precision                          float64 // Correct / Guesses
	Recall                             float64 // Extracted / the documents attacked
}

// PRCurve ranks the guesses of all documents together by SeqLogProb,
// highest first (ties: lower doc_id, then lower rank), as the extraction
// benchmark ranks its guesses by the model's confidence, and returns the
// curve after each guess. nDocs, the recall's denominator, counts the
// documents attacked. A second correct guess of a document already
// extracted counts as correct (precision) but extracts nothing new
// (recall).
func PRCurve(gs []GuessScore, nDocs int) []PRPoint {
	ranked := slices.Clone(gs)
	slices.SortStableFunc(ranked, func(a, b GuessScore) int {
		if c := cmp.Compare(b.SeqLogProb, a.SeqLogProb); c != 0 {
			return c
		}
		if c := cmp.Compare(a.DocID, b.DocID); c != 0 {
			return c
		}
		return cmp.Compare(a.Rank, b.Rank)
	})
	out := make([]PRPoint, 0, len(ranked))
	seen := map[int64]bool{}
	var p PRPoint
	for _, g := range ranked {
		p.Guesses++
		if g.Exact {
			p.Correct++
			if !seen[g.DocID] {
				seen[g.DocID] = true
				p.Extracted++
			}
		} else {
			p.Wrong++
		}
		p.Precision = float64(p.Correct) / float64(p.Guesses)
		p.Recall = math.NaN()
		if nDocs > 0 {
			p.Recall = float64(p.Extracted) / float64(nDocs)
		}
		out = append(out, p)
	}
	return out
}

// RecallAtWrong is the recall when the ranked guesses have made at most
// maxWrong mistakes: at the last point before the (maxWrong+1)-th wrong
// guess. Precision is that point's; both are 0 when the very first
// guesses exceed the budget, NaN without guesses.
func RecallAtWrong(curve []PRPoint, maxWrong int) (recall, precision float64) {
	if len(curve) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, p := range curve {
		if p.Wrong > maxWrong {
			break
		}
		recall, precision = p.Recall, p.Precision
	}
	return recall, precision
}

// GuessSummary is summary.json's "guesses": the many-guesses attack
// (extract.samples > 1), absent with one guess per document.
type GuessSummary struct {
	// Samples is the most guesses any document has; NGuesses counts the
	// members' guesses the curve ranks.
	Samples  int `json:"samples"`
	NGuesses int `json:"n_guesses"`
	// MaxWrong is the wrong-guess budget; RecallAtMaxWrong and
	// PrecisionAtMaxWrong are read on the members' precision–recall curve
	// there (RecallAtWrong). The curve itself is PRCurve of the member rows
	// of guess_scores.parquet.
	MaxWrong            int `json:"max_wrong"`
	RecallAtMaxWrong    Num `json:"recall_at_max_wrong"`
	PrecisionAtMaxWrong Num `json:"precision_at_max_wrong"`
	// Members and Controls: the per-document any-of-N exact match and best
	// RougeL over the attacked documents.
	Members  GuessSplit `json:"members"`
	Controls GuessSplit `json:"controls"`
}

// GuessSplit holds one split's any-of-N rates, with bootstrap 95 %
// intervals (and Wilson's for the exact match).
type GuessSplit struct {
	N                int    `json:"n"`
	AnyExact         Num    `json:"any_exact_match"`
	AnyExactCI       [2]Num `json:"any_exact_match_ci"`
	AnyExactWilsonCI [2]Num `json:"any_exact_match_wilson_ci"`
	BestRougeL       Num    `json:"best_rougeL"`
	BestRougeLCI     [2]Num `json:"best_rougeL_ci"`
}

// readGuessScores reads and scores the guesses beside a completions file;
// nil when there are none (one guess per document).
func readGuessScores(completions string, comps []runfiles.Completion) ([]GuessScore, error) {
	path := runfiles.GuessesPath(completions)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	rows, err := runfiles.ReadGuesses(path)
	if err != nil {
		return nil, badinput.Errorf("%w (not written by `memo extract`? run it again)", err)
	}
	byDoc := make(map[int64]*runfiles.Completion, len(comps))
	for i := range comps {
		byDoc[comps[i].DocID] = &comps[i]
	}
	out := make([]GuessScore, len(rows))
	for i, g := range rows {
		c, ok := byDoc[g.DocID]
		if !ok || c.Split != g.Split {
			return nil, badinput.Errorf("read %s: guess of doc_id %d (%s) has no document in %s: the two files are of different attacks; run `memo extract` again", path, g.DocID, g.Split, completions)
		}
		out[i] = GuessScore{DocID: g.DocID, Split: g.Split, Rank: g.Rank, Sample: g.Sample, SeqLogProb: g.SeqLogProb,
			Exact:  CompareTokens(c.Suffix, g.Generated).Exact,
			RougeL: RougeL(RougeTokens(c.SuffixText), RougeTokens(g.GeneratedText)).F1}
	}
	return out, nil
}

// applyGuesses replaces the one-guess any-of-N exact match and best RougeL
// (ScoreCompletion's) of each document that has guesses with those over
// its guesses. It returns the number of guesses of the document with the
// most.
func applyGuesses(rows []Score, gs []GuessScore) int {
	idx := make(map[int64]int, len(rows))
	for i := range rows {
		idx[rows[i].DocID] = i
	}
	most := 0
	seen := map[int64]bool{}
	for _, g := range gs {
		r := &rows[idx[g.DocID]]
		if !seen[g.DocID] {
			seen[g.DocID] = true
			r.AnyExact, r.BestRougeL, r.NGuesses = false, math.Inf(-1), 0
		}
		r.NGuesses++
		r.AnyExact = r.AnyExact || g.Exact
		r.BestRougeL = math.Max(r.BestRougeL, g.RougeL)
		most = max(most, r.NGuesses)
	}
	return most
}

// summarizeGuesses builds summary.json's "guesses" from the scored rows
// (after applyGuesses) and their guesses.
func summarizeGuesses(rows []Score, gs []GuessScore, samples int, cfg Config) *GuessSummary {
	s := &GuessSummary{Samples: samples, MaxWrong: MaxWrong}
	split := func(name string) GuessSplit {
		var any, best []float64
		hits := 0
		for _, r := range rows {
			if r.Split != name || r.Status != StatusOK {
				continue
			}
			e := 0.0
			if r.AnyExact {
				e, hits = 1, hits+1
			}
			any, best = append(any, e), append(best, r.BestRougeL)
		}
		ci := func(xs []float64, metric string) [2]Num {
			lo, hi := BootstrapCI(xs, cfg.Bootstrap, seedFor(cfg.Seed, "guesses/"+name+"/"+metric))
			return [2]Num{Num(lo), Num(hi)}
		}
		wlo, whi := WilsonCI(hits, len(any))
		return GuessSplit{N: len(any), AnyExact: Num(Mean(any)), AnyExactCI: ci(any, "any_exact_match"),
			AnyExactWilsonCI: [2]Num{Num(wlo), Num(whi)}, BestRougeL: Num(Mean(best)), BestRougeLCI: ci(best, "best_rougeL")}
	}
	s.Members, s.Controls = split(splitTarget), split(splitControl)
	var member []GuessScore
	for _, g := range gs {
		if g.Split == splitTarget {
			member = append(member, g)
		}
	}
	s.NGuesses = len(member)
	r, p := RecallAtWrong(PRCurve(member, s.Members.N), MaxWrong)
	s.RecallAtMaxWrong, s.PrecisionAtMaxWrong = Num(r), Num(p)
	return s
}

// writeGuessResults writes guess_scores.parquet when there are guesses and
// removes a stale one (an earlier attack's) when there are none.
func writeGuessResults(path string, gs []GuessScore) error {
	if gs == nil {
		return atomicfile.RemoveStale(path)
	}
	if err := atomicfile.Write(path, func(w io.Writer) error { return GuessScores.WriteParquet(w, gs) }); err != nil {
		return err // atomicfile names the file
	}
	return nil
}
