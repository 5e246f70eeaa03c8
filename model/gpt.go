// Package model is memo's network: a transformer on libtorch (through
// gotch), its weights (how they are held: precision, joined q|k|v; which
// stage of the pass reads each, Param.Layer), parameter and FLOP counts,
// and one forward pass that every family runs. Running it — the KV cache,
// decoding, scoring passes, the attention backend a decode picks — is
// package engine's.
//
// One forward pass serves every family memo trains or imports. A family
// (arch_<name>.go) declares its Recipe — which norm, where the norms sit,
// how q/k/v and the MLP are stored, how positions enter — and its tensor
// names; block reads the recipe:
//
//	h   = x + post(attn(pre(x)))        (pre, post: the branch's norms,
//	out = h + post(mlp(pre(h)))          identity where the family has none)
//
// or, with the parallel residual (GPT-NeoX), out = mlp(pre(x)) + attn(pre(x)) + x.
// Each residual addition is made where the next norm reads its sum (the
// last one in the next block), so that on a GPU one kernel adds and
// normalizes.
// memo's own models are llama: RMSNorm, rotary attention over grouped-query
// heads, SwiGLU. Fresh weights are N(0, 0.02), norm gains 1, biases 0.
// Tensor names are Hugging Face's for the family (see Params).
//
// Forward runs a whole sequence (training, scoring); ForwardWith runs the
// next positions of a cached pass, whose state (PassState: positions,
// padding, the KV store, the backend) the engine supplies. The attention
// and the products are a Backend: Exact here (float32, or a reduced
// precision's from package precision, set once with SetBackend), the CPU
// decode kernels and the approximations in the engine.
//
// libtorch keeps its grad mode per OS thread: a caller that wraps Forward in
// ts.NoGrad must hold runtime.LockOSThread around it, or the goroutine may
// run the forward on another thread with gradients on. ForwardWith and
// the engine's Stepper do this themselves.
package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"
)

const initStdDev = 0.02

// Param is one trainable tensor under its Hugging Face name. Decay is true
// for matrices (weight decay applies) and false for norm gains and biases.
// Layer says which stage of the forward pass reads it (see Pass): block
// 0 … Layers−1, BeforeBlocks or AfterBlocks; sharding cuts by it.
type Param struct {
	Name   string
	Tensor *ts.Tensor
	Decay  bool
	Layer  int
}

// GPT is the decoder. Its weights live in the nn.Path it was built on.
type GPT struct {
	cfg    Config
	arch   *Arch
	device gotch.Device
	// top holds the model-level weights (embedding, learned positions,
	// final norm, head), indexed by module.
	top    map[module]weights
	blocks []block
	params []Param
	// ropes are the rotary tables: [0] for rope_theta, [1] for the local
	// layers' LocalRopeTheta when it is set (Gemma 3).
	ropes  []ropeTable
	causal *ts.Tensor // the additive causal mask of the longest length asked for (causalMask)
	// be is g's own backend (SetBackend; nil: float32, see Exact).
	be Base
	// tiedHead is the reduced copy of the embedding that a tied LM head
	// multiplies by under an inference precision (hold); nil
	// otherwise. GradNorm adds its gradient to the embedding's.
	tiedHead *ts.Tensor
	// views are the parameters that are parts of a layer's joined tensor,
	// and where (NewForInference, join.go); nil for other models.
	views map[*ts.Tensor]joinedView
}

// weights are one module's weight and bias (nil when it has none).
type weights struct{ w, b *ts.Tensor }

// block holds one layer's modules, indexed by module; those the recipe
// does not use stay empty.
type block struct {
	mods   [numBlockModules]weights
	window int // sliding-window length, 0 for full attention
	rope   int // which of GPT.ropes its rotary uses
	// joined holds the separate q|k|v and gate|up weights concatenated,
	// with mods' entries views of them (NewForInference); empty otherwise.
	joined Joined
}

// each calls f on every weight slot of the block, so Replica and
// QuantizedCopy reach them all without a list of their own.
func (b *block) each(f func(m module, t **ts.Tensor, bias bool)) {
	for m := range b.mods {
		f(module(m), &b.mods[m].w, false)
		f(module(m), &b.mods[m].b, true)
	}
}

// New builds a GPT with fresh weights on p. cfg is resolved first; the
// weights are drawn from cfg.Seed in Go, so they are the same on any device
// and libtorch build.
func New(p *nn.Path, cfg Config) (*GPT, error) { return build(p, cfg, true, gotch.Float, false) }

// NewUninitialized builds a GPT whose weights are allocated but not set,
// for a caller that loads every one of them from a file next: drawing
// a billion normal values only to overwrite them would take seconds.
func NewUninitialized(p *nn.Path, cfg Config) (*GPT, error) {
	return build(p, cfg, false, gotch.Float, false)
}

// NewForInference is NewUninitialized for a model that is only run, never
// trained, in dtype held (float32, bfloat16, float16; package precision
// checks the name and sets the backend): the linear layers' weights are
// allocated in that dtype, so a loader converts each tensor as it reads it
// and the model is never held in float32 (on a GPU a bf16 7B model needs
// 14 GB, not 28 and then 14), and each layer's separate q, k, v (gate, up)
// weights are allocated as one joined tensor, of which the parameters are
// views (see block.joined).
func NewForInference(p *nn.Path, cfg Config, held gotch.DType) (*GPT, error) {
	return build(p, cfg, false, held, true)
}

// build makes the model; held is the dtype of the weights heldReduced
// names (float32 but for an inference model), and join allocates each
// layer's separate q, k, v and gate, up weights joined (NewForInference).
func build(p *nn.Path, cfg Config, initialise bool, held gotch.DType, join bool) (*GPT, error) {
	c, err := cfg.Resolve()
	if err != nil {
		return nil, err
	}
	a := archs[c.Arch] // Resolve checked it
	g := &GPT{cfg: c, arch: a, device: p.Device(), top: map[module]weights{}}
	rng := initRNG(c.Seed)
	g.blocks = make([]block, c.Layers)
	windows := c.windows()
	for i := range g.blocks {
		g.blocks[i].window = windows[i]
		if c.LocalRopeTheta > 0 && g.blocks[i].window > 0 {
			g.blocks[i].rope = 1
		}
	}
	layout := a.layout(c)
	var joins *joiner
	if join && !initialise {
		joins = newJoiner(a, layout)
	}
	for _, spec := range layout {
		dt := gotch.Float
		if heldReduced(spec.slot) {
			dt = held
		}
		if joins != nil {
			if view, ok := joins.part(g, spec, dt); ok {
				g.addParam(spec, view)
				continue
			}
		}
		t, err := newWeight(spec, a.Norm, initialise, rng, g.device, dt)
		if err != nil {
			return nil, fmt.Errorf("model: %s: %w", spec.Name, err)
		}
		// Every weight's path is built afresh from p: gotch's Path.Sub
		// appends to a shared slice, so two live sibling paths could
		// overwrite each other.
		leaf := p
		parts := strings.Split(spec.Name, ".")
		for _, part := range parts[:len(parts)-1] {
			leaf = leaf.Sub(part)
		}
		pt, err := leaf.Add(parts[len(parts)-1], t, true)
		t.MustDrop()
		if err != nil {
			return nil, fmt.Errorf("model: add %s: %w", spec.Name, err)
		}
		g.addParam(spec, pt)
	}
	if !c.Untied {
		g.top[modHead] = weights{w: g.top[modEmbed].w}
	}
	if a.Positions == PosRotary {
		thetas := []float64{c.RopeTheta}
		if c.LocalRopeTheta > 0 {
			thetas = append(thetas, c.LocalRopeTheta)
		}
		for i, theta := range thetas {
			r, err := newRopeTable(c, theta, i == 0, g.device)
			if err != nil {
				return nil, fmt.Errorf("model: rotary tables: %w", err)
			}
			g.ropes = append(g.ropes, r)
		}
	}
	return g, nil
}

// addParam lists t as the parameter spec describes and puts it in its
// module's slot.
func (g *GPT) addParam(spec tensorSpec, t *ts.Tensor) {
	g.params = append(g.params, Param{Name: spec.Name, Tensor: t, Decay: spec.Kind == matrixWeight, Layer: layerOf(spec.slot)})
	if spec.slot.layer >= 0 {
		g.blocks[spec.slot.layer].mods[spec.slot.mod].set(t, spec.slot.bias)
		return
	}
	w := g.top[spec.slot.mod]
	w.set(t, spec.slot.bias)
	g.top[spec.slot.mod] = w
}

// set puts t in w's bias or weight.
func (w *weights) set(t *ts.Tensor, bias bool) {
	if bias {
		w.b = t
	} else {
		w.w = t
	}
}

// newWeight makes one fresh (or, without initialise, unset) weight.
func newWeight(spec tensorSpec, norm NormKind, initialise bool, rng *rand.Rand, dev gotch.Device, dt gotch.DType) (*ts.Tensor, error) {
	if !initialise {
		return ts.MustEmpty(spec.Shape, dt, dev), nil
	}
	// Drawn straight into the tensor's storage: copying a Go slice in
	// (tensorOf) took three times as long as drawing a 1.1B model's values.
	t := ts.MustEmpty(spec.Shape, gotch.Float, gotch.CPU)
	if err := torchx.WithFloat32Storage(t, func(vals []float32) error {
		fillWeight(spec, norm, rng, vals)
		return nil
	}); err != nil {
		t.MustDrop()
		return nil, err
	}
	return torchx.ToDevice(t, dev)
}

// initRNG is the source fresh weights are drawn from, in layout order.
func initRNG(seed int64) *rand.Rand { return rand.New(rand.NewPCG(uint64(seed), 0x6d656d6f)) } // "memo"

// InitValues calls fn with the values New draws for each of cfg's weights,
// in Params order, one weight at a time and without building a model: a
// caller that keeps only a part of each (train.shard = "full") never holds
// the whole model. vals is valid during fn only: one buffer, the size of
// the largest weight, serves them all, so that drawing allocates no more
// than that with Go's collector paused.
func InitValues(cfg Config, fn func(i int, vals []float32) error) error {
	c, err := cfg.Resolve()
	if err != nil {
		return err
	}
	a := archs[c.Arch]
	rng := initRNG(c.Seed)
	var buf []float32
	for i, spec := range a.layout(c) {
		buf = drawWeight(spec, a.Norm, rng, buf)
		if err := fn(i, buf); err != nil {
			return err
		}
	}
	return nil
}

// drawWeight draws one fresh weight's values: N(0, 0.02) for matrices,
// 1 for norm gains (0 for Gemma's 1+w gains), 0 for biases; into buf
// when it has room.
func drawWeight(spec tensorSpec, norm NormKind, rng *rand.Rand, buf []float32) []float32 {
	n := int64(1)
	for _, d := range spec.Shape {
		n *= d
	}
	vals := buf[:0]
	if int64(cap(buf)) < n {
		vals = make([]float32, n)
	}
	vals = vals[:n]
	fillWeight(spec, norm, rng, vals)
	return vals
}

// fillWeight draws vals, one fresh weight's values, as drawWeight does.
func fillWeight(spec tensorSpec, norm NormKind, rng *rand.Rand, vals []float32) {
	switch {
	case spec.Kind == matrixWeight:
		for i := range vals {
			vals[i] = float32(rng.NormFloat64() * initStdDev)
		}
	case spec.Kind == gainWeight && norm != NormRMSOffset:
		for i := range vals {
			vals[i] = 1
		}
	default:
		clear(vals)
	}
}

// Config is the resolved configuration the model was built with.
func (g *GPT) Config() Config { return g.cfg }

// Device is where the weights live.
func (g *GPT) Device() gotch.Device { return g.device }

// Params lists the trainable tensors in a fixed order: the embedding (and
// learned positions), then each layer's modules — input norm, q/k/v (or
// the fused qkv), q/k norms, output projection, post-attention norm, MLP
// norm, gate/up/down, post-MLP norm, each weight followed by its bias —
// then the final norm and the untied head, under the family's names.
func (g *GPT) Params() []Param { return g.params }

// Param finds a parameter by its Hugging Face name.
func (g *GPT) Param(name string) (Param, bool) {
	for _, p := range g.params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// Names lists the Hugging Face tensor names of Params, in order.
func (g *GPT) Names() []string {
	out := make([]string, len(g.params))
	for i, p := range g.params {
		out[i] = p.Name
	}
	return out
}

// UntiedHeadName is the tensor name of the LM head when it is not the
// embedding; a tied model's files may carry a copy under it.
func (g *GPT) UntiedHeadName() string { return g.arch.headName() }

// Forward maps token ids [B,T] (int64, T <= Context) to logits [B,T,V]. It
// panics when T exceeds the context, a caller's bug.
func (g *GPT) Forward(ids *ts.Tensor) *ts.Tensor { return g.uncached(ids, nil) }

// ForwardForLoss is Forward for a pass whose logits only the training
// loss reads (train.MaskedCrossEntropy): the same logits, but where the
// backend leaves a LossLogits product in its dtype (a GPU's bf16 products)
// they stay in bfloat16, the values the float32 logits would hold before
// their cast. A model whose final logits are soft-capped keeps them
// float32 (the cap is computed in float32).
func (g *GPT) ForwardForLoss(ids *ts.Tensor) *ts.Tensor {
	return g.uncached(ids, &PassState{ForLoss: true})
}

// uncached is an uncached pass of ids [B,T] over positions 0..T-1 of every
// row, under st (nil: Forward's), with gradients where the caller's mode
// has them: every position's logits, or the last's with st.LastOnly. It
// panics when T exceeds the context.
func (g *GPT) uncached(ids *ts.Tensor, st *PassState) *ts.Tensor {
	size := ids.MustSize()
	checkIDs(size, g.cfg.Context)
	in := g.sharedInputs(size[1])
	defer in.drop()
	lastOnly := st != nil && st.LastOnly
	return g.run(ids, in, st, lastOnly)
}

// checkIDs panics unless ids of the given size are [B,T] with T at most
// the context: a caller's bug.
func checkIDs(size []int64, context int) {
	if len(size) != 2 || size[1] > int64(context) {
		panic(fmt.Sprintf("model: Forward on ids %v: want [B,T] with T <= context %d", size, context))
	}
}

// inputs are what every block of one pass reads besides x: the rotary
// rows (per table, broadcastable to [B,1,T,rot]), the learned-position
// embeddings [B or 1,T,d], and the additive masks by window length (0:
// full causal), each broadcastable to [B,H,T,S]; a nil mask attends every
// key.
type inputs struct {
	cos, sin  []*ts.Tensor
	positions *ts.Tensor
	masks     map[int]*ts.Tensor
}

func (in *inputs) drop() {
	for _, t := range append(append([]*ts.Tensor{in.positions}, in.cos...), in.sin...) {
		if t != nil {
			t.MustDrop()
		}
	}
	for _, m := range in.masks {
		if m != nil {
			m.MustDrop()
		}
	}
}

// sharedInputs are the inputs of a pass over positions 0..t-1 in every row.
func (g *GPT) sharedInputs(t int64) *inputs {
	in := g.maskInputs(t)
	if pe := g.top[modPositions].w; pe != nil {
		in.positions = pe.MustNarrow(0, 0, t, false)
	}
	return in
}

// maskInputs are sharedInputs without the learned positions (a weight).
func (g *GPT) maskInputs(t int64) *inputs {
	in := &inputs{masks: map[int]*ts.Tensor{}}
	for _, r := range g.ropes {
		in.cos = append(in.cos, r.cos.MustNarrow(0, 0, t, false))
		in.sin = append(in.sin, r.sinSigned.MustNarrow(0, 0, t, false))
	}
	for _, b := range g.blocks {
		if _, ok := in.masks[b.window]; !ok {
			if b.window == 0 {
				in.masks[0] = g.causalMask(t)
			} else {
				in.masks[b.window] = newCausalMask(t, b.window, g.device)
			}
		}
	}
	return in
}

// causalMask is the additive [T,T] mask, 0 on and below the diagonal, −inf
// above: a view (the caller drops it) of one cached mask of the longest
// length asked for so far. A mask cached per length grew with every
// window length a scoring pass met, T² floats each: 30 MB over a 2,000 +
// 2,000 attack at context 256, gigabytes at 2,048.
func (g *GPT) causalMask(t int64) *ts.Tensor {
	if g.causal == nil || g.causal.MustSize()[0] < t {
		if g.causal != nil {
			g.causal.MustDrop() // views of it keep its storage alive
		}
		g.causal = newCausalMask(t, 0, g.device)
	}
	return g.causal.MustNarrow(0, 0, t, false).MustNarrow(1, 0, t, true)
}

// newCausalMask builds the [T,T] causal mask on dev; with a window w > 0,
// query i also ignores keys j <= i−w (it attends its w most recent
// positions, as Hugging Face's sliding-window masks do).
func newCausalMask(t int64, w int, dev gotch.Device) *ts.Tensor {
	m, err := tensorOf(maskValues([]int{0}, 0, int(t), w), []int64{t, t}, dev)
	if err != nil {
		panic(fmt.Sprintf("model: causal mask: %v", err))
	}
	return m
}

// run is the network. st, when not nil, is a cached pass (ForwardWith): its
// KV store receives this call's keys and values and supplies earlier ones.
//
// With lastOnly the final norm and the LM head run on the last position
// only and the logits are [B,1,V]: a decoder needs no other position's,
// and at a prompt of T tokens the head over every position (V×d per
// token) is the prompt pass's largest product. So does the last block
// after its keys and values (which the cache needs for every position):
// its attention, output projection and MLP, most of a block's work.
func (g *GPT) run(ids *ts.Tensor, in *inputs, st *PassState, lastOnly bool) *ts.Tensor {
	x := g.embed(ids, in.positions)
	// branch is the last block's MLP output, which the next block's norm
	// adds into x (see block).
	var branch *ts.Tensor
	for li := range g.blocks {
		h, mlp := g.block(li, x, branch, in, st, lastOnly && li == len(g.blocks)-1)
		x.MustDrop()
		if branch != nil {
			branch.MustDrop()
		}
		x, branch = h, mlp
	}
	x = settle(x, branch)
	logits := OuterProduct
	if st != nil && st.ForLoss {
		logits = g.lossLogits()
	}
	out := g.head(x, g.backend(st), lastOnly, logits)
	x.MustDrop()
	return out
}

// embed is the token embedding of ids [B,T], scaled where the family
// scales it, plus the learned positions (nil for other families): [B,T,d].
func (g *GPT) embed(ids, positions *ts.Tensor) *ts.Tensor {
	x := ts.MustEmbedding(g.top[modEmbed].w, ids, -1, false, false) // [B,T,d]
	if g.arch.EmbedScale {
		// Gemma rounds sqrt(dim) to the activations' dtype first.
		x = x.MustMulScalar(ts.FloatScalar(float64(float32(math.Sqrt(float64(g.cfg.Dim))))), true)
	}
	if positions != nil {
		x = x.MustAdd(positions, true)
	}
	return x
}

// lossLogits is the head's product kind in a pass for the training loss:
// LossLogits, unless the final logits are soft-capped (in float32, as
// Gemma 2's reference caps them).
func (g *GPT) lossLogits() Product {
	if g.cfg.FinalSoftcap > 0 {
		return OuterProduct
	}
	return LossLogits
}

// head is the final norm and the LM head over the last block's output x
// (left to the caller): logits [B,T,V], or [B,1,V] with lastOnly, the
// head a product of kind p (OuterProduct, or LossLogits for the loss).
func (g *GPT) head(x *ts.Tensor, be Backend, lastOnly bool, p Product) *ts.Tensor {
	var s scope
	defer s.drop()
	if t := x.MustSize()[1]; lastOnly && t > 1 {
		x = s.keep(x.MustNarrow(1, t-1, 1, false))
	}
	logits := be.Linear(s.keep(g.normalize(x, g.top[modFinalNorm], g.cfg.Dim)), g.top[modHead].w, nil, p) // [B,T,V]
	if c := g.cfg.FinalSoftcap; c > 0 {
		logits = softcap(logits, c)
	}
	return logits
}

// block is one layer (see the package comment) over x + branch, branch
// being the previous block's MLP output, which its caller has not added
// into x (nil: none). It returns the layer's output as two tensors for
// the caller, h and its own MLP output, whose sum is the output (mlp nil
// where the family sums the branches itself): the next block's norm adds
// them, in the same pass as it normalizes where memo's kernel runs
// (normFor), and settle adds them elsewhere. With lastOnly the output is
// the last position only, [B,1,d] (see run).
func (g *GPT) block(li int, x, branch *ts.Tensor, in *inputs, st *PassState, lastOnly bool) (h, mlp *ts.Tensor) {
	b := &g.blocks[li]
	be := g.backend(st)
	var s scope
	defer s.drop()
	x, xn, qkvIn := g.normFor(&s, x, branch, b, modAttnNorm, be, g.qkvReaders(st, be))
	attn := s.keep(g.attend(&s, li, xn, qkvIn, in, st, lastOnly))
	attn = s.keep(g.branchNorm(attn, b, modAttnPostNorm))
	if t := x.MustSize()[1]; lastOnly && t > 1 {
		x = s.keep(x.MustNarrow(1, t-1, 1, false))
	}
	// mlpOf is the MLP branch of x + delta (delta may be nil), with that
	// sum.
	mlpOf := func(x, delta *ts.Tensor) (sum, mlp *ts.Tensor) {
		sum, xn, in := g.normFor(&s, x, delta, b, modMLPNorm, be, g.gateUpReaders(st, be))
		return sum, s.keep(g.branchNorm(s.keep(g.mlp(&s, li, xn, in, st)), b, modMLPPostNorm))
	}
	if g.cfg.ParallelResidual {
		_, mlp := mlpOf(x, nil)
		// Hugging Face's order of the sum: (mlp + attn) + x.
		return s.keep(mlp.MustAdd(attn, false)).MustAdd(x, false), nil
	}
	h, mlp = mlpOf(x, attn)
	// Both live on in the caller, past the scope's end.
	return h.MustShallowClone(), mlp.MustShallowClone()
}

// settle is the layer output h + mlp that block returns in two parts
// (h itself where mlp is nil); it takes ownership of both.
func settle(h, mlp *ts.Tensor) *ts.Tensor {
	if mlp == nil {
		return h
	}
	out := h.MustAdd(mlp, false)
	h.MustDrop()
	mlp.MustDrop()
	return out
}

// normFor is block norm m of the residual sum x + delta (delta, a branch
// output not yet added into x, may be nil) for a branch whose first
// products read it, n of them separately (n is 1 for one product). It
// returns the sum (x where delta is nil, else a tensor of s's), the norm's
// result xn, and with n > 1 the n inputs of those products
// (productInputs). Every such product casts its input to be's dtype, so
// on a GPU the RMSNorm writes it there, one copy a product (over one
// buffer), in one kernel (torchx.RMSNormCopies), which adds delta in the
// same pass (torchx.AddRMSNormCopies): xn is then the first copy, which
// the recipe multiplies by (n = 1) or reads only for its shape.
func (g *GPT) normFor(s *scope, x, delta *ts.Tensor, b *block, m module, be Backend, n int) (sum, xn *ts.Tensor, in []*ts.Tensor) {
	rms := g.arch.Norm == NormRMS || g.arch.Norm == NormRMSOffset
	base, ok := be.(Base)
	kernel := ok && rms && g.arch.uses(m) && base.DType() != x.DType()
	copies := func(ys []*ts.Tensor) (*ts.Tensor, []*ts.Tensor) {
		for _, y := range ys {
			s.keep(y)
		}
		if n == 1 {
			return ys[0], nil
		}
		return ys[0], ys
	}
	offset := g.arch.Norm == NormRMSOffset
	if delta != nil {
		if kernel {
			if h, ys, ok := torchx.AddRMSNormCopies(x, delta, b.mods[m].w, g.cfg.NormEps, offset, base.DType(), n); ok {
				xn, in = copies(ys)
				return s.keep(h), xn, in
			}
		}
		x = s.keep(x.MustAdd(delta, false))
	}
	if kernel {
		if ys, ok := torchx.RMSNormCopies(x, b.mods[m].w, g.cfg.NormEps, offset, base.DType(), n); ok {
			xn, in = copies(ys)
			return x, xn, in
		}
	}
	xn = s.keep(g.branchNorm(x, b, m))
	if n > 1 {
		in = productInputs(s, xn, be, n)
	}
	return x, xn, in
}

// qkvReaders is how many products read the attention's normalized input:
// three (q, k, v) where the recipe multiplies them one at a time, else
// one.
func (g *GPT) qkvReaders(st *PassState, be Backend) int {
	if g.arch.QKV == QKVSeparate && separateProducts(g, st, be) {
		return 3
	}
	return 1
}

// gateUpReaders is qkvReaders for the MLP: two (gate, up) or one.
func (g *GPT) gateUpReaders(st *PassState, be Backend) int {
	if g.arch.MLP == MLPGated && separateProducts(g, st, be) {
		return 2
	}
	return 1
}

// branchNorm applies block norm m to x, or returns a shallow copy of x
// when the family has no such norm (the caller owns the result either way).
func (g *GPT) branchNorm(x *ts.Tensor, b *block, m module) *ts.Tensor {
	if !g.arch.uses(m) {
		return x.MustShallowClone()
	}
	return g.normalize(x, b.mods[m], g.cfg.Dim)
}

// attend is causal self-attention of the normalized xn [B,T,d], the
// family's recipe around the backend (Backend, chosen by whoever built
// st): q, k and v in one product, query/key norms, rotary
// positions, then the backend (cache, heads, kernel), then the output
// projection. qkvIn are the separate q, k and v products' inputs, which
// normFor makes where qkvReaders is 3 (else nil: one product). With lastOnly only the last position
// queries, and the result is [B,1,d].
func (g *GPT) attend(s *scope, li int, xn *ts.Tensor, qkvIn []*ts.Tensor, in *inputs, st *PassState, lastOnly bool) *ts.Tensor {
	c, a, blk, be := g.cfg, g.arch, &g.blocks[li], g.backend(st)
	size := xn.MustSize()
	b, t := size[0], size[1]
	h, kvh, hd := int64(c.Heads), int64(c.KVHeads), int64(c.HeadDim)
	var q, k, v *ts.Tensor // [B,H,T,hd], [B,KV,T,hd], [B,KV,T,hd]
	// kept: q, k and v stay in be's dtype from their products to the
	// attention kernel, which would cast them to it anyway.
	kept := a.QKV != QKVPerHead && keepsProjections(g, st, be)
	if a.QKV == QKVPerHead {
		m := blk.mods[modQKV]
		qkv := s.keep(g.linear(be, xn, m.w, m.b, OuterProduct))                                                   // [B,T,H·3·hd]
		perHead := s.keep(qkv.MustView([]int64{b, t, h, 3, hd}, false).MustPermute([]int64{3, 0, 2, 1, 4}, true)) // [3,B,H,T,hd]
		q = s.keep(perHead.MustSelect(0, 0, false))
		k = s.keep(perHead.MustSelect(0, 1, false))
		v = s.keep(perHead.MustSelect(0, 2, false))
	} else {
		var qf, kf, vf *ts.Tensor // [B,T,H·hd], [B,T,KV·hd], [B,T,KV·hd]
		kind := OuterProduct
		if kept {
			kind = InnerProduct
		}
		// normFor made qkvIn where q, k and v multiply separately.
		if qkvIn != nil {
			one := func(i int, m module) *ts.Tensor {
				return s.keep(g.linear(be, qkvIn[i], blk.mods[m].w, blk.mods[m].b, kind))
			}
			qf, kf, vf = one(0, modQ), one(1, modK), one(2, modV)
		} else {
			w, bias := g.fusedQKV(s, li, st)
			qkv := s.keep(g.linear(be, xn, w, bias, kind)) // [B,T,(H+2·KV)·hd]
			part := func(from, n int64) *ts.Tensor { return s.keep(qkv.MustNarrow(2, from*hd, n*hd, false)) }
			qf, kf, vf = part(0, h), part(h, kvh), part(h+kvh, kvh)
		}
		if a.QKNorm == QKNormFull {
			qf = s.keep(g.normalize(qf, blk.mods[modQNorm], c.Heads*c.HeadDim))
			kf = s.keep(g.normalize(kf, blk.mods[modKNorm], c.KVHeads*c.HeadDim))
		}
		if clip := c.QKVClip; clip > 0 {
			clamp := func(x *ts.Tensor) *ts.Tensor {
				return s.keep(x.MustClamp(ts.FloatScalar(-clip), ts.FloatScalar(clip), false))
			}
			qf, kf, vf = clamp(qf), clamp(kf), clamp(vf)
		}
		heads := func(x *ts.Tensor, n int64) *ts.Tensor {
			return s.keep(x.MustView([]int64{b, t, n, hd}, false).MustTranspose(1, 2, true))
		}
		q, k, v = heads(qf, h), heads(kf, kvh), heads(vf, kvh)
	}
	if a.QKNorm == QKNormHead {
		q = s.keep(g.normalize(q, blk.mods[modQNorm], c.HeadDim))
		k = s.keep(g.normalize(k, blk.mods[modKNorm], c.HeadDim))
	}
	if a.Positions == PosRotary {
		q = s.keep(g.rope(q, in.cos[blk.rope], in.sin[blk.rope], kept))
		k = g.rope(k, in.cos[blk.rope], in.sin[blk.rope], kept)
	} else {
		k = k.MustShallowClone()
	}
	v = v.MustShallowClone() // the backend takes ownership of k and v
	call := &AttentionCall{Layer: li, Q: q, K: k, V: v, Mask: in.masks[blk.window], Window: blk.window,
		Scale: g.attnScale(), Softcap: c.AttnSoftcap, LastOnly: lastOnly}
	if st != nil {
		call.Past, call.KV = st.Past, st.KV
	}
	merged := s.keep(be.Attend(call)) // [B,T',H·hd]
	out := blk.mods[modOut]
	return g.linear(be, merged, out.w, out.b, InnerProduct) // [B,T',d]
}

// attnScale multiplies the attention scores: 1/sqrt(head_dim), or
// 1/sqrt(query_pre_attn_scalar) where the family sets it (Gemma), or 1
// (GPT-Neo).
func (g *GPT) attnScale() float64 {
	switch {
	case g.arch.Unscaled:
		return 1
	case g.cfg.QueryScalar > 0:
		return 1 / math.Sqrt(g.cfg.QueryScalar)
	}
	return 1 / math.Sqrt(float64(g.cfg.HeadDim))
}

// mlp is the feed-forward branch: gated (gate and up in one product, or
// two on a GPU, reading in, which normFor makes where gateUpReaders is 2)
// or plain, with the family's activation; SiLU's gate in one C++ call
// (torchx.SwiGLU, SwiGLUJoined: memo's kernel on a GPU).
func (g *GPT) mlp(s *scope, li int, xn *ts.Tensor, in []*ts.Tensor, st *PassState) *ts.Tensor {
	blk, be := &g.blocks[li], g.backend(st)
	down := blk.mods[modDown]
	if g.arch.MLP == MLPPlain {
		up := blk.mods[modUp]
		hidden := s.keep(g.activate(s.keep(g.linear(be, xn, up.w, up.b, InnerProduct))))
		return g.linear(be, hidden, down.w, down.b, InnerProduct)
	}
	var gate, up *ts.Tensor // [B,T,f] each
	// normFor made in where gate and up multiply separately.
	if in != nil {
		gm, um := blk.mods[modGate], blk.mods[modUp]
		gate, up = s.keep(g.linear(be, in[0], gm.w, gm.b, InnerProduct)), s.keep(g.linear(be, in[1], um.w, um.b, InnerProduct))
	} else {
		f := int64(g.cfg.FFN)
		w, bias := g.fusedGateUp(s, li, st)
		gateUp := s.keep(g.linear(be, xn, w, bias, InnerProduct)) // [B,T,2f]
		if g.arch.Act == ActSiLU {
			return g.linear(be, s.keep(torchx.SwiGLUJoined(gateUp)), down.w, down.b, InnerProduct)
		}
		gate = s.keep(gateUp.MustNarrow(2, 0, f, false))
		up = s.keep(gateUp.MustNarrow(2, f, f, false))
	}
	var act *ts.Tensor
	if g.arch.Act == ActSiLU {
		act = s.keep(torchx.SwiGLU(gate, up))
	} else {
		act = s.keep(g.activate(gate).MustMul(up, true))
	}
	return g.linear(be, act, down.w, down.b, InnerProduct)
}

// activate is the family's activation of x, a new tensor.
func (g *GPT) activate(x *ts.Tensor) *ts.Tensor {
	switch g.arch.Act {
	case ActGELU:
		return x.MustGelu("none", false)
	case ActGELUTanh:
		return x.MustGelu("tanh", false)
	}
	return x.MustSilu(false)
}

// fusedQKV is layer li's q|k|v weight and bias (nil without): the stored
// one when the family fuses them, else the concatenation of q, k and v —
// the cache's copy when decoding (made once per cache rather than at every
// step), else made now and freed with s. In training's forward pass the
// concatenation is part of the graph, so gradients reach the separate
// Hugging Face parameters.
func (g *GPT) fusedQKV(s *scope, li int, st *PassState) (w, bias *ts.Tensor) {
	b := &g.blocks[li]
	if g.arch.QKV != QKVSeparate {
		return b.mods[modQKV].w, b.mods[modQKV].b
	}
	if b.joined.QKV != nil {
		return b.joined.QKV, b.joined.QKVBias
	}
	if st != nil && st.Joins != nil {
		f := st.Joins.Layer(li)
		return f.QKV, f.QKVBias
	}
	w, bias = g.catQKV(b)
	s.keep(w)
	if bias != nil {
		s.keep(bias)
	}
	return w, bias
}

// fusedGateUp is layer li's gate|up weight and bias, as fusedQKV.
func (g *GPT) fusedGateUp(s *scope, li int, st *PassState) (w, bias *ts.Tensor) {
	b := &g.blocks[li]
	if g.arch.MLP == MLPGatedFused {
		return b.mods[modGateUp].w, b.mods[modGateUp].b
	}
	if b.joined.GateUp != nil {
		return b.joined.GateUp, b.joined.GateUpBias
	}
	if st != nil && st.Joins != nil {
		f := st.Joins.Layer(li)
		return f.GateUp, f.GateUpBias
	}
	w, bias = g.catGateUp(b)
	s.keep(w)
	if bias != nil {
		s.keep(bias)
	}
	return w, bias
}

// catQKV concatenates separate q, k and v weights (and biases).
func (g *GPT) catQKV(b *block) (w, bias *ts.Tensor) {
	return catModules(b, g.arch.Conv1D, modQ, modK, modV)
}

// catGateUp concatenates separate gate and up weights (and biases).
func (g *GPT) catGateUp(b *block) (w, bias *ts.Tensor) {
	return catModules(b, g.arch.Conv1D, modGate, modUp)
}

// catModules concatenates modules' weights along their output dimension
// (the last for Conv1D) and their biases, nil when they have none.
func catModules(b *block, conv1D bool, mods ...module) (w, bias *ts.Tensor) {
	ws := make([]*ts.Tensor, len(mods))
	var bs []*ts.Tensor
	for i, m := range mods {
		ws[i] = b.mods[m].w
		if b.mods[m].b != nil {
			bs = append(bs, b.mods[m].b)
		}
	}
	dim := int64(0)
	if conv1D {
		dim = 1
	}
	w = ts.MustCat(ws, dim)
	if len(bs) > 0 {
		bias = ts.MustCat(bs, 0)
	}
	return w, bias
}

// linear is a block's linear map by be: x·wᵀ + bias, or x·w + bias for
// Conv1D's [in, out] weights, which it hands to be transposed (a view, not
// contiguous: the engine's row kernel leaves it to the model's own
// backend, as it always has).
func (g *GPT) linear(be Backend, x, w, bias *ts.Tensor, p Product) *ts.Tensor {
	if g.arch.Conv1D {
		w = w.MustT(false)
		defer w.MustDrop()
	}
	return be.Linear(x, w, bias, p)
}

// keepsProjections reports whether the q, k and v products leave their
// results in be's dtype (Layout.KeepsProjections): asked of an uncached
// pass when nothing between the products and the attention's fused kernel
// needs float32 inputs (no query/key norm, whose square would round;
// rotary over whole heads, whose float32 angles promote q and k back to
// float32 as PyTorch's rotary does, so v alone skips the round trip).
// That is four casts a layer fewer in the forward pass and in the
// backward.
func keepsProjections(g *GPT, st *PassState, be Backend) bool {
	l, ok := be.(Layout)
	return ok && !st.cached() && g.arch.QKNorm == QKNormNone && g.cfg.QKVClip == 0 &&
		(g.arch.Positions != PosRotary || g.cfg.RotaryDim() == g.cfg.HeadDim) && l.KeepsProjections()
}

// productInputs is x as n separate products read it: x itself unless be
// says it multiplies in another dtype (Base), else n copies in that dtype
// (freed with s), the casts each product would make of x, made in one
// pass and with their gradients summed in one (torchx.CastCopies).
func productInputs(s *scope, x *ts.Tensor, be Backend, n int) []*ts.Tensor {
	in := make([]*ts.Tensor, n)
	b, ok := be.(Base)
	if !ok || b.DType() == x.DType() {
		for i := range in {
			in[i] = x
		}
		return in
	}
	for i, c := range torchx.CastCopies(x, b.DType(), n) {
		in[i] = s.keep(c)
	}
	return in
}

// separateProducts reports whether a block multiplies by its separate
// q, k, v (gate, up) weights one at a time (Layout.SeparateProducts):
// only in an uncached pass of a model whose layers are not joined.
func separateProducts(g *GPT, st *PassState, be Backend) bool {
	l, ok := be.(Layout)
	return ok && !st.cached() && !g.joined() && l.SeparateProducts()
}

// normalize applies the family's norm with weights n over the last
// dimension, of size dim. RMSNorm runs in one C++ call (torchx.RMSNorm:
// the same libtorch ops as composing them here, bit for bit, at a sixth of
// the Go → C calls, which a GPU's forward pass waits on).
func (g *GPT) normalize(x *ts.Tensor, n weights, dim int) *ts.Tensor {
	eps := g.cfg.NormEps
	switch g.arch.Norm {
	case NormLayer:
		return ts.MustLayerNorm(x, []int64{int64(dim)}, n.w, n.b, eps, false)
	case NormLayerPlain:
		return ts.MustLayerNorm(x, []int64{int64(dim)}, noBias, noBias, eps, false)
	}
	return torchx.RMSNorm(x, n.w, eps, g.arch.Norm == NormRMSOffset)
}

// rope rotates the first RotaryDim dimensions of x [..., T, hd] by their
// positions' angles (rotate-half within them: x·cos + swapHalves(x)·sin,
// sin signed); the rest pass unchanged. One C++ call (torchx.Rope) for
// what were up to eight gotch ops, bit-identical to them. With kept the
// result stays in x's dtype (the attention kernel's), as the kernel's
// cast of the float32 result would give it: on a GPU memo's rotary
// kernel writes it in one pass (torchx.RopeTo).
func (g *GPT) rope(x, cos, sinSigned *ts.Tensor, kept bool) *ts.Tensor {
	if kept {
		return torchx.RopeTo(x, cos, sinSigned, int64(g.cfg.RotaryDim()), x.DType())
	}
	return torchx.Rope(x, cos, sinSigned, int64(g.cfg.RotaryDim()))
}

// Replica returns a GPT whose weights share storage with g's but are
// separate autograd leaves, so another OS thread can run forward and
// backward on it concurrently and its gradients land in its own tensors.
// Updates to g's weights are seen by the replica.
func (g *GPT) Replica() *GPT {
	r := *g
	r.causal = nil
	r.params = make([]Param, len(g.params))
	alias := map[*ts.Tensor]*ts.Tensor{}
	for i, p := range g.params {
		t := p.Tensor.MustDetach(false).MustSetRequiresGrad(true, true)
		alias[p.Tensor] = t
		r.params[i] = Param{Name: p.Name, Tensor: t, Decay: p.Decay, Layer: p.Layer}
	}
	if g.tiedHead != nil {
		r.tiedHead = g.tiedHead.MustDetach(false).MustSetRequiresGrad(true, true)
		alias[g.tiedHead] = r.tiedHead
	}
	r.top = map[module]weights{}
	for m, w := range g.top {
		r.top[m] = weights{alias[w.w], alias[w.b]}
	}
	r.views = nil // a replica is trained: its aliases are leaves
	r.blocks = make([]block, len(g.blocks))
	for i, b := range g.blocks {
		b.each(func(_ module, t **ts.Tensor, _ bool) { *t = alias[*t] }) // nil maps to nil
		b.joined = Joined{}
		r.blocks[i] = b
	}
	return &r
}
