// Package dpaccount is the privacy accountant of DP-SGD: the Rényi
// differential privacy (RDP) of the sampled Gaussian mechanism (Mironov,
// Talwar and Zhang 2019, arXiv 1908.10530, section 3.3) composed over the
// steps of a run and converted to (ε, δ)-DP. It follows Opacus's RDP
// accountant (opacus/accountants/rdp.py and analysis/rdp.py) in its orders,
// its formulas and its conversion, so that memo's ε is the number a
// researcher using Opacus would report for the same (q, σ, steps, δ).
// Pure Go: `memo dp-epsilon` and `memo config` use it without libtorch.
package dpaccount

import (
	"errors"
	"fmt"
	"math"
)

// DefaultOrders are the Rényi orders α at which ε is optimised: Opacus's
// RDPAccountant.DEFAULT_ALPHAS, [1 + x/10 for x in 1..99] + [12..63].
// Kept identical so that the optimum, and so ε, is the same as Opacus's.
func DefaultOrders() []float64 {
	orders := make([]float64, 0, 99+52)
	for x := 1; x < 100; x++ {
		orders = append(orders, 1+float64(x)/10.0)
	}
	for a := 12; a < 64; a++ {
		orders = append(orders, float64(a))
	}
	return orders
}

// Phase is a run of identical steps of the mechanism: Steps steps, each
// drawing every example with probability SampleRate (Poisson sampling) and
// adding Gaussian noise of standard deviation Noise times the clipping
// norm. A run whose σ or q changes is several phases (RDP composes by sum).
type Phase struct {
	SampleRate float64
	Noise      float64
	Steps      int64
}

// Validate reports a phase the accountant cannot account: q outside
// (0, 1], σ < 0 or not finite, no steps.
func (p Phase) Validate() error {
	switch {
	case !(p.SampleRate > 0 && p.SampleRate <= 1):
		return fmt.Errorf("sample rate %v: must be in (0, 1]", p.SampleRate)
	case !(p.Noise >= 0) || math.IsInf(p.Noise, 0):
		return fmt.Errorf("noise multiplier %v: must be >= 0 and finite", p.Noise)
	case p.Steps < 1:
		return fmt.Errorf("steps %d: must be >= 1", p.Steps)
	}
	return nil
}

// RDP is the Rényi DP of one step of the sampled Gaussian mechanism at
// order alpha (> 1): +Inf for σ = 0, α/(2σ²) for q = 1 (the Gaussian
// mechanism itself, exact), else log(A_α)/(α−1) with A_α as in Mironov et
// al. section 3.3 (a finite sum for integer α, two series for fractional α).
func RDP(q, sigma, alpha float64) (float64, error) {
	switch {
	case q == 0:
		return 0, nil
	case sigma == 0:
		return math.Inf(1), nil
	case q == 1:
		return alpha / (2 * sigma * sigma), nil
	case math.IsInf(alpha, 1):
		return math.Inf(1), nil
	}
	var logA float64
	var err error
	if alpha == math.Trunc(alpha) {
		logA = logAInt(q, sigma, int(alpha))
	} else {
		logA, err = logAFrac(q, sigma, alpha)
		if err != nil {
			return 0, fmt.Errorf("RDP at q=%v σ=%v α=%v: %w", q, sigma, alpha, err)
		}
	}
	return logA / (alpha - 1), nil
}

// logAInt is log A_α for integer α: log Σ_i C(α,i) q^i (1−q)^(α−i)
// exp((i²−i)/(2σ²)), summed in log space because the terms overflow.
func logAInt(q, sigma float64, alpha int) float64 {
	logA := math.Inf(-1)
	lq, l1q := math.Log(q), math.Log1p(-q)
	for i := 0; i <= alpha; i++ {
		fi := float64(i)
		s := logBinomInt(alpha, i) + fi*lq + float64(alpha-i)*l1q + (fi*fi-fi)/(2*sigma*sigma)
		logA = logAdd(logA, s)
	}
	return logA
}

// logAFrac is log A_α for fractional α: the two integrals over (−∞, z0]
// and [z0, ∞) as series in the generalised binomial coefficients, stopped
// when both terms fall below e^−30 (as Opacus and TF Privacy stop).
func logAFrac(q, sigma, alpha float64) (float64, error) {
	logA0, logA1 := math.Inf(-1), math.Inf(-1)
	z0 := sigma*sigma*math.Log(1/q-1) + 0.5
	lq, l1q := math.Log(q), math.Log1p(-q)
	coef := 1.0 // C(α, 0); C(α, i) = C(α, i−1)·(α−i+1)/i
	for i := 0; ; i++ {
		if i > 0 {
			coef *= (alpha - float64(i) + 1) / float64(i)
		}
		if i > 1_000_000 {
			return 0, errors.New("series did not converge")
		}
		fi := float64(i)
		j := alpha - fi
		logCoef := math.Log(math.Abs(coef))
		logT0 := logCoef + fi*lq + j*l1q
		logT1 := logCoef + j*lq + fi*l1q
		logE0 := math.Log(0.5) + logErfc((fi-z0)/(math.Sqrt2*sigma))
		logE1 := math.Log(0.5) + logErfc((z0-j)/(math.Sqrt2*sigma))
		logS0 := logT0 + (fi*fi-fi)/(2*sigma*sigma) + logE0
		logS1 := logT1 + (j*j-j)/(2*sigma*sigma) + logE1
		if coef > 0 {
			logA0 = logAdd(logA0, logS0)
			logA1 = logAdd(logA1, logS1)
		} else {
			var err error
			if logA0, err = logSub(logA0, logS0); err != nil {
				return 0, err
			}
			if logA1, err = logSub(logA1, logS1); err != nil {
				return 0, err
			}
		}
		if math.Max(logS0, logS1) < -30 {
			break
		}
	}
	return logAdd(logA0, logA1), nil
}

// Epsilon is the ε at delta of the composition of phases, minimised over
// orders (DefaultOrders when nil), and the order that attains it. The
// conversion is Balle et al. 2020 (arXiv 1905.09982, Theorem 21), the one
// Opacus's get_privacy_spent uses:
//
//	ε(α) = RDP(α) − (log δ + log α)/(α−1) + log((α−1)/α).
//
// It is tighter than Mironov's RDP(α) + log(1/δ)/(α−1). A negative optimum
// (possible for tiny q) is reported as 0, which is always a valid bound.
func Epsilon(phases []Phase, delta float64, orders []float64) (eps, order float64, err error) {
	if !(delta > 0 && delta < 1) {
		return 0, 0, fmt.Errorf("delta %v: must be in (0, 1)", delta)
	}
	if len(phases) == 0 {
		return 0, 0, errors.New("no phases to account")
	}
	if orders == nil {
		orders = DefaultOrders()
	}
	rdp := make([]float64, len(orders))
	for _, p := range phases {
		if err := p.Validate(); err != nil {
			return 0, 0, err
		}
		for k, a := range orders {
			if !(a > 1) {
				return 0, 0, fmt.Errorf("order %v: must be > 1", a)
			}
			r, err := RDP(p.SampleRate, p.Noise, a)
			if err != nil {
				return 0, 0, err
			}
			rdp[k] += r * float64(p.Steps)
		}
	}
	return EpsilonFromRDP(orders, rdp, delta)
}

// EpsilonFromRDP is the conversion alone: ε at delta from the composed RDP
// values rdp at orders (same length), minimised over the orders.
func EpsilonFromRDP(orders, rdp []float64, delta float64) (eps, order float64, err error) {
	if len(orders) != len(rdp) || len(orders) == 0 {
		return 0, 0, fmt.Errorf("%d orders and %d RDP values: want the same, at least one", len(orders), len(rdp))
	}
	if !(delta > 0 && delta < 1) {
		return 0, 0, fmt.Errorf("delta %v: must be in (0, 1)", delta)
	}
	eps, order = math.Inf(1), math.NaN()
	for k, a := range orders {
		e := rdp[k] - (math.Log(delta)+math.Log(a))/(a-1) + math.Log((a-1)/a)
		if e < eps { // NaN and +Inf never win, as with Opacus's nanargmin
			eps, order = e, a
		}
	}
	return math.Max(eps, 0), order, nil
}

// EpsilonOf is Epsilon for one phase at the default orders.
func EpsilonOf(q, sigma float64, steps int64, delta float64) (float64, error) {
	eps, _, err := Epsilon([]Phase{{SampleRate: q, Noise: sigma, Steps: steps}}, delta, nil)
	return eps, err
}

// MaxNoise bounds the noise search, as Opacus's MAX_SIGMA does: a target
// that needs more noise is unreachable.
const MaxNoise = 1e6

// ErrUnreachable is a target ε that no noise multiplier up to MaxNoise
// reaches.
var ErrUnreachable = errors.New("no noise multiplier up to 1e6 reaches it")

// NoiseFor is the noise multiplier σ whose ε at delta after steps steps of
// sampling rate q is at most target and within tolerance below it. It is
// Opacus's get_noise_multiplier search (double σ from 20 until ε ≤ target,
// then bisect [0, σ] until target − ε ≤ tolerance), so that it returns
// Opacus's σ to the digit; the tolerance is Opacus's 0.01, narrowed to 1 %
// of the target for targets below 1 so that ε is always within 1 % of it.
func NoiseFor(target, q float64, steps int64, delta float64) (float64, error) {
	if !(target > 0) || math.IsInf(target, 0) {
		return 0, fmt.Errorf("target epsilon %v: must be > 0 and finite", target)
	}
	if err := (Phase{SampleRate: q, Noise: 1, Steps: steps}).Validate(); err != nil {
		return 0, err
	}
	tol := math.Min(0.01, target/100)
	lo, hi := 0.0, 10.0
	epsHi := math.Inf(1)
	for epsHi > target {
		hi *= 2
		e, err := EpsilonOf(q, hi, steps, delta)
		if err != nil {
			return 0, err
		}
		epsHi = e
		if hi > MaxNoise {
			return 0, fmt.Errorf("target epsilon %v at delta %v, sample rate %v, %d steps: %w", target, delta, q, steps, ErrUnreachable)
		}
	}
	for target-epsHi > tol {
		mid := (lo + hi) / 2
		if mid == lo || mid == hi {
			// Past about ε = 1e14 neighbouring σ are more than tol
			// apart in ε: hi is the closest there is.
			break
		}
		e, err := EpsilonOf(q, mid, steps, delta)
		if err != nil {
			return 0, err
		}
		if e < target {
			hi, epsHi = mid, e
		} else {
			lo = mid
		}
	}
	return hi, nil
}
