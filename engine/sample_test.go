package engine

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
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
	devs := testDevices()
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

// warped's top-k orders only k+tieSlack positions (topFirst) instead of
// sorting the row; it must give every token the probability the full
// sort gives it and draw the same token for the same uniform, and flag
// by a guard that is not finite exactly the rows it cannot decide: those
// whose ties at the k-th value may reach past the positions ordered, and
// those with a NaN (topk may pass over it).
func TestWarpedTopKWithoutSort(t *testing.T) {
	const rows, v = 24, 600
	rng := rand.New(rand.NewPCG(7, 8))
	flat := make([]float64, rows*v)
	for i := range flat {
		flat[i] = math.Round(rng.NormFloat64()*8) / 4 // quarters: ties everywhere
	}
	for i := 0; i < 100; i++ {
		flat[i*5] = 9 // row 0: 100 tokens share the largest value
	}
	for i := 0; i < 30; i++ {
		flat[v+i*7] = 9 // row 1: 30 do
	}
	flat[2*v+17] = math.NaN() // row 2: a NaN among the others
	u := make([]float64, rows)
	for i := range u {
		u[i] = rng.Float64()
	}
	devs := testDevices()
	// byID is each row's candidates' probabilities by token id, the id
	// drawn at u and the guard, on the host.
	byID := func(uc, probs, order, last, guard *ts.Tensor) (p []float64, toks []int64, g []float64) {
		host := func(t *ts.Tensor) *ts.Tensor { return t.MustTo(gotch.CPU, true) }
		p = host(ts.MustZeros([]int64{rows, v}, gotch.Double, probs.MustDevice()).MustScatter(1, order, probs, true)).Float64Values(true)
		below := probs.MustCumsum(1, gotch.Double, false).MustLeTensor(uc, true)
		pos := below.MustSumDimIntlist([]int64{1}, true, gotch.Int64, true).MustMinimum(last, true)
		toks = host(order.MustGather(1, pos, false, true)).Int64Values(true)
		g = host(guard).Float64Values(true)
		for _, t := range []*ts.Tensor{probs, order, last} {
			t.MustDrop()
		}
		return p, toks, g
	}
	flagged := 0
	for _, dev := range devs {
		x := ts.MustOfSlice(flat).MustView([]int64{rows, v}, true).MustTo(dev, true)
		uc := ts.MustOfSlice(u).MustView([]int64{rows, 1}, true).MustTo(dev, true)
		// Top-p's cut is where the tail's mass is at most 1−p, a sum whose
		// rounding depends on the order it is added in: CUDA's cumsum adds
		// in another than the CPU's. Row 0's 100 tied candidates under
		// top-k 40 have tails of exactly 0.01·n, so p = 0.7 put the cut on
		// a tail of 0.3 that one order rounds above and the other not (the
		// first GPU run kept 70 there, the CPU 71); 0.695 is 0.005 off any
		// such tail, where the order cannot move it.
		for _, w := range []Warpers{{1, 1, 1}, {1, 5, 1}, {0.8, 40, 1}, {1.2, 40, 0.695}, {1, 300, 0.9}, {1, 0, 1}} {
			var p, fp []float64
			var toks, ftoks []int64
			var g []float64
			torchx.NoGrad(func() {
				probs, order, last, guard := warped(x, w)
				p, toks, g = byID(uc, probs, order, last, guard)
				// The reference: the full sort, on the CPU.
				xc, ucc := x.MustTo(gotch.CPU, false), uc.MustTo(gotch.CPU, false)
				probs, order, last, guard = warpedFirst(xc, w, v)
				fp, ftoks, _ = byID(ucc, probs, order, last, guard)
				xc.MustDrop()
				ucc.MustDrop()
			})
			flagged += checkWarped(t, dev, w, flat, v, p, fp, toks, ftoks, g)
		}
		x.MustDrop()
		uc.MustDrop()
	}
	if flagged < 3*len(devs) {
		t.Errorf("%d rows flagged: the test does not reach the ties past the positions ordered", flagged)
	}
}

// checkWarped compares warped's probabilities by id p, draws toks and
// guards g on dev with the full sort's fp and ftoks over the rows of flat
// (v values each), and returns how many rows the guard flagged.
func checkWarped(t *testing.T, dev gotch.Device, w Warpers, flat []float64, v int, p, fp []float64, toks, ftoks []int64, g []float64) (flagged int) {
	t.Helper()
	rows := len(toks)
	for r := 0; r < rows; r++ {
		row := flat[r*v : (r+1)*v]
		// The rows warped cannot decide: a NaN, or at least k+tieSlack
		// values at least the k-th (the last ordered ties with it).
		undecidable := r == 2
		if c := w.TopK + tieSlack; w.TopK > 0 && c < v && !undecidable {
			desc := append([]float64(nil), row...)
			slices.SortFunc(desc, func(a, b float64) int { return cmp.Compare(b, a) })
			n := 0
			for _, y := range desc {
				if y >= desc[w.TopK-1] {
					n++
				}
			}
			undecidable = n >= c
		}
		finite := !math.IsNaN(g[r]) && !math.IsInf(g[r], 0)
		if finite == undecidable {
			t.Errorf("%v %+v row %d: guard %v, want finite %v", dev, w, r, g[r], !undecidable)
		}
		if !finite {
			flagged++
			continue
		}
		if toks[r] != ftoks[r] {
			t.Errorf("%v %+v row %d: drew %d, the full sort %d", dev, w, r, toks[r], ftoks[r])
		}
		for i := r * v; i < (r+1)*v; i++ {
			if math.Abs(p[i]-fp[i]) > 1e-15 {
				t.Errorf("%v %+v row %d: token %d has probability %.17g, by the full sort %.17g", dev, w, r, i-r*v, p[i], fp[i])
				break
			}
		}
	}
	return flagged
}
