package eval

import "math"

// ExtractableNs are the sample budgets n at which summary.json reports the
// fraction of documents (n, q)-extractable.
var ExtractableNs = []int{1, 10, 100, 1000}

// ExtractableSummary is probabilistic extraction (Hayes et al. 2024, arXiv
// 2410.19482): a document is (n, q)-extractable when n independent
// samples of the attack's decoding reproduce its suffix with probability
// at least q, 1 − (1 − p)^n >= q, p = exp(p_extract). Documents whose
// p_extract is NaN (not attacked, or beam search) are left out.
type ExtractableSummary struct {
	Q        float64         `json:"q"`
	Members  []ExtractableAt `json:"members"`
	Controls []ExtractableAt `json:"controls"`
}

// ExtractableAt is the fraction of a split's documents (n, q)-extractable
// at one n, with its Wilson score 95 % interval.
type ExtractableAt struct {
	N        int    `json:"n"`
	Count    int    `json:"count"`
	Total    int    `json:"total"`
	Fraction Num    `json:"fraction"`
	WilsonCI [2]Num `json:"wilson_ci"`
}

// ExtractProb is the probability 1 − (1 − p)^n that n samples include the
// suffix at least once, from log p; computed as −expm1(n·log(1 − p)) so
// that tiny p do not round to 0. log p = 0 gives 1, −Inf gives 0.
func ExtractProb(logP float64, n int) float64 {
	if math.IsNaN(logP) {
		return math.NaN()
	}
	return -math.Expm1(float64(n) * log1mExp(logP))
}

// extractableAt reports whether 1 − (1 − p)^n ≥ q, compared as
// n·log(1 − p) ≤ log(1 − q): ExtractProb rounds to 1 once (1 − p)^n is
// under 2⁻⁵³ (p = 0.04 at n = 1000), which at q = 1 counted documents
// that samples miss with positive probability. In logs, q = 1 holds for
// p = 1 alone.
func extractableAt(logP float64, n int, q float64) bool {
	return float64(n)*log1mExp(logP) <= math.Log1p(-q)
}

// log1mExp is log(1 − e^x) for x ≤ 0, accurate at both ends (Mächler
// 2012): through expm1 near 0, where 1 − e^x cancels, and log1p beyond.
func log1mExp(x float64) float64 {
	if x > -math.Ln2 {
		return math.Log(-math.Expm1(x))
	}
	return math.Log1p(-math.Exp(x))
}

func summarizeExtractable(rows []Score, q float64) []ExtractableAt {
	var lps []float64
	for _, r := range rows {
		if r.Status == StatusOK && !math.IsNaN(r.PExtract) {
			lps = append(lps, r.PExtract)
		}
	}
	out := make([]ExtractableAt, len(ExtractableNs))
	for i, n := range ExtractableNs {
		k := 0
		for _, lp := range lps {
			if extractableAt(lp, n, q) {
				k++
			}
		}
		lo, hi := WilsonCI(k, len(lps))
		out[i] = ExtractableAt{N: n, Count: k, Total: len(lps), Fraction: Num(math.NaN()), WilsonCI: [2]Num{Num(lo), Num(hi)}}
		if len(lps) > 0 {
			out[i].Fraction = Num(float64(k) / float64(len(lps)))
		}
	}
	return out
}

// extractableSummary is nil when no document has a p_extract.
func extractableSummary(members, controls []Score, q float64) *ExtractableSummary {
	s := &ExtractableSummary{Q: q, Members: summarizeExtractable(members, q), Controls: summarizeExtractable(controls, q)}
	if s.Members[0].Total == 0 && s.Controls[0].Total == 0 {
		return nil
	}
	return s
}
