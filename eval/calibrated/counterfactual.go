package calibrated

import (
	"fmt"
	"iter"
	"math"
)

// Counterfactual is the counterfactual memorization of Zhang et al. 2021
// (arXiv 2112.12938), estimated from the reference models: the mean
// performance on candidate j of the models that trained on it minus the
// mean of those that did not. The caller passes performance = mean token
// log-likelihood, so higher means training on the document itself raised
// its likelihood more than training on the rest of the data did. A
// candidate without an IN or an OUT model is NaN. K must be >= 2.
func Counterfactual(signal [][]float64, in [][]bool) ([]float64, error) {
	n := 0
	if len(signal) > 0 {
		n = len(signal[0])
	}
	if err := checkRefs(signal, in, n, 2); err != nil {
		return nil, fmt.Errorf("calibrated: Counterfactual: %w", err)
	}
	out := make([]float64, n)
	for j := range out {
		mIn, mOut := refMoments(signal, in, j, true), refMoments(signal, in, j, false)
		if mIn.n == 0 || mOut.n == 0 {
			out[j] = math.NaN()
			continue
		}
		out[j] = mIn.mean - mOut.mean
	}
	return out, nil
}

// checkRefs checks that signal and in are both K×n with K >= minK, the
// layout every function of the package takes.
func checkRefs(signal [][]float64, in [][]bool, n, minK int) error {
	K := len(signal)
	if K < minK {
		return fmt.Errorf("%d reference models: need at least %d", K, minK)
	}
	if len(in) != K {
		return fmt.Errorf("%d rows of reference values but %d rows of memberships", K, len(in))
	}
	for k := range signal {
		if len(signal[k]) != n {
			return fmt.Errorf("reference model %d has %d values, want %d (one per candidate)", k, len(signal[k]), n)
		}
		if len(in[k]) != n {
			return fmt.Errorf("reference model %d has %d memberships, want %d (one per candidate)", k, len(in[k]), n)
		}
	}
	return nil
}

// moments are the mean and the sum of squared deviations from it of one
// candidate's IN (or OUT) reference values.
type moments struct {
	mean, ss float64
	n        int
}

// refMoments gathers candidate j's values from the models whose
// membership is want.
func refMoments(signal [][]float64, in [][]bool, j int, want bool) moments {
	return momentsOf(func(yield func(float64) bool) {
		for k := range signal {
			if in[k][j] == want && !yield(signal[k][j]) {
				return
			}
		}
	})
}

// momentsOf is the moments of the values seq gives, in two passes so that
// ss does not cancel; NaN for none.
func momentsOf(seq iter.Seq[float64]) moments {
	var m moments
	var sum float64
	for v := range seq {
		sum += v
		m.n++
	}
	if m.n == 0 {
		return moments{mean: math.NaN(), ss: math.NaN()}
	}
	m.mean = sum / float64(m.n)
	for v := range seq {
		d := v - m.mean
		m.ss += d * d
	}
	return m
}
