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
