package calibrated

import (
	"fmt"
	"math"
	"sort"
)

// RMIAOptions configures RMIA.
type RMIAOptions struct {
	// Offline estimates Pr(x) from the OUT models alone, with the
	// paper's linear approximation ½((1+A)·mean_OUT + (1−A)).
	Offline bool
	// A is the paper's a, in [0, 1]: how much of Pr(x) the OUT models
	// explain. Used only offline; Privacy Meter, when given none, picks
	// it by attacking the target's paired model with each a in 0, 0.1, …, 1.
	A float64
	// Gamma is the paper's threshold γ: x dominates z when
	// LR(x, z) >= γ. Any finite γ > 0 is accepted; 1 asks whether x is
	// relatively likelier under θ than z is.
	Gamma float64
}

// RMIA is the attack of Zarifzadeh et al. 2024 (arXiv 2312.03262) on
// probabilities: the fraction of the M population samples z that
// candidate x dominates, LR(x, z) = (Pr(x|θ)/Pr(x)) / (Pr(z|θ)/Pr(z)) >= γ,
// with Pr(·|θ) the target's probability (targetProb, popTarget) and Pr(·)
// its average over the reference models (refProb, popRef), as the package
// doc sets out. Higher means member. Probabilities lie in [0, 1];
// population ones must be positive, while a NaN candidate value gives a
// NaN score, as does, offline, a candidate without an OUT model.
func RMIA(targetProb []float64, refProb [][]float64, in [][]bool, popTarget []float64, popRef [][]float64, opt RMIAOptions) ([]float64, error) {
	if err := checkRMIA(targetProb, refProb, in, popTarget, popRef, opt); err != nil {
		return nil, fmt.Errorf("calibrated: RMIA: %w", err)
	}
	K, M := len(refProb), len(popTarget)
	// prior turns a mean over reference models into Pr(·).
	prior := func(mean float64) float64 { return mean }
	if opt.Offline {
		prior = func(mean float64) float64 { return 0.5 * ((1+opt.A)*mean + (1 - opt.A)) }
	}
	// Population samples are OUT for every model, so their mean runs over
	// all K, and offline it gets the a-approximation too, as Privacy
	// Meter's run_rmia (attacks.py) does for z.
	rz := make([]float64, M)
	for m := range rz {
		var s float64
		for k := range popRef {
			s += popRef[k][m]
		}
		rz[m] = popTarget[m] / prior(s/float64(K))
	}
	// Sorted ratios turn the count into a binary search: rx/rz is
	// non-increasing in rz because correctly rounded division is
	// monotone, so the search tests exactly rx/rz >= γ, ties included.
	sort.Float64s(rz)
	out := make([]float64, len(targetProb))
	for j := range out {
		var s float64
		var n int
		for k := range refProb {
			if !opt.Offline || !in[k][j] {
				s += refProb[k][j]
				n++
			}
		}
		if n == 0 {
			out[j] = math.NaN()
			continue
		}
		rx := targetProb[j] / prior(s/float64(n))
		if math.IsNaN(rx) {
			out[j] = math.NaN()
			continue
		}
		count := sort.Search(M, func(i int) bool { return rx/rz[i] < opt.Gamma })
		out[j] = float64(count) / float64(M)
	}
	return out, nil
}

func checkRMIA(targetProb []float64, refProb [][]float64, in [][]bool, popTarget []float64, popRef [][]float64, opt RMIAOptions) error {
	if !(opt.A >= 0 && opt.A <= 1) {
		return fmt.Errorf("a = %v: must be in [0, 1], e.g. 0.3", opt.A)
	}
	if !(opt.Gamma > 0) || math.IsInf(opt.Gamma, 1) {
		return fmt.Errorf("gamma = %v: must be finite and > 0, e.g. 1", opt.Gamma)
	}
	if err := checkRefs(refProb, in, len(targetProb), 1); err != nil {
		return err
	}
	if len(popTarget) == 0 {
		return fmt.Errorf("no population samples: need at least 1")
	}
	if len(popRef) != len(refProb) {
		return fmt.Errorf("%d reference models on the population but %d on the candidates", len(popRef), len(refProb))
	}
	for k := range popRef {
		if len(popRef[k]) != len(popTarget) {
			return fmt.Errorf("reference model %d has %d population values, want %d (one per sample)", k, len(popRef[k]), len(popTarget))
		}
	}
	// Candidates may carry NaN (an unscored document); anything else must
	// be a probability, or the ratios lose the order the search relies on.
	for j, p := range targetProb {
		if !math.IsNaN(p) && !(p >= 0 && p <= 1) {
			return fmt.Errorf("target probability of candidate %d = %v: not in [0, 1]", j, p)
		}
	}
	for k := range refProb {
		for j, p := range refProb[k] {
			if !math.IsNaN(p) && !(p >= 0 && p <= 1) {
				return fmt.Errorf("reference model %d, candidate %d: probability %v not in [0, 1]", k, j, p)
			}
		}
	}
	// Population ratios are divisors: each must be positive and finite.
	for m, p := range popTarget {
		if !(p > 0 && p <= 1) {
			return fmt.Errorf("target probability of population sample %d = %v: not in (0, 1]", m, p)
		}
	}
	for k := range popRef {
		for m, p := range popRef[k] {
			if !(p > 0 && p <= 1) {
				return fmt.Errorf("reference model %d, population sample %d: probability %v not in (0, 1]", k, m, p)
			}
		}
	}
	return nil
}
