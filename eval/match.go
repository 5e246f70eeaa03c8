package eval

// Match compares a generated continuation with the true suffix, token by
// token.
type Match struct {
	Exact           bool    `arrow:"exact_match,required"` // generated == suffix, same length
	TokenAccuracy   float64 `arrow:"token_accuracy"`       // matching positions / len(suffix); NaN for an empty suffix
	FirstDivergence int     `arrow:"first_divergence"`     // first differing position; len(suffix) when none
}

// CompareTokens scores generated against suffix. Positions the generation
// does not reach count as mismatches; tokens generated beyond the suffix
// make the match inexact but do not change the accuracy.
func CompareTokens(suffix, generated []int32) Match {
	m := Match{FirstDivergence: len(suffix)}
	hits := 0
	for i, want := range suffix {
		if i < len(generated) && generated[i] == want {
			hits++
			continue
		}
		if m.FirstDivergence == len(suffix) {
			m.FirstDivergence = i
		}
	}
	if len(suffix) == 0 {
		m.TokenAccuracy = nan()
	} else {
		m.TokenAccuracy = float64(hits) / float64(len(suffix))
	}
	m.Exact = len(suffix) > 0 && hits == len(suffix) && len(generated) == len(suffix)
	return m
}
