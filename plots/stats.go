// Statistics of results (rates, intervals, ROC, AUC, TPR) are not here:
// they are eval's, read from summary.json or computed by eval's functions.

package plots

import "math"

// movingAverage smooths y with a window of w points centred on each
// (from i-(w-1)/2 to i+w/2, cut short at the ends), skipping NaNs, so a
// loss curve reads as a trend rather than per-step noise. A trailing
// window drew the trend (w-1)/2 steps late, behind the validation
// points drawn at their own steps.
func movingAverage(y []float64, w int) []float64 {
	if w <= 1 {
		return y
	}
	// Prefix sums of the numbers and counts of y[:i].
	sum, cnt := make([]float64, len(y)+1), make([]int, len(y)+1)
	for i, v := range y {
		sum[i+1], cnt[i+1] = sum[i], cnt[i]
		if !math.IsNaN(v) {
			sum[i+1] += v
			cnt[i+1]++
		}
	}
	out := make([]float64, len(y))
	for i := range y {
		lo, hi := max(0, i-(w-1)/2), min(len(y), i+w/2+1)
		if n := cnt[hi] - cnt[lo]; n > 0 {
			out[i] = (sum[hi] - sum[lo]) / float64(n)
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
