package model

import (
	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// An inference model (NewForInference) allocates each layer's separate
// q, k, v weights as one joined tensor, q rows first, and likewise gate
// and up (and their biases), and its Hugging Face parameters are views of
// those rows. Decoding and the CPU's forward pass multiply by the joined
// tensor directly. A model built otherwise concatenates the separate
// weights instead: a decode keeps the copies for as long as its cache
// lives (Joins, kept by the engine's cache), over half as much again for
// a Llama (2.5 GB beside a 1.1B model's 4.4 GB in float32), and the CPU's forward pass
// makes them anew at each call. The joined allocation is how this model
// stores its weights, so it is model's; the copies a cache keeps are the
// engine's. The products multiply the same values,
// so results do not change; on a GPU, where a trained model multiplies q,
// k and v separately (separateProducts), a joined one multiplies once,
// which can move the last bits there.
//
// The views are not leaves (the joined tensors are), so such a model is
// not trained; GradNorm differentiates with respect to the joined tensors
// (gradLeaves) and reads each parameter's rows.

// joinedView says where a parameter of an inference model lies in its
// layer's joined tensor: rows [off, off+n) of base.
type joinedView struct {
	base   *ts.Tensor
	off, n int64
}

// joinKey names one joined tensor: a layer's q|k|v (group 0) or gate|up
// (group 1) weights or biases.
type joinKey struct {
	layer, group int
	bias         bool
}

// joinKeyOf reports which joined tensor the weight in slot s belongs to
// in family a, if any: separate q, k, v and gate, up, stored [out, in]
// (no family memo knows stores them separately as Conv1D's [in, out]).
func joinKeyOf(a *Arch, s slot) (joinKey, bool) {
	if s.layer < 0 || a.Conv1D {
		return joinKey{}, false
	}
	switch {
	case a.QKV == QKVSeparate && (s.mod == modQ || s.mod == modK || s.mod == modV):
		return joinKey{s.layer, 0, s.bias}, true
	case a.MLP == MLPGated && (s.mod == modGate || s.mod == modUp):
		return joinKey{s.layer, 1, s.bias}, true
	}
	return joinKey{}, false
}

// of is the field of f that holds the joined tensor k names.
func (f *Joined) of(k joinKey) **ts.Tensor {
	switch {
	case k.group == 0 && !k.bias:
		return &f.QKV
	case k.group == 0:
		return &f.QKVBias
	case !k.bias:
		return &f.GateUp
	}
	return &f.GateUpBias
}

// joiner allocates the joined tensors of one build, each when its first
// part is asked for, and hands out the parts in layout order.
type joiner struct {
	a    *Arch
	rows map[joinKey]int64 // each joined tensor's rows, summed over the layout
	next map[joinKey]int64 // the row the next part starts at
}

func newJoiner(a *Arch, layout []tensorSpec) *joiner {
	j := &joiner{a: a, rows: map[joinKey]int64{}, next: map[joinKey]int64{}}
	for _, spec := range layout {
		if k, ok := joinKeyOf(a, spec.slot); ok {
			j.rows[k] += spec.Shape[0]
		}
	}
	return j
}

// part returns spec's view of its joined tensor (allocated unset in dt,
// a leaf that requires grad) and records it in g; ok is false for a weight
// that is not joined. The layout lists a module's parts in module order
// (q, k, v; gate, up), the order the products' outputs are split in.
func (j *joiner) part(g *GPT, spec tensorSpec, dt gotch.DType) (*ts.Tensor, bool) {
	k, ok := joinKeyOf(j.a, spec.slot)
	if !ok {
		return nil, false
	}
	field := g.blocks[k.layer].joined.of(k)
	if *field == nil {
		shape := append([]int64{j.rows[k]}, spec.Shape[1:]...)
		*field = ts.MustEmpty(shape, dt, g.device)
		(*field).MustRequiresGrad_(true)
	}
	base := *field
	off, n := j.next[k], spec.Shape[0]
	j.next[k] = off + n
	// Taken in grad mode, as any view of a parameter: one taken without it
	// could not be read in grad mode once a loader has written through it
	// (libtorch refuses such a view). The products multiply by base and
	// GradNorm reads base's gradient by rows, so no graph runs through it.
	view := base.MustNarrow(0, off, n, false)
	if g.views == nil {
		g.views = map[*ts.Tensor]joinedView{}
	}
	g.views[view] = joinedView{base, off, n}
	return view, true
}

// Release frees g's weights now (they become empty tensors), for a caller
// done with g before it loads another model: memo pauses Go's collector,
// so the weights would otherwise stay until the model is collected, and an
// attack with a reference model would hold both at its peak. g must not
// be used afterwards.
func (g *GPT) Release() error {
	var all []*ts.Tensor
	seen := map[*ts.Tensor]bool{}
	add := func(tensors ...*ts.Tensor) {
		for _, t := range tensors {
			if t != nil && !seen[t] {
				seen[t] = true
				all = append(all, t)
			}
		}
	}
	// The parameters are every weight the model multiplies by (hold
	// and the joiner keep them so), views included, which hold their
	// joined tensor's storage; a tied head's reduced copy is the one other.
	for _, p := range g.params {
		add(p.Tensor)
	}
	for i := range g.blocks {
		j := g.blocks[i].joined
		add(j.QKV, j.QKVBias, j.GateUp, j.GateUpBias)
	}
	add(g.tiedHead, g.causal)
	for _, r := range g.ropes {
		add(r.cos, r.sinSigned)
	}
	torchx.ClearGrads(all)
	return torchx.ReleaseData(all)
}

// joined reports whether g's layers are joined (NewForInference).
func (g *GPT) joined() bool { return len(g.views) > 0 }

// gradLeaves are the tensors GradNorm differentiates with respect to:
// the parameters, with each joined tensor in place of its views.
func (g *GPT) gradLeaves() []*ts.Tensor {
	var out []*ts.Tensor
	seen := map[*ts.Tensor]bool{}
	for _, p := range g.params {
		t := p.Tensor
		if v, ok := g.views[t]; ok {
			t = v.base
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
