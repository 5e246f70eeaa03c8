package calibrated

import (
	"fmt"
	"math"
)

// sigmaFloor is added to every standard deviation, as Carlini et al.'s
// plot.py adds 1e-30, so that constant reference values divide by a tiny
// σ instead of zero: the score stays finite for realistic signal gaps.
const sigmaFloor = 1e-30

// LiRAOptions configures LiRAOnline and LiRAOffline.
type LiRAOptions struct {
	// GlobalVariance gives every candidate one σin² and one σout², the
	// within-candidate variance pooled over the candidates with two or
	// more values on that side, instead of its own: steadier with few
	// reference models, where Carlini et al. 2022 report a fixed variance
	// helps. See the package doc for why we pool within candidates and
	// what stands in when no candidate has two values.
	GlobalVariance bool
}

// LiRAOnline is the online likelihood-ratio attack of Carlini et al. 2022
// (arXiv 2112.03570): with Gaussians fitted to candidate j's IN and OUT
// reference values, the score is log N(t; μin, σin²) − log N(t; μout, σout²)
// at t = target[j] (its limit at an infinite t). Higher means member. A
// candidate with no IN or no OUT value is NaN; K must be >= 2.
func LiRAOnline(target []float64, signal [][]float64, in [][]bool, opt LiRAOptions) ([]float64, error) {
	fit, err := fitLiRA(target, signal, in, opt, 2)
	if err != nil {
		return nil, fmt.Errorf("calibrated: LiRAOnline: %w", err)
	}
	out := make([]float64, len(target))
	for j, t := range target {
		g := fit[j]
		if g.nIn == 0 || g.nOut == 0 {
			out[j] = math.NaN()
			continue
		}
		out[j] = logRatio(t, g)
	}
	return out, nil
}

// logRatio is log N(t; μin, σin²) − log N(t; μout, σout²). At an infinite
// t (the target gave a token probability 0) both terms are −Inf and their
// difference NaN, which dropped the candidate from the AUC; the limit is
// taken instead: the sign of the t² term, ½(1/σout² − 1/σin²), else of
// the t term, (μin − μout)·t, else 0 for one Gaussian on both sides.
func logRatio(t float64, g gauss) float64 {
	if !math.IsInf(t, 0) {
		return logNormal(t, g.muIn, g.sdIn) - logNormal(t, g.muOut, g.sdOut)
	}
	if a := 1/(g.sdOut*g.sdOut) - 1/(g.sdIn*g.sdIn); a != 0 {
		return math.Copysign(math.Inf(1), a)
	}
	if d := g.muIn - g.muOut; d != 0 {
		return math.Copysign(math.Inf(1), d*math.Copysign(1, t))
	}
	return 0
}

// LiRAOffline is the offline attack of Carlini et al. 2022, which needs no
// model trained on the candidate: the one-sided test
// log Φ((t − μout)/σout), the log-probability that an OUT model scores
// below the target's t. Higher means member. A candidate with no OUT
// value is NaN; K must be >= 1.
func LiRAOffline(target []float64, signal [][]float64, in [][]bool, opt LiRAOptions) ([]float64, error) {
	fit, err := fitLiRA(target, signal, in, opt, 1)
	if err != nil {
		return nil, fmt.Errorf("calibrated: LiRAOffline: %w", err)
	}
	out := make([]float64, len(target))
	for j, t := range target {
		g := fit[j]
		if g.nOut == 0 {
			out[j] = math.NaN()
			continue
		}
		out[j] = logNormalCDF((t - g.muOut) / g.sdOut)
	}
	return out, nil
}

// gauss is one candidate's fitted IN and OUT Gaussians; σ includes
// sigmaFloor.
type gauss struct {
	muIn, sdIn, muOut, sdOut float64
	nIn, nOut                int
}

func fitLiRA(target []float64, signal [][]float64, in [][]bool, opt LiRAOptions, minK int) ([]gauss, error) {
	if err := checkRefs(signal, in, len(target), minK); err != nil {
		return nil, err
	}
	fit := make([]gauss, len(target))
	var poolIn, poolOut pool
	for j := range fit {
		mi, mo := finiteMoments(refMoments(signal, in, j, true)), finiteMoments(refMoments(signal, in, j, false))
		fit[j] = gauss{
			muIn: mi.mean, sdIn: sd(mi.ss, mi.n),
			muOut: mo.mean, sdOut: sd(mo.ss, mo.n),
			nIn: mi.n, nOut: mo.n,
		}
		poolIn.add(mi)
		poolOut.add(mo)
	}
	if opt.GlobalVariance {
		gIn := poolIn.sd(signal, in, true)
		gOut := poolOut.sd(signal, in, false)
		for j := range fit {
			fit[j].sdIn, fit[j].sdOut = gIn, gOut
		}
	}
	return fit, nil
}

// finiteMoments is m, or no values when one of them is not finite: the
// candidate then scores NaN, as one with no values on that side does,
// and adds nothing to the shared variance. (An infinite value gives a
// NaN spread, which pooled would make every candidate NaN.)
func finiteMoments(m moments) moments {
	if math.IsNaN(m.ss) || math.IsInf(m.ss, 0) || math.IsInf(m.mean, 0) {
		return moments{mean: math.NaN(), ss: math.NaN()}
	}
	return m
}

// pool sums the within-candidate squared deviations of one side (IN or
// OUT) over the candidates with at least two values there: a candidate
// with one value deviates from its own mean by nothing, and counting it
// would pull the shared variance towards zero (to exactly zero at K <= 2
// offline, where every candidate has one OUT value).
type pool struct {
	ss float64
	n  int
}

func (p *pool) add(m moments) {
	if m.n >= 2 {
		p.ss, p.n = p.ss+m.ss, p.n+m.n
	}
}

// sd is the pooled σ of side want, plus sigmaFloor. With no candidate
// holding two values there is no within-candidate spread to pool; it is
// then the spread of all the side's finite values around their one mean, which
// is plot.py's fix_variance (np.std of every value): wider than the noise
// of one candidate, but shared, so that scores still rank by the gap to
// each candidate's mean.
func (p pool) sd(signal [][]float64, in [][]bool, want bool) float64 {
	if p.n > 0 {
		return sd(p.ss, p.n)
	}
	all := momentsOf(func(yield func(float64) bool) {
		for k := range signal {
			for j, v := range signal[k] {
				if in[k][j] == want && !math.IsNaN(v) && !math.IsInf(v, 0) && !yield(v) {
					return
				}
			}
		}
	})
	return sd(all.ss, all.n)
}

// sd is the population standard deviation (numpy's np.std, ddof 0) of n
// values whose squared deviations sum to ss, plus sigmaFloor; NaN for none.
func sd(ss float64, n int) float64 {
	if n == 0 {
		return math.NaN()
	}
	return math.Sqrt(ss/float64(n)) + sigmaFloor
}

// halfLog2Pi is ½·ln(2π).
var halfLog2Pi = 0.5 * math.Log(2*math.Pi)

// logNormal is the log density of N(mu, sd²) at x.
func logNormal(x, mu, sd float64) float64 {
	z := (x - mu) / sd
	return -halfLog2Pi - math.Log(sd) - 0.5*z*z
}

// logNormalCDF is log Φ(z) for the standard normal, accurate in both
// tails. Above 0 it is log1p(−Φ(−z)), so Φ near 1 keeps the digits of its
// small complement; from −30 to 0 it is the log of ½·erfc(−z/√2), whose
// tail Go computes to full relative precision; below −30, where erfc
// heads to underflow, it uses the asymptotic series of Mills' ratio
// (Abramowitz & Stegun 26.2.12),
// Φ(z) = φ(z)/(−z) · (1 − 1/z² + 3/z⁴ − 15/z⁶ + 105/z⁸ − 945/z¹⁰ + …),
// whose first omitted term, 10395/z¹², is below 2e-14 there.
func logNormalCDF(z float64) float64 {
	switch {
	case math.IsNaN(z):
		return z
	case z > 0:
		return math.Log1p(-0.5 * math.Erfc(z/math.Sqrt2))
	case z >= -30:
		return math.Log(0.5 * math.Erfc(-z/math.Sqrt2))
	}
	r := 1 / (z * z)
	series := 1 - r*(1-r*(3-r*(15-r*(105-r*945))))
	return -0.5*z*z - math.Log(-z) - halfLog2Pi + math.Log(series)
}

// LogitOfLogProb is the LiRA signal of a sequence whose log-probability
// under a model is logp: logit(p) = log p − log(1 − p), the sequence-level
// analogue of the class-probability logit of Carlini et al.'s score.py. It
// uses log(−expm1(logp)) for log(1 − p), which stays exact for p near 1
// (logp = −1e-20 gives 46.05…, where 1 − exp(logp) rounds to 0).
//
// 1 − p is floored at 1e-45, as score.py adds 1e-45 to it, so that a
// window every token of which the model predicts with float32 certainty
// (summed loss exactly 0, which a memorized window under an IN reference
// reaches) scores ln 1e45 ≈ 103.6 rather than +Inf: an infinity there
// made its mean and, with a pooled variance, every candidate's score NaN.
// logp >= 0 is taken as p = 1. p itself is not floored (score.py's
// log(p + 1e-45) would tie every window below e^−103.6, most of them).
// −Inf for logp = −Inf.
func LogitOfLogProb(logp float64) float64 {
	logp = min(logp, 0)
	return logp - math.Log(max(-math.Expm1(logp), oneMinusPFloor))
}

// oneMinusPFloor is score.py's 1e-45, the least 1 − p LogitOfLogProb
// takes.
const oneMinusPFloor = 1e-45
