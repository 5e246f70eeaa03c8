package eval

import (
	"fmt"
	"math"
	"sort"

	"github.com/memo-research/memo/internal/czlib"
)

func nan() float64 { return math.NaN() }

// ZlibLen is len(zlib.compress(text)) as Python computes it (C zlib at the
// default level 6), the denominator of the zlib ratio of the goldfish
// reference's eval/mia.py and Carlini et al. 2021. Go's compress/zlib is
// another deflate, with lengths up to 8 bytes apart on these texts.
func ZlibLen(text string) int {
	n, err := czlib.Len([]byte(text))
	if err != nil { // compress2 fails only without memory
		panic(fmt.Sprintf("eval: %v", err))
	}
	return n
}

// MinKCount is how many of n tokens Min-K% and Min-K%++ average:
// int(n·frac) in float64, truncated, exactly as Shi et al.'s and Zhang
// et al.'s code take it (so at frac 0.7 and n 90 it is 62, as 0.7·90 is
// 62.99999999999999 in binary), but at least one where their code
// averages none (NaN, below 1/frac tokens), and at most n.
func MinKCount(n int, frac float64) int {
	return max(1, min(n, int(float64(n)*frac)))
}

// MeanLoss is the mean of the per-token losses; NaN when there are none.
func MeanLoss(tokenLosses []float32) float64 {
	if len(tokenLosses) == 0 {
		return nan()
	}
	var s float64
	for _, l := range tokenLosses {
		s += float64(l)
	}
	return s / float64(len(tokenLosses))
}

// MinK is Min-K% Prob as a loss: the mean negative log-probability of the
// MinKCount(n, frac) least likely tokens. Lower means the model
// finds even its hardest tokens easy, the sign of a member.
func MinK(tokenLosses []float32, frac float64) float64 {
	n := len(tokenLosses)
	if n == 0 {
		return nan()
	}
	k := MinKCount(n, frac)
	s := append([]float32(nil), tokenLosses...)
	// A NaN loss makes the score NaN, as MeanLoss's: sorted with >, a NaN
	// landed among the k or not by where it stood in the window.
	for _, l := range s {
		if l != l {
			return nan()
		}
	}
	sort.Slice(s, func(i, j int) bool { return s[i] > s[j] })
	var sum float64
	for _, l := range s[:k] {
		sum += float64(l)
	}
	return sum / float64(k)
}

// AUC is the area under the ROC curve of scores where higher means member:
// the Mann-Whitney statistic P(m > c) + ½·P(m = c) over all member-control
// pairs. NaN scores are left out; NaN when either side is empty.
func AUC(members, controls []float64) float64 {
	m, c := finite(members), finite(controls)
	if len(m) == 0 || len(c) == 0 {
		return nan()
	}
	type item struct {
		v      float64
		member bool
	}
	all := make([]item, 0, len(m)+len(c))
	for _, v := range m {
		all = append(all, item{v, true})
	}
	for _, v := range c {
		all = append(all, item{v, false})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	// Walk groups of equal scores: a member beats every control below its
	// group and ties with the controls inside it.
	var wins float64
	below := 0
	for i := 0; i < len(all); {
		j := i
		nm, nc := 0, 0
		for ; j < len(all) && all[j].v == all[i].v; j++ {
			if all[j].member {
				nm++
			} else {
				nc++
			}
		}
		wins += float64(nm) * (float64(below) + 0.5*float64(nc))
		below += nc
		i = j
	}
	return wins / (float64(len(m)) * float64(len(c)))
}

// TPRAtFPR is the highest true positive rate among thresholds t (flagging
// scores >= t as members) whose false positive rate is strictly below fpr,
// as mimir and LiRA read a ROC curve (tpr[fpr < limit]): with 100 controls,
// TPR at 1 % FPR allows no false positive. Tied scores share one threshold,
// so a tie straddling the limit is not split; with no threshold under the
// limit but the one above every score, the TPR is 0. NaN when either side
// is empty.
func TPRAtFPR(members, controls []float64, fpr float64) float64 {
	m, c := finite(members), finite(controls)
	if len(m) == 0 || len(c) == 0 {
		return nan()
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(m)))
	sort.Sort(sort.Reverse(sort.Float64Slice(c)))
	return tprSorted(m, c, fpr)
}

// tprSorted is TPRAtFPR on finite scores sorted in decreasing order.
func tprSorted(m, c []float64, fpr float64) float64 {
	best := 0.0
	thresholds(m, c, func(tp, fp int) bool {
		// fp/len(c) and fpr are both correctly rounded, so an FPR equal to
		// the limit (1 of 100 at 0.01) compares equal and is excluded.
		if float64(fp)/float64(len(c)) >= fpr {
			return false
		}
		best = float64(tp) / float64(len(m))
		return true
	})
	return best
}

// thresholds walks the distinct scores t of m and c (finite, sorted in
// decreasing order) from the highest, calling visit with how many members
// (tp) and controls (fp) score >= t, until visit returns false. Tied scores
// are one threshold: they are never split.
func thresholds(m, c []float64, visit func(tp, fp int) bool) {
	i, j := 0, 0
	for i < len(m) || j < len(c) {
		t := math.Inf(-1)
		if i < len(m) {
			t = m[i]
		}
		if j < len(c) && c[j] > t {
			t = c[j]
		}
		for i < len(m) && m[i] >= t {
			i++
		}
		for j < len(c) && c[j] >= t {
			j++
		}
		if !visit(i, j) {
			return
		}
	}
}

// ROCPoint is one threshold of a ROC curve.
type ROCPoint struct{ FPR, TPR float64 }

// ROC is the curve of scores where higher means member, from (0, 0) to
// (1, 1), one point per distinct score: tied scores move both rates
// together, so the curve does not depend on input order, and its
// trapezoid area is AUC's Mann-Whitney statistic. NaN scores are left out;
// nil when either side is empty. Figures draw this curve so that it is the
// one eval's AUC and TPRAtFPR summarize.
func ROC(members, controls []float64) []ROCPoint {
	m, c := finite(members), finite(controls)
	if len(m) == 0 || len(c) == 0 {
		return nil
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(m)))
	sort.Sort(sort.Reverse(sort.Float64Slice(c)))
	pts := []ROCPoint{{0, 0}}
	thresholds(m, c, func(tp, fp int) bool {
		pts = append(pts, ROCPoint{FPR: float64(fp) / float64(len(c)), TPR: float64(tp) / float64(len(m))})
		return true
	})
	return pts
}

func finite(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			out = append(out, x)
		}
	}
	return out
}
