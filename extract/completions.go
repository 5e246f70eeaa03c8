package extract

import (
	"github.com/memo-research/memo/eval"
	"math"
	"sort"
)

// meanAndMinK summarizes per-token losses: their mean and the mean of the
// eval.MinKCount(n, frac) largest, int(n·frac) truncated but at least one
// (Min-K% Prob as a loss). NaN for no tokens.
func meanAndMinK(l []float32, frac float64) (mean, mink float64) {
	if len(l) == 0 {
		return math.NaN(), math.NaN()
	}
	s := append([]float32(nil), l...)
	var sum float64
	for _, x := range s {
		sum += float64(x)
	}
	sort.Slice(s, func(i, j int) bool { return s[i] > s[j] })
	k := eval.MinKCount(len(s), frac)
	var top float64
	for _, x := range s[:k] {
		top += float64(x)
	}
	return sum / float64(len(s)), top / float64(k)
}
