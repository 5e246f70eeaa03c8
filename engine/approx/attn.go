package approx

import (
	"math"
	"slices"

	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// attend is one layer's attention of queries q [B,H,T,hd] over cached keys
// and values k, v [B,H,S,hd] (heads already repeated) under the additive
// mask [B,1,T,S], measuring what the method kept and read. On the prompt
// pass, and at every step of exact attention, it is attention itself.
// Sparse methods compute the exact scores, choose the tokens to keep,
// and take the softmax over those alone: scores + (0 kept, −Inf
// dropped). When everything is kept that sum adds zeros, so the result
// is attention's bit for bit. A decode step's measurements begin at the
// first layer and are folded in at the last.
func (st *state) Attend(kc *engine.Cache, li int, q, k, v, mask *ts.Tensor, scale, cap float64) *ts.Tensor {
	n, starts := kc.Len(), kc.Starts()
	if n == 0 { // the prompt pass
		return model.Attention(q, k, v, mask, scale, cap)
	}
	if li == 0 {
		st.beginStep()
	}
	if li == st.cfg.Layers-1 {
		defer st.endStep()
	}
	size := q.MustSize()
	b, t := int(size[0]), int(size[2])
	valid := make([][]int, b) // keys each query may attend
	for r := range valid {
		valid[r] = make([]int, t)
		for i := range valid[r] {
			valid[r][i] = n + i - starts[r] + 1
			if w := st.windows[li]; w > 0 {
				// A sliding layer reads its window, not the whole cache
				// (4,800 B/token were counted with a window of 4 as without).
				valid[r][i] = min(valid[r][i], w)
			}
		}
	}
	if !st.sparse() {
		for r := range valid {
			var bytes float64
			for _, n := range valid[r] {
				bytes += st.kvBytes(n, 0, 0)
			}
			st.addLayer(r, 1, bytes/float64(t))
		}
		return model.Attention(q, k, v, mask, scale, cap)
	}
	var sc model.Scope
	defer sc.Drop()
	kt := sc.Keep(k.MustTranspose(-2, -1, false))
	scores := sc.Keep(q.MustMatmul(kt, false).MustMulScalar(ts.FloatScalar(scale), true).MustAdd(mask, true))
	p := sc.Keep(scores.MustSoftmax(-1, gotch.Float, false))
	var keep *ts.Tensor // bool [B,H,T,S]; nil keeps everything
	scoreDims := st.cfg.HeadDim
	if st.a.Attention == AttnLoki {
		keep = st.lokiKeep(&sc, li, q, k, mask, valid)
		scoreDims = st.a.LokiRank
	} else {
		keep = st.siftKeep(&sc, li, p, starts)
	}
	if keep == nil {
		for r := range valid {
			var bytes float64
			for _, n := range valid[r] {
				bytes += st.kvBytes(n, st.cfg.HeadDim, float64(n))
			}
			st.addLayer(r, 1, bytes/float64(t))
		}
		return p.MustMatmul(v, false)
	}
	keepF := sc.Keep(keep.MustTotype(gotch.Float, false))
	mass := model.RowsOf(sc.Keep(p.MustMul(keepF, false).MustSumDimIntlist([]int64{-1}, false, gotch.Float, true)), b)
	kept := model.RowsOf(sc.Keep(keepF.MustSumDimIntlist([]int64{-1}, false, gotch.Float, false)), b)
	h := len(mass[0]) / t // per row: [H,T] flattened
	for r := range valid {
		var m, bytes float64
		for i, n := range valid[r] {
			var kh float64
			for hh := 0; hh < h; hh++ {
				m += float64(mass[r][hh*t+i])
				kh += float64(kept[r][hh*t+i])
			}
			bytes += st.kvBytes(n, scoreDims, kh/float64(h))
		}
		st.addLayer(r, m/float64(h*t), bytes/float64(t))
	}
	drop := sc.Keep(ts.MustZeros(scores.MustSize(), gotch.Float, scores.MustDevice()))
	notKeep := sc.Keep(keep.MustLogicalNot(false))
	drop = sc.Keep(drop.MustMaskedFill(notKeep, ts.FloatScalar(math.Inf(-1)), false))
	p2 := sc.Keep(scores.MustAdd(drop, false).MustSoftmax(-1, gotch.Float, true))
	return p2.MustMatmul(v, false)
}

// lokiKeep ranks the cached keys of every query by their score in the
// first LokiRank principal dimensions of the layer's post-rotary keys and
// keeps the top LokiTopK of each query's valid keys (ties with the last
// kept stay). With full rank the ranking is the exact scores' (up to
// rounding); with top-k = all valid keys everything is kept.
func (st *state) lokiKeep(sc *model.Scope, li int, q, k, mask *ts.Tensor, valid [][]int) *ts.Tensor {
	basis := st.lokiProjection(li)
	qr := sc.Keep(q.MustMatmul(basis, false))
	kr := sc.Keep(k.MustMatmul(basis, false).MustTranspose(-2, -1, true))
	approx := sc.Keep(qr.MustMatmul(kr, false).MustAdd(mask, true)) // [B,H,T,S]
	sorted, order := approx.MustSort(-1, true, false)
	sc.Keep(sorted)
	order.MustDrop()
	size := approx.MustSize()
	b, h, t := size[0], size[1], size[2]
	idx := make([]int64, 0, b*t)
	for r := range valid {
		for _, n := range valid[r] {
			idx = append(idx, int64(lokiCount(st.a.LokiTopK, n)-1))
		}
	}
	it, err := model.TensorOf(idx, []int64{b, 1, t, 1}, q.MustDevice())
	if err != nil {
		panic("model: loki: " + err.Error())
	}
	sc.Keep(it)
	ie := sc.Keep(it.MustExpand([]int64{b, h, t, 1}, false, false))
	kth := sc.Keep(sorted.MustGather(-1, ie, false, false))
	return sc.Keep(approx.MustGeTensor(kth, false))
}

// lokiCount is how many of n valid keys Loki attends: a fraction (<= 1,
// rounded up) or a count, at least 1 and at most n.
func lokiCount(topk float64, n int) int {
	c := int(topk)
	if topk <= 1 {
		// Less a hair: 0.07·100 is 7.000000000000001, which rounded up
		// kept 8.
		c = int(math.Ceil(topk*float64(n) - 1e-9))
	}
	return max(1, min(c, n))
}

// siftKeep is SiftAttention's choice at this decode step: nothing during
// the warm-up steps (it records each row's and head's tau-quantile of
// the probabilities of the newest query), afterwards the probabilities at
// or above the threshold a·stepᵇ fitted to the warm-up quantiles on log–log
// axes, per row, layer and head. The most likely token is always kept.
func (st *state) siftKeep(sc *model.Scope, li int, p *ts.Tensor, starts []int) *ts.Tensor {
	size := p.MustSize()
	b, h, t, s := int(size[0]), int(size[1]), size[2], int(size[3])
	if th := st.a.SiftThreshold; th != nil {
		return sc.Keep(p.MustGe(ts.FloatScalar(*th), false))
	}
	step := st.decodes
	if step <= st.a.SiftWarmup {
		last := sc.Keep(p.MustSelect(2, t-1, false).MustReshape([]int64{int64(b * h), int64(s)}, true))
		rows := model.RowsOf(last, b*h)
		for r := 0; r < b; r++ {
			for hh := 0; hh < h; hh++ {
				vals := slices.Clone(rows[r*h+hh][starts[r]:])
				slices.Sort(vals)
				q := float64(vals[int(st.a.SiftQuantile*float64(len(vals)-1))])
				st.logQ[r][li][hh] = append(st.logQ[r][li][hh], math.Log(max(q, 1e-30)))
			}
		}
		return nil
	}
	th := make([]float32, b*h)
	for r := 0; r < b; r++ {
		for hh := 0; hh < h; hh++ {
			th[r*h+hh] = float32(math.Exp(powerLaw(st.logQ[r][li][hh], math.Log(float64(step)))))
		}
	}
	tt, err := model.TensorOf(th, []int64{int64(b), int64(h), 1, 1}, p.MustDevice())
	if err != nil {
		panic("model: sift: " + err.Error())
	}
	sc.Keep(tt)
	top := sc.Keep(p.MustAmax([]int64{-1}, true, false))
	eff := sc.Keep(tt.MustMinimum(top, false))
	return sc.Keep(p.MustGeTensor(eff, false))
}

// powerLaw fits log q = a + b·log step by least squares to ys at steps
// 1, 2, … and returns the fitted log q at logStep.
func powerLaw(ys []float64, logStep float64) float64 {
	n := float64(len(ys))
	var mx, my float64
	for i, y := range ys {
		mx += math.Log(float64(i + 1))
		my += y
	}
	mx, my = mx/n, my/n
	var sxy, sxx float64
	for i, y := range ys {
		dx := math.Log(float64(i+1)) - mx
		sxy += dx * (y - my)
		sxx += dx * dx
	}
	slope := 0.0
	if sxx > 0 {
		slope = sxy / sxx
	}
	return my + slope*(logStep-mx)
}
