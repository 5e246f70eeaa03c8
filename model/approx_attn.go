package model

import (
	"math"
	"slices"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// attendApprox is the rest of attend (gpt.go) when the cache decodes
// under an approximation, the one place exact decoding hands over to it:
// q [B,H,T,hd] and this pass's k, v [B,KV,T,hd] (owned) of layer li go
// through the approximation's store into the cache and its attend, under
// the per-row mask it reads (mask is the pass's shared one, nil, [T,S] or
// [B,1,T,S]); then the heads merge and the output projection applies.
// With lastOnly only the last query's output is returned, [B,1,d].
func (g *GPT) attendApprox(s *scope, li int, q, k, v, mask *ts.Tensor, cache *Cache, lastOnly bool) *ts.Tensor {
	c, blk := g.cfg, &g.blocks[li]
	size := q.MustSize()
	b, h, t, hd := size[0], size[1], size[2], size[3]
	k, v = cache.append(li, cache.approx.store(k), cache.approx.store(v))
	s.keep(k)
	s.keep(v)
	if kvh := int64(c.KVHeads); kvh < h {
		k, v = s.keep(repeatHeads(k, h/kvh)), s.keep(repeatHeads(v, h/kvh))
	}
	mask = s.keep(perRowMask(mask, b, t, k.MustSize()[2], g.device))
	// The prompt pass is exact: there a last query attends alone. A
	// decode step's measurements need every query.
	narrowOut := false
	if lastOnly && t > 1 {
		if cache.n == 0 {
			q = s.keep(q.MustNarrow(2, t-1, 1, false))
			mask = s.keep(mask.MustNarrow(2, t-1, 1, false))
		} else {
			narrowOut = true
		}
	}
	att := s.keep(cache.approx.attend(cache, li, q, k, v, mask, g.attnScale(), c.AttnSoftcap)) // [B,H,T',hd]
	if narrowOut {
		att = s.keep(att.MustNarrow(2, t-1, 1, false))
	}
	tt := att.MustSize()[2]
	merged := s.keep(att.MustTranspose(1, 2, false).MustReshape([]int64{b, tt, h * hd}, true))
	out := blk.mods[modOut]
	return g.innerLinear(merged, out.w, out.b) // [B,T',d]
}

// perRowMask is mask as the [B,1,T,S] per-row mask approximations read:
// a shared [T,S] one expanded, and none (a decode step without padding
// attends every key) all zeros.
func perRowMask(mask *ts.Tensor, b, t, s int64, dev gotch.Device) *ts.Tensor {
	switch {
	case mask == nil:
		return ts.MustZeros([]int64{b, 1, t, s}, gotch.Float, dev)
	case mask.Dim() == 2:
		return mask.MustExpand([]int64{b, 1, t, s}, false, false)
	}
	return mask.MustShallowClone()
}

// attend is one layer's attention of queries q [B,H,T,hd] over cached keys
// and values k, v [B,H,S,hd] (heads already repeated) under the additive
// mask [B,1,T,S], measuring what the method kept and read. On the prompt
// pass, and at every step of exact attention, it is attention itself.
// Sparse methods compute the exact scores, choose the tokens to keep,
// and take the softmax over those alone: scores + (0 kept, −Inf
// dropped). When everything is kept that sum adds zeros, so the result
// is attention's bit for bit. A decode step's measurements begin at the
// first layer and are folded in at the last.
func (st *approxState) attend(kc *Cache, li int, q, k, v, mask *ts.Tensor, scale, cap float64) *ts.Tensor {
	if kc.n == 0 { // the prompt pass
		return attention(q, k, v, mask, scale, cap)
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
			valid[r][i] = kc.n + i - kc.starts[r] + 1
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
		return attention(q, k, v, mask, scale, cap)
	}
	var sc scope
	defer sc.drop()
	kt := sc.keep(k.MustTranspose(-2, -1, false))
	scores := sc.keep(q.MustMatmul(kt, false).MustMulScalar(ts.FloatScalar(scale), true).MustAdd(mask, true))
	p := sc.keep(scores.MustSoftmax(-1, gotch.Float, false))
	var keep *ts.Tensor // bool [B,H,T,S]; nil keeps everything
	scoreDims := st.cfg.HeadDim
	if st.a.Attention == AttnLoki {
		keep = st.lokiKeep(&sc, li, q, k, mask, valid)
		scoreDims = st.a.LokiRank
	} else {
		keep = st.siftKeep(&sc, li, p, kc.starts)
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
	keepF := sc.keep(keep.MustTotype(gotch.Float, false))
	mass := rowsOf(sc.keep(p.MustMul(keepF, false).MustSumDimIntlist([]int64{-1}, false, gotch.Float, true)), b)
	kept := rowsOf(sc.keep(keepF.MustSumDimIntlist([]int64{-1}, false, gotch.Float, false)), b)
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
	drop := sc.keep(ts.MustZeros(scores.MustSize(), gotch.Float, scores.MustDevice()))
	notKeep := sc.keep(keep.MustLogicalNot(false))
	drop = sc.keep(drop.MustMaskedFill(notKeep, ts.FloatScalar(math.Inf(-1)), false))
	p2 := sc.keep(scores.MustAdd(drop, false).MustSoftmax(-1, gotch.Float, true))
	return p2.MustMatmul(v, false)
}

// lokiKeep ranks the cached keys of every query by their score in the
// first LokiRank principal dimensions of the layer's post-rotary keys and
// keeps the top LokiTopK of each query's valid keys (ties with the last
// kept stay). With full rank the ranking is the exact scores' (up to
// rounding); with top-k = all valid keys everything is kept.
func (st *approxState) lokiKeep(sc *scope, li int, q, k, mask *ts.Tensor, valid [][]int) *ts.Tensor {
	basis := st.lokiProjection(li)
	qr := sc.keep(q.MustMatmul(basis, false))
	kr := sc.keep(k.MustMatmul(basis, false).MustTranspose(-2, -1, true))
	approx := sc.keep(qr.MustMatmul(kr, false).MustAdd(mask, true)) // [B,H,T,S]
	sorted, order := approx.MustSort(-1, true, false)
	sc.keep(sorted)
	order.MustDrop()
	size := approx.MustSize()
	b, h, t := size[0], size[1], size[2]
	idx := make([]int64, 0, b*t)
	for r := range valid {
		for _, n := range valid[r] {
			idx = append(idx, int64(lokiCount(st.a.LokiTopK, n)-1))
		}
	}
	it, err := tensorOf(idx, []int64{b, 1, t, 1}, q.MustDevice())
	if err != nil {
		panic("model: loki: " + err.Error())
	}
	sc.keep(it)
	ie := sc.keep(it.MustExpand([]int64{b, h, t, 1}, false, false))
	kth := sc.keep(sorted.MustGather(-1, ie, false, false))
	return sc.keep(approx.MustGeTensor(kth, false))
}

// lokiCount is how many of n valid keys Loki attends: a fraction (<= 1,
// rounded up) or a count, at least 1 and at most n.
func lokiCount(topk float64, n int) int {
	c := int(topk)
	if topk <= 1 {
		c = int(math.Ceil(topk * float64(n)))
	}
	return max(1, min(c, n))
}

// siftKeep is SiftAttention's choice at this decode step: nothing during
// the warm-up steps (it records each row's and head's tau-quantile of
// the probabilities of the newest query), afterwards the probabilities at
// or above the threshold a·stepᵇ fitted to the warm-up quantiles on log–log
// axes, per row, layer and head. The most likely token is always kept.
func (st *approxState) siftKeep(sc *scope, li int, p *ts.Tensor, starts []int) *ts.Tensor {
	size := p.MustSize()
	b, h, t, s := int(size[0]), int(size[1]), size[2], int(size[3])
	if th := st.a.SiftThreshold; th != nil {
		return sc.keep(p.MustGe(ts.FloatScalar(*th), false))
	}
	step := st.decodes
	if step <= st.a.SiftWarmup {
		last := sc.keep(p.MustSelect(2, t-1, false).MustReshape([]int64{int64(b * h), int64(s)}, true))
		rows := rowsOf(last, b*h)
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
	tt, err := tensorOf(th, []int64{int64(b), int64(h), 1, 1}, p.MustDevice())
	if err != nil {
		panic("model: sift: " + err.Error())
	}
	sc.keep(tt)
	top := sc.keep(p.MustAmax([]int64{-1}, true, false))
	eff := sc.keep(tt.MustMinimum(top, false))
	return sc.keep(p.MustGeTensor(eff, false))
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
