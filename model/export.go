package model

import (
	"fmt"

	"github.com/memo-research/memo/internal/torchx"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Attention is exact attention, softmax(cap(q·kᵀ·scale) + mask)·v, for an
// approximation's prompt pass and the steps it attends exactly (package
// engine).
func Attention(q, k, v, mask *ts.Tensor, scale, cap float64) *ts.Tensor {
	return attention(q, k, v, mask, scale, cap)
}

// RowsOf copies a float [b, V] tensor into b Go rows.
func RowsOf(t *ts.Tensor, b int) [][]float32 { return rowsOf(t, b) }

// rowsOf copies a float [b, V] tensor into Go rows. It copies the memory
// directly: gotch's CopyData checks the destination's type element by
// element through reflection, which cost more than the decode step's
// arithmetic.
func rowsOf(t *ts.Tensor, b int) [][]float32 {
	c := t.MustTotype(gotch.Float, false)
	c2 := c.MustContiguous(true)
	if c2.MustDevice().IsCuda() {
		c2 = c2.MustTo(gotch.CPU, true)
	}
	n := c2.Numel()
	flat := make([]float32, n)
	if err := torchx.CopyFloat32(flat, c2); err != nil {
		panic(fmt.Sprintf("rowsOf: %v", err)) // c2 was made float32, contiguous and on the CPU above
	}
	c2.MustDrop()
	v := int(n) / b
	out := make([][]float32, b)
	for i := range out {
		out[i] = flat[i*v : (i+1)*v : (i+1)*v]
	}
	return out
}

// TensorOf copies a Go slice into a tensor of the given shape on dev.
func TensorOf[T float32 | float64 | int64](vals []T, dims []int64, dev gotch.Device) (*ts.Tensor, error) {
	return tensorOf(vals, dims, dev)
}

// Scope collects tensors to free together (Drop), for the engine's and
// an approximation's intermediate tensors as for the forward pass's.
type Scope struct{ s scope }

// Keep adds t to the scope and returns it.
func (s *Scope) Keep(t *ts.Tensor) *ts.Tensor { return s.s.keep(t) }

// Drop frees the tensors kept.
func (s *Scope) Drop() { s.s.drop() }

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
		b.joined = Joined{}
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

// RepeatHeads maps keys or values [B,KV,S,hd] to [B,KV·n,S,hd], head j
// serving heads j·n … j·n+n−1 (Hugging Face's repeat_kv).
func RepeatHeads(x *ts.Tensor, n int64) *ts.Tensor { return repeatHeads(x, n) }
