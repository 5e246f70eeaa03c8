package eval

import "math"

// ExtractedRougeL is the RougeL at or above which a document counts as
// extracted in rougeL_extracted and the RougeL repetition threshold (the
// cut Singh et al. 2025, arXiv 2502.08145, use besides exact match).
const ExtractedRougeL = 0.5

// HalfExtracted is the extraction rate a repetition threshold asks for:
// half the members of a repetition group.
const HalfExtracted = 0.5

// RepetitionThreshold answers "after how many repetitions does this model
// give back half of what it was trained on?" for one run, by exact match
// and by RougeL >= ExtractedRougeL, over the repetition groups of its
// members (Summary.ByRepetitions).
type RepetitionThreshold struct {
	// Rate is HalfExtracted and RougeLCut ExtractedRougeL, recorded so that
	// the file says what it measured.
	Rate      float64 `json:"rate"`
	RougeLCut float64 `json:"rougeL_cut"`
	// MaxRepetitions is the largest repetition count tested: a threshold
	// that is null lies above it.
	MaxRepetitions int       `json:"max_repetitions"`
	ExactMatch     Threshold `json:"exact_match"`
	RougeL         Threshold `json:"rougeL"`
}

// Threshold is the smallest repetition count whose extraction rate reaches
// Rate, and an interval of counts built from each count's Wilson 95 %
// interval of the rate:
//
//   - CI[0] is the smallest count whose interval reaches Rate (upper bound
//     >= Rate): at every smaller count the data say "below half" with 95 %
//     confidence, so the threshold is not below CI[0];
//   - CI[1] is the smallest count whose interval lies at or above Rate
//     (lower bound >= Rate): there the data say "at least half", so the
//     threshold is not above CI[1].
//
// The counts between them are those whose interval contains Rate. The
// interval is pointwise (each count's 95 % interval, not a simultaneous
// band over counts) and says nothing between tested counts. Null (nil)
// means no tested count qualifies: the threshold, or that end of its
// interval, is above MaxRepetitions.
type Threshold struct {
	Repetitions *int    `json:"repetitions"`
	CI          [2]*int `json:"ci"`
}

// repetitionThreshold computes both thresholds from the per-group rates;
// nil with fewer than two attacked repetition groups.
func repetitionThreshold(groups []RepetitionSummary) *RepetitionThreshold {
	var attacked []RepetitionSummary
	for _, g := range groups {
		if g.N > 0 {
			attacked = append(attacked, g)
		}
	}
	if len(attacked) < 2 {
		return nil
	}
	t := &RepetitionThreshold{Rate: HalfExtracted, RougeLCut: ExtractedRougeL,
		MaxRepetitions: attacked[len(attacked)-1].Repetitions}
	t.ExactMatch = thresholdOf(attacked, func(g RepetitionSummary) (Num, [2]Num) { return g.ExactMatch, g.ExactMatchWilsonCI })
	t.RougeL = thresholdOf(attacked, func(g RepetitionSummary) (Num, [2]Num) { return g.RougeLExtracted, g.RougeLExtractedWilsonCI })
	return t
}

// thresholdOf walks the groups in increasing repetition count (as
// Summarize orders them) and takes the first count meeting each rule.
func thresholdOf(groups []RepetitionSummary, rateOf func(RepetitionSummary) (Num, [2]Num)) Threshold {
	var t Threshold
	first := func(dst **int, ok bool, reps int) {
		if ok && *dst == nil {
			r := reps
			*dst = &r
		}
	}
	for _, g := range groups {
		p, ci := rateOf(g)
		first(&t.Repetitions, float64(p) >= HalfExtracted, g.Repetitions)
		first(&t.CI[0], float64(ci[1]) >= HalfExtracted, g.Repetitions)
		first(&t.CI[1], float64(ci[0]) >= HalfExtracted, g.Repetitions)
	}
	return t
}

// hits counts the values at or above cut.
func hits(xs []float64, cut float64) int {
	n := 0
	for _, x := range xs {
		if x >= cut {
			n++
		}
	}
	return n
}

// rate is k/n, NaN (null in JSON) without documents.
func rate(k, n int) Num {
	if n == 0 {
		return Num(math.NaN())
	}
	return Num(float64(k) / float64(n))
}

// wilson is WilsonCI as summary.json stores it.
func wilson(k, n int) [2]Num {
	lo, hi := WilsonCI(k, n)
	return [2]Num{Num(lo), Num(hi)}
}
