package eval

import (
	"fmt"
	"io"
	"sort"

	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/runfiles"
)

// Memorization is one row of memorization.parquet, memorization over
// training (extract.checkpoints): one row group per checkpoint step, one
// row per split (members, controls) in it. Every value is copied from
// that checkpoint's summary.json, none recomputed: n, the extraction rates
// and their 95 % intervals (_lo, _hi: Wilson's for the exact-match rates,
// which a bootstrap shrinks to nothing at 0 and 100 %; the bootstrap's for
// token accuracy and RougeL), the mean loss; the
// any-of-N exact match of extract.samples > 1 (NaN with one guess); and
// the step's membership inference, members against controls (the same on
// both rows of a step).
type Memorization struct {
	Step            int64   `arrow:"step"`
	Split           string  `arrow:"split"`
	Checkpoint      string  `arrow:"checkpoint"`
	N               int     `arrow:"n"`
	ExactMatch      float64 `arrow:"exact_match"`
	ExactMatchLo    float64 `arrow:"exact_match_lo"`
	ExactMatchHi    float64 `arrow:"exact_match_hi"`
	TokenAccuracy   float64 `arrow:"token_accuracy"`
	TokenAccuracyLo float64 `arrow:"token_accuracy_lo"`
	TokenAccuracyHi float64 `arrow:"token_accuracy_hi"`
	RougeL          float64 `arrow:"rougeL"`
	RougeLLo        float64 `arrow:"rougeL_lo"`
	RougeLHi        float64 `arrow:"rougeL_hi"`
	Loss            float64 `arrow:"loss"`
	AnyExactMatch   float64 `arrow:"any_exact_match"`
	AnyExactMatchLo float64 `arrow:"any_exact_match_lo"`
	AnyExactMatchHi float64 `arrow:"any_exact_match_hi"`
	LossAUC         float64 `arrow:"loss_auc"`
	LossAUCLo       float64 `arrow:"loss_auc_lo"`
	LossAUCHi       float64 `arrow:"loss_auc_hi"`
	ZlibAUC         float64 `arrow:"zlib_auc"`
	MinKAUC         float64 `arrow:"mink_auc"`
}

// Memorizations is memorization.parquet's codec.
var Memorizations = runfiles.NewTable[Memorization](runfiles.MemorizationFile)

// ReadMemorization reads a memorization.parquet that WriteMemorization wrote.
func ReadMemorization(path string) ([]Memorization, error) {
	return Memorizations.ReadParquet(path)
}

// WriteMemorization writes memorization.parquet at path (atomically) from
// the summaries of one run's checkpoints, in step order. Each summary must
// record its step (extract writes it into the completions).
func WriteMemorization(path string, sums []*Summary) error {
	sorted := append([]*Summary(nil), sums...)
	for _, s := range sorted {
		if s.Step == nil {
			return fmt.Errorf("memorization: summary of %s records no step", s.Completions)
		}
	}
	sort.SliceStable(sorted, func(i, j int) bool { return *sorted[i].Step < *sorted[j].Step })
	steps := make([][]Memorization, len(sorted))
	for i, s := range sorted {
		if i > 0 && *s.Step == *sorted[i-1].Step {
			return fmt.Errorf("memorization: step %d twice (%s and %s)", *s.Step, sorted[i-1].Completions, s.Completions)
		}
		steps[i] = memorizationRows(s)
	}
	err := atomicfile.Write(path, func(w io.Writer) error { return Memorizations.WriteParquet(w, steps...) })
	if err != nil {
		return err // atomicfile names the file
	}
	return nil
}

// memorizationRows are one step's rows: members, then controls.
func memorizationRows(s *Summary) []Memorization {
	loss := s.MIA.Stat("loss")
	row := func(split string, m SplitSummary, any GuessSplit) Memorization {
		return Memorization{Step: int64(*s.Step), Split: split, Checkpoint: s.Checkpoint, N: m.N,
			ExactMatch: float64(m.ExactMatch), ExactMatchLo: float64(m.ExactMatchWilsonCI[0]), ExactMatchHi: float64(m.ExactMatchWilsonCI[1]),
			TokenAccuracy: float64(m.TokenAccuracy), TokenAccuracyLo: float64(m.TokenAccuracyCI[0]), TokenAccuracyHi: float64(m.TokenAccuracyCI[1]),
			RougeL: float64(m.RougeL), RougeLLo: float64(m.RougeLCI[0]), RougeLHi: float64(m.RougeLCI[1]), Loss: float64(m.Loss),
			AnyExactMatch: float64(any.AnyExact), AnyExactMatchLo: float64(any.AnyExactWilsonCI[0]), AnyExactMatchHi: float64(any.AnyExactWilsonCI[1]),
			LossAUC: float64(loss.AUC), LossAUCLo: float64(loss.AUCCI[0]), LossAUCHi: float64(loss.AUCCI[1]),
			ZlibAUC: float64(s.MIA.Stat("zlib").AUC), MinKAUC: float64(s.MIA.Stat("mink").AUC)}
	}
	return []Memorization{row(splitTarget, s.Members, guessSplit(s, true)), row(splitControl, s.Controls, guessSplit(s, false))}
}

// guessSplit is the summary's any-of-N rates of members or controls, NaN
// without guesses.
func guessSplit(s *Summary, members bool) GuessSplit {
	if s.Guesses == nil {
		n := Num(nan())
		return GuessSplit{AnyExact: n, AnyExactCI: [2]Num{n, n}, AnyExactWilsonCI: [2]Num{n, n}}
	}
	if members {
		return s.Guesses.Members
	}
	return s.Guesses.Controls
}
