package model

import (
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// GradLeaves are the tensors a backward pass through g leaves gradients
// in: the parameters, with each joined tensor in place of its views, and
// a tied head's reduced copy (HoldReduced). The engine's GradNorm clears
// and reads them.
func (g *GPT) GradLeaves() []*ts.Tensor {
	leaves := g.gradLeaves()
	if g.tiedHead != nil {
		leaves = append(leaves, g.tiedHead)
	}
	return leaves
}

// GradSquaredNorm is the sum of the squared gradients of Params, summed
// parameter by parameter in their order in float64 (a joined layer's rows
// of its base for each of its views), as it was before layers were joined.
func (g *GPT) GradSquaredNorm() float64 {
	var sq float64
	for _, p := range g.params {
		gr := g.float32Grad(p.Tensor)
		if p.Tensor == g.top[modEmbed].w && g.tiedHead != nil {
			// One weight, two uses: the lookup's gradient plus the
			// reduced head copy's, as autograd summed them when the head
			// cast the embedding at each product.
			gr = gr.MustAdd(g.float32Grad(g.tiedHead), true)
		}
		s := gr.MustSquare(false).MustSum(gotch.Double, true)
		sq += s.Float64Values()[0]
		s.MustDrop()
		gr.MustDrop()
	}
	return sq
}

// float32Grad is p's gradient in float32 (zeros when it has none): a view
// of a joined tensor reads its rows of that tensor's gradient, cut before
// the conversion so that no more than its own rows are converted; a
// weight held in bf16 has a bf16 gradient, which the float32 weight it
// replaced received cast to float32.
func (g *GPT) float32Grad(p *ts.Tensor) *ts.Tensor {
	var gr *ts.Tensor
	if v, ok := g.views[p]; ok {
		gr = v.base.MustGrad(false)
		if gr.MustDefined() {
			gr = gr.MustNarrow(0, v.off, v.n, true)
		}
	} else {
		gr = p.MustGrad(false)
	}
	if !gr.MustDefined() {
		gr.MustDrop()
		return ts.MustZeros(p.MustSize(), gotch.Float, p.MustDevice())
	}
	if gr.DType() != gotch.Float {
		return gr.MustTotype(gotch.Float, true)
	}
	return gr
}
