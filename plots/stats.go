// Statistics of results (rates, intervals, ROC, AUC, TPR) are not here:
// they are eval's, read from summary.json or computed by eval's functions.

package plots

import "math"

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
