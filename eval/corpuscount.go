package eval

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"

	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/runfiles"
)

// CountWindow counts a window of token ids in the training corpus, each
// document as often as an epoch holds it (data/tokindex answers it; eval
// takes the function so that it needs no index of its own).
type CountWindow func(ids []int32) (int64, error)

// Counter is a CountWindow and the corpus it counts in.
type Counter struct {
	Count  CountWindow
	Corpus CountedCorpus
}

// CountedCorpus is summary.json's counted_corpus: the corpus by_corpus_count
// and corpus_counts.parquet counted in. memo eval --counts can count in
// another run's corpus; without it a summary did not say which.
type CountedCorpus struct {
	// Dataset is the counted dataset's directory, absolute.
	Dataset string `json:"dataset"`
	// Tokenizer and Digest are its identity as the index records it: the
	// tokenizer and the digest of its training documents' tokens.
	Tokenizer string `json:"tokenizer"`
	Digest    string `json:"digest"`
}

// CorpusCount is one row of corpus_counts.parquet, one per document: how
// often its extracted window (prefix + suffix) and its suffix alone occur
// in the training corpus (Carlini et al. 2023's duplicate counts). A file
// of its own beside scores.parquet, so that scores.parquet keeps its
// columns and its bytes.
type CorpusCount struct {
	DocID       int64  `arrow:"doc_id"`
	Split       string `arrow:"split,required"`
	Repetitions int    `arrow:"repetitions"`
	WindowCount int64  `arrow:"window_count"`
	SuffixCount int64  `arrow:"suffix_count"`
}

// CorpusCounts is corpus_counts.parquet's codec.
var CorpusCounts = runfiles.NewTable[CorpusCount](runfiles.CorpusCountsFile)

// CorpusCountsPath names the counts beside a scores file: scores.parquet
// gives corpus_counts.parquet, NAME.scores.parquet NAME.corpus_counts.parquet.
func CorpusCountsPath(scores string) string {
	return runfiles.BesideScores(scores, runfiles.CorpusCountsFile)
}

// CountBucket is exact match and membership AUC of the members whose
// window occurs between Lo and Hi times (inclusive) in the training
// corpus; the AUC is of the loss statistic against every control.
type CountBucket struct {
	Lo         int64 `json:"lo"`
	Hi         int64 `json:"hi"`
	Members    int   `json:"n_members"`
	ExactMatch Num   `json:"exact_match"`
	// ExactMatchWilsonCI is the Wilson score interval of ExactMatch, as
	// every split's; null in files written before it was.
	ExactMatchWilsonCI *[2]Num `json:"exact_match_wilson_ci,omitempty"`
	LossAUC            Num     `json:"loss_auc"`
}

// countCompletions counts each completion's window and suffix.
func countCompletions(comps []runfiles.Completion, count CountWindow) ([]CorpusCount, error) {
	out := make([]CorpusCount, len(comps))
	unknown, longest := 0, 0
	for i, c := range comps {
		r := CorpusCount{DocID: c.DocID, Split: c.Split, Repetitions: c.Repetitions, WindowCount: -1, SuffixCount: -1}
		if len(c.Suffix) > 0 {
			w := append(append(make([]int32, 0, len(c.Prefix)+len(c.Suffix)), c.Prefix...), c.Suffix...)
			var err error
			if r.WindowCount, err = count(w); err != nil {
				return nil, fmt.Errorf("eval: count doc_id %d's window: %w", c.DocID, err)
			}
			if r.SuffixCount, err = count(c.Suffix); err != nil {
				return nil, fmt.Errorf("eval: count doc_id %d's suffix: %w", c.DocID, err)
			}
			if r.WindowCount < 0 {
				unknown, longest = unknown+1, max(longest, len(w))
			}
		}
		out[i] = r
	}
	if unknown > 0 {
		// An index built with a smaller --max-window opens fine and
		// answers none of these: by_corpus_count left summary.json
		// without a word.
		slog.Warn("eval: windows longer than the corpus index answers have no count; rebuild it with `memo index build --max-window` at least the window", "windows", unknown, "of", len(comps), "window_tokens", longest)
	}
	return out, nil
}

// countBucketOf is the bucket of count n: 0, 1, then powers of two
// [2^k, 2^(k+1)-1], so that a log axis spaces them evenly.
func countBucketOf(n int64) (lo, hi int64) {
	if n <= 1 {
		return n, n
	}
	lo = 1
	for lo*2 <= n {
		lo *= 2
	}
	return lo, 2*lo - 1
}

// summarizeCounts groups the attacked members by their window's count.
func summarizeCounts(rows []Score, counts []CorpusCount) []CountBucket {
	var controls []float64
	for _, s := range rows {
		if s.Split == "control" {
			controls = append(controls, MemberScore(s.Loss, false))
		}
	}
	type acc struct {
		n, exact int
		scores   []float64
	}
	byLo := map[int64]*acc{}
	var los []int64
	for i, s := range rows {
		c := counts[i].WindowCount
		if s.Split != "target" || s.Status != StatusOK || c < 0 {
			continue
		}
		lo, _ := countBucketOf(c)
		a := byLo[lo]
		if a == nil {
			a = &acc{}
			byLo[lo] = a
			los = append(los, lo)
		}
		a.n++
		if s.Exact {
			a.exact++
		}
		a.scores = append(a.scores, MemberScore(s.Loss, false))
	}
	slices.Sort(los)
	out := make([]CountBucket, 0, len(los))
	for _, lo := range los {
		a := byLo[lo]
		_, hi := countBucketOf(lo)
		ci := wilson(a.exact, a.n)
		out = append(out, CountBucket{Lo: lo, Hi: hi, Members: a.n, ExactMatch: Num(float64(a.exact) / float64(a.n)),
			ExactMatchWilsonCI: &ci, LossAUC: Num(AUC(a.scores, controls))})
	}
	return out
}

// writeCorpusCounts writes corpus_counts.parquet atomically.
func writeCorpusCounts(path string, rows []CorpusCount) error {
	if err := atomicfile.Write(path, func(w io.Writer) error { return CorpusCounts.WriteParquet(w, rows) }); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}
