package model

import (
	"fmt"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Approximation is the one hook through which an inference
// approximation (package model/approx: KV quantization, Loki, Sift, and
// QuantSpec's draft) changes decoding. A cache of a Stepper made by
// NewStepperUnder has one and hands each layer of a cached pass to it
// (attendApprox): what enters the cache goes through Store, and Attend
// replaces attention; Reorder and Drop follow the cache's rows and its
// end. Exact decoding has none and never reaches this file's code.
type Approximation interface {
	// Store returns keys or values [B,KV,t,hd] as the cache keeps them,
	// taking ownership of x.
	Store(x *ts.Tensor) *ts.Tensor
	// Attend is layer li's attention of a cached pass over c (Len is
	// the positions cached before this pass, Starts each row's first):
	// q [B,H,T,hd], k and v [B,H,S,hd] (heads repeated), the per-row
	// mask [B,1,T,S], the scale and the soft-cap (0: none). Attention
	// computes it exactly.
	Attend(c *Cache, li int, q, k, v, mask *ts.Tensor, scale, cap float64) *ts.Tensor
	// Reorder follows Cache.Reorder.
	Reorder(rows []int)
	// Drop frees what the approximation holds.
	Drop()
}

// NewStepperUnder decodes with g through the KV cache, each cache under
// the approximation newApprox makes for its rows.
func NewStepperUnder(g *GPT, newApprox func(rows int) Approximation) *Stepper {
	return &Stepper{g: g, useCache: true, newApprox: newApprox}
}

// Attention is exact attention, softmax(cap(q·kᵀ·scale) + mask)·v, for an
// Approximation's prompt pass and the steps it attends exactly.
func Attention(q, k, v, mask *ts.Tensor, scale, cap float64) *ts.Tensor {
	return attention(q, k, v, mask, scale, cap)
}

// RowsOf copies a float [b, V] tensor into b Go rows.
func RowsOf(t *ts.Tensor, b int) [][]float32 { return rowsOf(t, b) }

// TensorOf copies a Go slice into a tensor of the given shape on dev.
func TensorOf[T float32 | int64](vals []T, dims []int64, dev gotch.Device) (*ts.Tensor, error) {
	return tensorOf(vals, dims, dev)
}

// Scope collects tensors to free together (Drop), for an
// Approximation's intermediate tensors as for the forward pass's.
type Scope struct{ s scope }

// Keep adds t to the scope and returns it.
func (s *Scope) Keep(t *ts.Tensor) *ts.Tensor { return s.s.keep(t) }

// Drop frees the tensors kept.
func (s *Scope) Drop() { s.s.drop() }

// Keys is layer l's cached keys [B,KV,Len,hd] (post-rotary), a view the
// caller drops: Loki's calibration reads them.
func (kc *Cache) Keys(l int) *ts.Tensor {
	return kc.k[l].MustNarrow(2, 0, int64(kc.n), false)
}

// WithMatrices returns a GPT whose block matrices are f of g's, each
// [out, in] (Conv1D weights are transposed for f and back), sharing the
// norms, biases, embedding and LM head with g: QuantSpec's draft
// (approx.QuantizedCopy). It is for decoding only.
func (g *GPT) WithMatrices(f func(w *ts.Tensor) *ts.Tensor) *GPT {
	r := *g
	r.causal = nil
	r.params = nil
	r.views = nil
	r.blocks = make([]block, len(g.blocks))
	for i, b := range g.blocks {
		// The copy's matrices replace the views: its products (and its
		// cache's concatenations) must read them, not g's joined tensors.
		b.joined = fusedWeights{}
		b.each(func(m module, w **ts.Tensor, bias bool) {
			if *w == nil || bias || m.isNorm() {
				return
			}
			d := (*w).MustDetach(false)
			if g.arch.Conv1D { // [in, out]
				t := d.MustT(true).MustContiguous(true)
				q := f(t)
				t.MustDrop()
				*w = q.MustT(true).MustContiguous(true)
			} else {
				*w = f(d)
			}
			d.MustDrop()
		})
		r.blocks[i] = b
	}
	return &r
}

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
	k, v = cache.append(li, cache.approx.Store(k), cache.approx.Store(v))
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
	att := s.keep(cache.approx.Attend(cache, li, q, k, v, mask, g.attnScale(), c.AttnSoftcap)) // [B,H,T',hd]
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

// Resync makes row i's sequence its prompt followed by gen[i] (all rows
// equally long), keeps in the cache the positions that did not change,
// feeds the rest and returns each row's logits at every position fed:
// speculative decoding rewinds to the tokens it kept (model/approx).
func (s *Stepper) Resync(gen [][]int32) ([][][]float32, error) {
	longest := s.promptLen
	same := len(s.seqs[0])
	for i, row := range s.seqs {
		if len(gen[i]) != len(gen[0]) {
			return nil, fmt.Errorf("decode: resync rows of %d and %d tokens", len(gen[0]), len(gen[i]))
		}
		p := longest
		for p < len(row) && p-longest < len(gen[i]) && row[p] == int64(gen[i][p-longest]) {
			p++
		}
		same = min(same, p)
		row = row[:longest]
		for _, t := range gen[i] {
			row = append(row, int64(t))
		}
		s.seqs[i] = row
	}
	if len(s.seqs[0]) > s.maxLen {
		return nil, fmt.Errorf("decode: %d positions exceed the %d reserved", len(s.seqs[0]), s.maxLen)
	}
	// The last position is never cached before it is fed.
	s.fed = min(s.fed, same, len(s.seqs[0])-1)
	s.cache.n = s.fed
	return s.run(false)
}
