package plots

import (
	"math"
	"sort"
)

// z95 is the two-sided 95 % standard-normal quantile.
const z95 = 1.959963984540054

// wilson is the Wilson score interval for k successes in n trials. Unlike the
// normal approximation it stays inside [0, 1] at 0 % and 100 %, which is where
// memorization results live.
func wilson(k, n int) (p, lo, hi float64) {
	if n == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	p = float64(k) / float64(n)
	nn := float64(n)
	z2 := z95 * z95
	den := 1 + z2/nn
	mid := (p + z2/(2*nn)) / den
	half := z95 * math.Sqrt(p*(1-p)/nn+z2/(4*nn*nn)) / den
	return p, math.Max(0, mid-half), math.Min(1, mid+half)
}

func exactRate(docs []docScore) (p, lo, hi float64, n int) {
	k := 0
	for _, d := range docs {
		if d.Exact {
			k++
		}
	}
	p, lo, hi = wilson(k, len(docs))
	return p, lo, hi, len(docs)
}

func meanRouge(docs []docScore) float64 {
	if len(docs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, d := range docs {
		s += d.RougeL
	}
	return s / float64(len(docs))
}

// rocPoint is one threshold of a ROC curve.
type rocPoint struct{ FPR, TPR float64 }

// roc scores members against non-members where a lower score means "member"
// (all memo's MIA scores are losses). Tied scores advance both rates together,
// so the curve and its area do not depend on input order.
func roc(members, nonmembers []float64) []rocPoint {
	type item struct {
		s   float64
		pos bool
	}
	var items []item
	for _, v := range members {
		if !math.IsNaN(v) {
			items = append(items, item{v, true})
		}
	}
	np := len(items)
	for _, v := range nonmembers {
		if !math.IsNaN(v) {
			items = append(items, item{v, false})
		}
	}
	nn := len(items) - np
	if np == 0 || nn == 0 {
		return nil
	}
	sort.Slice(items, func(i, j int) bool { return items[i].s < items[j].s })
	pts := []rocPoint{{0, 0}}
	tp, fp := 0, 0
	for i := 0; i < len(items); {
		j := i
		for j < len(items) && items[j].s == items[i].s {
			if items[j].pos {
				tp++
			} else {
				fp++
			}
			j++
		}
		pts = append(pts, rocPoint{float64(fp) / float64(nn), float64(tp) / float64(np)})
		i = j
	}
	return pts
}

// auc integrates a ROC curve with the trapezoid rule.
func auc(pts []rocPoint) float64 {
	if len(pts) < 2 {
		return math.NaN()
	}
	a := 0.0
	for i := 1; i < len(pts); i++ {
		a += (pts[i].FPR - pts[i-1].FPR) * (pts[i].TPR + pts[i-1].TPR) / 2
	}
	return a
}

// tprAt is the highest true-positive rate at a false-positive rate <= fpr.
func tprAt(pts []rocPoint, fpr float64) float64 {
	if len(pts) == 0 {
		return math.NaN()
	}
	best := 0.0
	for _, p := range pts {
		if p.FPR <= fpr && p.TPR > best {
			best = p.TPR
		}
	}
	return best
}

// movingAverage smooths y with a trailing window, skipping NaNs, so a loss
// curve reads as a trend rather than per-step noise.
func movingAverage(y []float64, w int) []float64 {
	if w <= 1 {
		return y
	}
	out := make([]float64, len(y))
	sum, cnt := 0.0, 0
	for i, v := range y {
		if !math.IsNaN(v) {
			sum += v
			cnt++
		}
		if i >= w && !math.IsNaN(y[i-w]) {
			sum -= y[i-w]
			cnt--
		}
		if cnt > 0 {
			out[i] = sum / float64(cnt)
		} else {
			out[i] = math.NaN()
		}
	}
	return out
}

// colorRGBA is a plain RGBA colour (image/color.RGBA without the import in
// every figure file).
type colorRGBA struct{ R, G, B, A uint8 }

func (c colorRGBA) RGBA() (r, g, b, a uint32) {
	return uint32(c.R) * 0x101, uint32(c.G) * 0x101, uint32(c.B) * 0x101, uint32(c.A) * 0x101
}

// meanCI is the mean RougeL of docs with a 95 % normal-approximation
// interval, clipped to [0, 1].
func meanCI(docs []docScore) (mean, lo, hi float64) {
	n := float64(len(docs))
	mean = meanRouge(docs)
	if len(docs) < 2 {
		return mean, mean, mean
	}
	ss := 0.0
	for _, d := range docs {
		ss += (d.RougeL - mean) * (d.RougeL - mean)
	}
	half := z95 * math.Sqrt(ss/(n-1)/n)
	return mean, math.Max(0, mean-half), math.Min(1, mean+half)
}
