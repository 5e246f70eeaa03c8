package engine

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// sampleRows runs sampleColumns on logits [rows, v] (flat, float32,
// converted to dt) on dev with the draws u and returns each row's token,
// its log-probability, and its log-probability among the candidates
// (warpedLogProbs).
func sampleRows(t *testing.T, flat []float32, rows int, u []float64, w Warpers, dt gotch.DType, dev gotch.Device) (toks []int64, lps, warpedLPs []float64) {
	t.Helper()
	x := ts.MustOfSlice(flat).MustView([]int64{int64(rows), -1}, true).MustTotype(dt, true).MustTo(dev, true)
	uc := ts.MustOfSlice(u).MustView([]int64{int64(rows), 1}, true).MustTo(dev, true)
	torchx.NoGrad(func() {
		tok, tokCol, lpCol, topCol := sampleColumns(x, uc, w)
		wlp, top := warpedLogProbs(x, tok, w)
		top.MustDrop()
		warpedLPs = wlp.MustTo(gotch.CPU, true).Float64Values()
		toks = tok.MustTo(gotch.CPU, true).Int64Values()
		tokCol.MustDrop()
		topCol.MustDrop()
		lps = lpCol.MustTo(gotch.CPU, true).Float64Values()
	})
	x.MustDrop()
	uc.MustDrop()
	return toks, lps, warpedLPs
}

// sampleColumns must draw what its definition says on every device: the
// log-probability is log_softmax's at temperature 1 (checked against one
// worked in Go), the drawn token is a candidate (warpedLogProbs finite,
// and at temperature 1 at least its untruncated log-probability, to
// rounding), top-k 1 and a top-p below any token's mass are the first
// maximum with probability 1 among the candidates (ties included, the
// logits rounded to bfloat16 so that many are equal), a draw of 0 is the most likely candidate, and, on a GPU
// (scripts/gpu/issue41-next.sh runs it there), the tokens are the CPU's
// for the same logits and draws, with both log-probabilities within 1e-12.
func TestSampleColumns(t *testing.T) {
	const rows, v = 48, 1000
	rng := rand.New(rand.NewPCG(3, 4))
	flat := make([]float32, rows*v)
	for i := range flat {
		flat[i] = float32(rng.NormFloat64() * 2)
		if i%v < 40 {
			flat[i] = float32(int(flat[i])) // ties among whole numbers
		}
	}
	u := make([]float64, rows)
	for i := range u {
		u[i] = rng.Float64()
	}
	devs := []gotch.Device{gotch.CPU}
	if gotch.CUDA.IsAvailable() {
		devs = append(devs, gotch.CudaBuilder(0))
	}
	warps := []Warpers{{1, 0, 1}, {0.7, 0, 1}, {1, 1, 1}, {1.3, 5, 1}, {1, 0, 0.9}, {0.9, 50, 0.5}, {1, 0, 1e-9}}
	for _, dt := range []gotch.DType{gotch.Float, gotch.BFloat16} {
		logits := make([]float32, len(flat)) // the values dt holds
		for i, x := range ts.MustOfSlice(flat).MustTotype(dt, true).Float64Values(true) {
			logits[i] = float32(x)
		}
		for _, w := range warps {
			cpuToks, cpuLPs, cpuWarped := sampleRows(t, flat, rows, u, w, dt, gotch.CPU)
			for r := 0; r < rows; r++ {
				row := logits[r*v : (r+1)*v]
				best, mx := 0, math.Inf(-1)
				for i, x := range row {
					if float64(x) > mx {
						best, mx = i, float64(x)
					}
				}
				var z float64
				for _, x := range row {
					z += math.Exp(float64(x) - mx)
				}
				tok := cpuToks[r]
				if want := float64(row[tok]) - mx - math.Log(z); math.Abs(cpuLPs[r]-want) > 1e-12 {
					t.Errorf("%v %+v row %d: log p of %d = %.15g, want %.15g", dt, w, r, tok, cpuLPs[r], want)
				}
				if (w.TopK == 1 || w.TopP < 1e-6) && (tok != int64(best) || cpuWarped[r] != 0) {
					t.Errorf("%v %+v row %d: drew %d (log p among the candidates %v), want the first maximum %d (0)", dt, w, r, tok, cpuWarped[r], best)
				}
				if lw := cpuWarped[r]; math.IsInf(lw, 0) || math.IsNaN(lw) || lw > 0 || lw < cpuLPs[r]-1e-12 && w.Temperature == 1 {
					t.Errorf("%v %+v row %d: drawn token's log p among the candidates %v (untruncated %v)", dt, w, r, lw, cpuLPs[r])
				}
			}
			for _, dev := range devs[1:] {
				toks, lps, warpedLPs := sampleRows(t, flat, rows, u, w, dt, dev)
				for r := range toks {
					if toks[r] != cpuToks[r] || math.Abs(lps[r]-cpuLPs[r]) > 1e-12 || math.Abs(warpedLPs[r]-cpuWarped[r]) > 1e-12 {
						t.Errorf("%v %v %+v row %d: drew %d (log p %.15g, among the candidates %.15g), the CPU %d (%.15g, %.15g)", dev, dt, w, r, toks[r], lps[r], warpedLPs[r], cpuToks[r], cpuLPs[r], cpuWarped[r])
					}
				}
			}
		}
		zero := make([]float64, rows)
		toks, _, _ := sampleRows(t, flat, rows, zero, Warpers{Temperature: 1, TopP: 1}, dt, gotch.CPU)
		for r, tok := range toks {
			row := logits[r*v : (r+1)*v]
			for i, x := range row {
				if x > row[tok] || x == row[tok] && int64(i) < tok {
					t.Errorf("%v row %d: a draw of 0 gave %d (%v), but %d holds %v", dt, r, tok, row[tok], i, x)
					break
				}
			}
		}
	}
}
