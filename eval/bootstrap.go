package eval

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Mean of the finite values; NaN when there are none.
func Mean(xs []float64) float64 {
	var s float64
	n := 0
	for _, x := range xs {
		if !math.IsNaN(x) {
			s += x
			n++
		}
	}
	if n == 0 {
		return nan()
	}
	return s / float64(n)
}

// BootstrapCI is the percentile bootstrap 95 % interval of the mean of xs
// (NaN values left out) from b resamples drawn with a PCG generator seeded
// by seed: the same inputs give the same interval on every machine.
func BootstrapCI(xs []float64, b int, seed uint64) (lo, hi float64) {
	v := finite(xs)
	if len(v) == 0 || b <= 0 {
		return nan(), nan()
	}
	rng := rand.New(rand.NewPCG(seed, 0x626f6f7473747270))
	means := make([]float64, b)
	n := len(v)
	for r := range means {
		var s float64
		for range n {
			s += v[rng.IntN(n)]
		}
		means[r] = s / float64(n)
	}
	sort.Float64s(means)
	return quantile(means, 0.025), quantile(means, 0.975)
}

// quantile of sorted xs with linear interpolation (numpy's default).
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	i := int(math.Floor(pos))
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	f := pos - float64(i)
	return sorted[i] + f*(sorted[i+1]-sorted[i])
}

// WilsonCI is the Wilson score 95 % interval of a proportion of k in n. A
// percentile bootstrap collapses to [0, 0] when nothing was extracted; the
// Wilson interval still says how large the rate could be (0 of 4: up to 0.49).
func WilsonCI(k, n int) (lo, hi float64) {
	if n == 0 {
		return nan(), nan()
	}
	const z = 1.959963984540054
	p, fn := float64(k)/float64(n), float64(n)
	den := 1 + z*z/fn
	center := (p + z*z/(2*fn)) / den
	half := z / den * math.Sqrt(p*(1-p)/fn+z*z/(4*fn*fn))
	return math.Max(0, center-half), math.Min(1, center+half)
}

// MIABootstrap is the stratified percentile bootstrap of one membership
// statistic (higher means member): each of b resamples draws len(members)
// members from the members and len(controls) controls from the controls,
// with replacement, so every resample keeps both class sizes; a bootstrap
// over the pooled documents could draw a resample without controls, whose
// AUC is undefined. It returns the 95 % intervals of AUC and of TPRAtFPR at
// each of fprs, from a PCG generator seeded by seed. NaN scores are left
// out; the intervals are NaN when either class is empty or b = 0.
func MIABootstrap(members, controls, fprs []float64, b int, seed uint64) (auc [2]float64, tpr [][2]float64) {
	m, c := finite(members), finite(controls)
	tpr = make([][2]float64, len(fprs))
	auc = [2]float64{nan(), nan()}
	for i := range tpr {
		tpr[i] = [2]float64{nan(), nan()}
	}
	if len(m) == 0 || len(c) == 0 || b <= 0 {
		return auc, tpr
	}
	rng := rand.New(rand.NewPCG(seed, 0x6d69612d626f6f74))
	aucs := make([]float64, b)
	tprs := make([][]float64, len(fprs))
	for i := range tprs {
		tprs[i] = make([]float64, b)
	}
	rm, rc := make([]float64, len(m)), make([]float64, len(c))
	for r := range b {
		for i := range rm {
			rm[i] = m[rng.IntN(len(m))]
		}
		for i := range rc {
			rc[i] = c[rng.IntN(len(c))]
		}
		aucs[r] = AUC(rm, rc)
		sort.Sort(sort.Reverse(sort.Float64Slice(rm)))
		sort.Sort(sort.Reverse(sort.Float64Slice(rc)))
		for i, f := range fprs {
			tprs[i][r] = tprSorted(rm, rc, f)
		}
	}
	sort.Float64s(aucs)
	auc = [2]float64{quantile(aucs, 0.025), quantile(aucs, 0.975)}
	for i := range fprs {
		sort.Float64s(tprs[i])
		tpr[i] = [2]float64{quantile(tprs[i], 0.025), quantile(tprs[i], 0.975)}
	}
	return auc, tpr
}
