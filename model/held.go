package model

import (
	"fmt"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// How g's weights are held: their dtype, and what they take. Which dtype
// the products compute in is the backend's (SetBackend; package
// precision), chosen once by the runner.

// heldReduced reports whether the weight in slot s is held in a reduced
// inference precision: the blocks' matrices and an untied LM head. Norm
// gains and biases stay float32 (products cast a bias), and so does the
// embedding, whose lookups read float32 rows.
func heldReduced(s slot) bool {
	return !s.bias && !s.mod.isNorm() && (s.layer >= 0 || s.mod == modHead)
}

// WeightBytes is the memory g's weights take as held: each parameter at
// its dtype's size (bf16 linear weights under an inference precision),
// and a tied head's reduced copy.
func (g *GPT) WeightBytes() int64 {
	var n int64
	add := func(t *ts.Tensor) { n += int64(t.Numel()) * int64(t.DType().Size()) }
	for _, p := range g.params {
		add(p.Tensor)
	}
	if g.tiedHead != nil {
		add(g.tiedHead)
	}
	return n
}

// HeldDType is the dtype of g's linear weights: float32 unless an
// inference precision holds them reduced (HoldReduced).
func (g *GPT) HeldDType() gotch.DType { return g.top[modHead].w.DType() }

// HoldReduced holds g's linear layers' weights in dt for inference (the
// weights heldReduced names: the blocks' matrices and the LM head), as
// package precision's inference precisions do; see hold.
func (g *GPT) HoldReduced(dt gotch.DType) error { return g.hold(dt, heldReduced) }

// hold converts the weights in the slots which names to dt and frees their
// float32 originals' memory, so a bf16 model takes about half the memory
// of its float32 one; Params lists the converted tensors, which keep
// requires_grad (GradNorm differentiates with respect to them). A head
// tied to the embedding gets a reduced copy of its own (tiedHead): the
// embedding stays float32 for its lookups. The conversion rounds as the
// per-product cast it replaces did, so results do not change. which
// names a subset of heldReduced's slots (a LoRA run's frozen base holds
// the blocks' matrices only, LoRA.HoldBase); the embedding stays float32.
func (g *GPT) hold(dt gotch.DType, which func(slot) bool) error {
	for v := range g.views {
		if v.DType() != dt { // a joined tensor cannot be converted view by view
			return fmt.Errorf("weights in %s: the model was built for inference in %s (its layers joined); load it in the precision wanted", DTypeName(dt), DTypeName(v.DType()))
		}
	}
	embed := g.top[modEmbed].w
	converted := map[*ts.Tensor]*ts.Tensor{}
	convert := func(w *ts.Tensor) *ts.Tensor {
		if w == nil || w.DType() == dt {
			return w
		}
		if c, ok := converted[w]; ok {
			return c
		}
		var c *ts.Tensor
		torchx.NoGrad(func() { c = w.MustTotype(dt, false) })
		c.MustRequiresGrad_(true)
		converted[w] = c
		return c
	}
	for i := range g.blocks {
		g.blocks[i].each(func(m module, w **ts.Tensor, bias bool) {
			if which(slot{layer: i, mod: m, bias: bias}) {
				*w = convert(*w)
			}
		})
	}
	if which(slot{layer: -1, mod: modHead}) {
		head := g.top[modHead]
		head.w = convert(head.w)
		g.top[modHead] = head
		if !g.cfg.Untied {
			g.tiedHead = head.w
		}
	}
	var originals []*ts.Tensor
	for i, p := range g.params {
		if c, ok := converted[p.Tensor]; ok && p.Tensor != embed {
			originals = append(originals, p.Tensor)
			g.params[i].Tensor = c
		}
	}
	// Emptied rather than dropped: the VarStore still names them.
	if err := torchx.ReleaseData(originals); err != nil {
		return fmt.Errorf("free the float32 weights: %w", err)
	}
	return nil
}

// DTypeName is dt as messages name it: float16, bfloat16, float32.
func DTypeName(dt gotch.DType) string {
	switch dt {
	case gotch.Half:
		return "float16"
	case gotch.BFloat16:
		return "bfloat16"
	}
	return fmt.Sprint(dt)
}
