// Package model is memo's decoder: a Llama-style transformer on libtorch
// (through gotch), its parameter and FLOP counts, and KV-cache decoding.
//
// The network, per DESIGN.md: token embedding; Layers pre-norm blocks of
// RMSNorm (eps 1e-5) → causal multi-head attention with rotary embeddings
// (theta 10000, rotate-half) and no biases → residual → RMSNorm → SwiGLU MLP
// down(silu(gate(x)) * up(x)) → residual; a final RMSNorm; an LM head tied to
// the embedding unless Config.Untied. Weights are N(0, 0.02), norms 1.
//
// Tensor names follow Hugging Face's Llama so checkpoints open in PyTorch
// tools (see Names).
//
// libtorch keeps its grad mode per OS thread: a caller that wraps Forward in
// ts.NoGrad must hold runtime.LockOSThread around it, or the goroutine may
// run the forward on another thread with gradients on. ForwardCached and
// Generate do this themselves.
package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"unsafe"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"
)

const (
	normEps    = 1e-5
	ropeTheta  = 10000.0
	initStdDev = 0.02
)

// Param is one trainable tensor under its Hugging Face name. Decay is true
// for matrices (weight decay applies) and false for norm gains.
type Param struct {
	Name   string
	Tensor *ts.Tensor
	Decay  bool
}

// GPT is the decoder. Its weights live in the nn.Path it was built on.
type GPT struct {
	cfg    Config
	device gotch.Device
	embed  *ts.Tensor // [V, d]
	blocks []block
	norm   *ts.Tensor // [d]
	head   *ts.Tensor // [V, d]; the embedding when tied
	params []Param
	// cos and sinS are the rotary tables [Context, headDim]; sinS carries
	// rotate-half's sign (−sin on the first half) so that
	// rope(x) = x·cos + swapHalves(x)·sinS.
	cos, sinS *ts.Tensor
	causal    map[int64]*ts.Tensor // additive causal masks by length
}

type block struct {
	attnNorm, q, k, v, o *ts.Tensor
	mlpNorm, gate, up    *ts.Tensor
	down                 *ts.Tensor
}

// New builds a GPT with fresh weights on p. cfg is resolved first; the
// weights are drawn from cfg.Seed in Go, so they are the same on any device
// and libtorch build.
func New(p *nn.Path, cfg Config) (*GPT, error) {
	c, err := cfg.Resolve()
	if err != nil {
		return nil, err
	}
	g := &GPT{cfg: c, device: p.Device(), causal: map[int64]*ts.Tensor{}}
	rng := rand.New(rand.NewPCG(uint64(c.Seed), 0x6d656d6f)) // "memo"
	v, d, f := int64(c.Vocab), int64(c.Dim), int64(c.FFN)
	// Every weight's path is built afresh from p: gotch's Path.Sub appends to
	// a shared slice, so two live sibling paths could overwrite each other.
	add := func(name string, dims []int64, matrix bool) (*ts.Tensor, error) {
		n := dims[0]
		if len(dims) == 2 {
			n *= dims[1]
		}
		vals := make([]float32, n)
		for i := range vals {
			if matrix {
				vals[i] = float32(rng.NormFloat64() * initStdDev)
			} else {
				vals[i] = 1
			}
		}
		t, err := tensorOf(vals, dims, g.device)
		if err != nil {
			return nil, err
		}
		defer t.MustDrop()
		leaf := p
		for _, part := range strings.Split(name, ".") {
			leaf = leaf.Sub(part)
		}
		pt, err := leaf.Add("weight", t, true)
		if err != nil {
			return nil, fmt.Errorf("add %s: %w", name, err)
		}
		g.params = append(g.params, Param{Name: name + ".weight", Tensor: pt, Decay: matrix})
		return pt, nil
	}
	must := func(t *ts.Tensor, e error) *ts.Tensor {
		if err == nil && e != nil {
			err = e
		}
		return t
	}
	g.embed = must(add("model.embed_tokens", []int64{v, d}, true))
	for i := 0; i < c.Layers; i++ {
		lp := fmt.Sprintf("model.layers.%d.", i)
		g.blocks = append(g.blocks, block{
			attnNorm: must(add(lp+"input_layernorm", []int64{d}, false)),
			q:        must(add(lp+"self_attn.q_proj", []int64{d, d}, true)),
			k:        must(add(lp+"self_attn.k_proj", []int64{d, d}, true)),
			v:        must(add(lp+"self_attn.v_proj", []int64{d, d}, true)),
			o:        must(add(lp+"self_attn.o_proj", []int64{d, d}, true)),
			mlpNorm:  must(add(lp+"post_attention_layernorm", []int64{d}, false)),
			gate:     must(add(lp+"mlp.gate_proj", []int64{f, d}, true)),
			up:       must(add(lp+"mlp.up_proj", []int64{f, d}, true)),
			down:     must(add(lp+"mlp.down_proj", []int64{d, f}, true)),
		})
	}
	g.norm = must(add("model.norm", []int64{d}, false))
	g.head = g.embed
	if c.Untied {
		g.head = must(add("lm_head", []int64{v, d}, true))
	}
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if g.cos, g.sinS, err = ropeTables(c.Context, c.HeadDim(), g.device); err != nil {
		return nil, fmt.Errorf("model: rotary tables: %w", err)
	}
	return g, nil
}

// Config is the resolved configuration the model was built with.
func (g *GPT) Config() Config { return g.cfg }

// Device is where the weights live.
func (g *GPT) Device() gotch.Device { return g.device }

// Params lists the trainable tensors in a fixed order: the embedding, each
// layer's input_layernorm, q/k/v/o_proj, post_attention_layernorm,
// gate/up/down_proj, then model.norm and (untied) lm_head.
func (g *GPT) Params() []Param { return g.params }

// Names lists the Hugging Face tensor names of Params, in order.
func (g *GPT) Names() []string {
	out := make([]string, len(g.params))
	for i, p := range g.params {
		out[i] = p.Name
	}
	return out
}

// Forward maps token ids [B,T] (int64, T <= Context) to logits [B,T,V]. It
// panics when T exceeds the context, a caller's bug.
func (g *GPT) Forward(ids *ts.Tensor) *ts.Tensor {
	size := ids.MustSize()
	if len(size) != 2 || size[1] > int64(g.cfg.Context) {
		panic(fmt.Sprintf("model: Forward on ids %v: want [B,T] with T <= context %d", size, g.cfg.Context))
	}
	t := size[1]
	cos := g.cos.MustNarrow(0, 0, t, false)
	sin := g.sinS.MustNarrow(0, 0, t, false)
	defer cos.MustDrop()
	defer sin.MustDrop()
	return g.run(ids, cos, sin, g.causalMask(t), nil)
}

// causalMask is the additive [T,T] mask: 0 on and below the diagonal, −inf above.
func (g *GPT) causalMask(t int64) *ts.Tensor {
	if m, ok := g.causal[t]; ok {
		return m
	}
	vals := make([]float32, t*t)
	for i := int64(0); i < t; i++ {
		for j := i + 1; j < t; j++ {
			vals[i*t+j] = float32(math.Inf(-1))
		}
	}
	m, err := tensorOf(vals, []int64{t, t}, g.device)
	if err != nil {
		panic(fmt.Sprintf("model: causal mask: %v", err))
	}
	g.causal[t] = m
	return m
}

// run is the network. cos and sin are broadcastable to [B,1,T,hd] (rows of
// the rotary tables for each token's position); mask is additive and
// broadcastable to [B,H,T,S] where S counts the keys attended; cache, when
// not nil, receives this call's keys and values and supplies earlier ones.
func (g *GPT) run(ids, cos, sin, mask *ts.Tensor, cache *Cache) *ts.Tensor {
	c := g.cfg
	size := ids.MustSize()
	b, t := size[0], size[1]
	d, h, hd := int64(c.Dim), int64(c.Heads), int64(c.HeadDim())
	none := ts.NewTensor()
	defer none.MustDrop()

	x := ts.MustEmbedding(g.embed, ids, -1, false, false) // [B,T,d]
	for li := range g.blocks {
		blk := &g.blocks[li]

		// Attention. One product for q, k and v; the weights are
		// concatenated here rather than stored fused so that checkpoints
		// keep Hugging Face's separate q/k/v_proj.
		xn := rmsNorm(x, blk.attnNorm)
		wqkv := ts.MustCat([]*ts.Tensor{blk.q, blk.k, blk.v}, 0)
		qkv := ts.MustLinear(xn, wqkv, none) // [B,T,3d]
		xn.MustDrop()
		wqkv.MustDrop()
		qkv5 := qkv.MustView([]int64{b, t, 3, h, hd}, true).MustPermute([]int64{2, 0, 3, 1, 4}, true) // [3,B,H,T,hd]
		qk := qkv5.MustNarrow(0, 0, 2, false)
		qkr := rope(qk, cos, sin, hd) // [2,B,H,T,hd]
		qk.MustDrop()
		q := qkr.MustSelect(0, 0, false)
		k := qkr.MustSelect(0, 1, false)
		v := qkv5.MustSelect(0, 2, false)
		qkr.MustDrop()
		qkv5.MustDrop()
		if cache != nil {
			k, v = cache.append(li, k, v)
		}
		att := attention(q, k, v, mask, 1/math.Sqrt(float64(hd))) // [B,H,T,hd]
		q.MustDrop()
		k.MustDrop()
		v.MustDrop()
		att2 := att.MustTranspose(1, 2, true).MustReshape([]int64{b, t, d}, true)
		ao := ts.MustLinear(att2, blk.o, none)
		att2.MustDrop()
		x1 := x.MustAdd(ao, true)
		ao.MustDrop()

		// SwiGLU MLP, gate and up in one product.
		xn = rmsNorm(x1, blk.mlpNorm)
		wgu := ts.MustCat([]*ts.Tensor{blk.gate, blk.up}, 0)
		gu := ts.MustLinear(xn, wgu, none) // [B,T,2f]
		xn.MustDrop()
		wgu.MustDrop()
		f := int64(c.FFN)
		gate := gu.MustNarrow(2, 0, f, false)
		up := gu.MustNarrow(2, f, f, false)
		gu.MustDrop()
		act := gate.MustSilu(true).MustMul(up, true)
		up.MustDrop()
		mo := ts.MustLinear(act, blk.down, none)
		act.MustDrop()
		x = x1.MustAdd(mo, true)
		mo.MustDrop()
	}
	xn := rmsNorm(x, g.norm)
	x.MustDrop()
	logits := ts.MustLinear(xn, g.head, none)
	xn.MustDrop()
	return logits
}

// rmsNorm is x / sqrt(mean(x²) + eps) · w over the last dimension.
func rmsNorm(x, w *ts.Tensor) *ts.Tensor {
	ms := x.MustSquare(false).MustMeanDim([]int64{-1}, true, gotch.Float, true)
	inv := ms.MustAddScalar(ts.FloatScalar(normEps), true).MustRsqrt(true)
	y := x.MustMul(inv, false)
	inv.MustDrop()
	return y.MustMul(w, true)
}

// rope rotates x [..., T, hd] by its positions' angles (rotate-half layout).
func rope(x, cos, sinS *ts.Tensor, hd int64) *ts.Tensor {
	half := hd / 2
	x1 := x.MustNarrow(-1, 0, half, false)
	x2 := x.MustNarrow(-1, half, half, false)
	sw := ts.MustCat([]*ts.Tensor{x2, x1}, -1)
	x1.MustDrop()
	x2.MustDrop()
	a := x.MustMul(cos, false)
	bsin := sw.MustMul(sinS, true)
	out := a.MustAdd(bsin, true)
	bsin.MustDrop()
	return out
}

// attention is softmax(q·kᵀ·scale + mask)·v with q [B,H,T,hd], k and v
// [B,H,S,hd]. Written with matmul and softmax: libtorch 1.13's fused
// scaled_dot_product_attention is not available here.
func attention(q, k, v, mask *ts.Tensor, scale float64) *ts.Tensor {
	if mask.Dim() == 2 {
		return attention3(q, k, v, mask, scale)
	}
	kt := k.MustTranspose(-2, -1, false)
	s := q.MustMatmul(kt, false)
	kt.MustDrop()
	s = s.MustMulScalar(ts.FloatScalar(scale), true).MustAdd(mask, true)
	p := s.MustSoftmax(-1, gotch.Float, true)
	out := p.MustMatmul(v, true)
	return out
}

// attention3 is attention for a [T,S] mask shared by every row and head:
// scaling, masking and the score product are one baddbmm on [B·H,T,hd].
// For causal self-attention (T == S) the queries are cut into blocks that
// attend only to the keys up to their block's end, which skips most of the
// fully masked scores (a quarter of the work with two blocks, 3/8 with four).
func attention3(q, k, v, mask *ts.Tensor, scale float64) *ts.Tensor {
	sz := q.MustSize()
	b, h, t, hd := sz[0], sz[1], sz[2], sz[3]
	s := k.MustSize()[2]
	k3 := k.MustReshape([]int64{b * h, s, hd}, false)
	v3 := v.MustReshape([]int64{b * h, s, hd}, false)
	defer k3.MustDrop()
	defer v3.MustDrop()
	blocks := int64(1)
	switch {
	case t == s && t >= 256 && t%4 == 0:
		blocks = 4
	case t == s && t >= 64 && t%2 == 0:
		blocks = 2
	}
	step := t / blocks
	outs := make([]*ts.Tensor, 0, blocks)
	for i := int64(0); i < blocks; i++ {
		lo, n := i*step, step
		keys := s
		if blocks > 1 {
			keys = lo + n // causal: later keys are all masked
		}
		qi := q.MustNarrow(2, lo, n, false).MustReshape([]int64{b * h, n, hd}, true)
		ki := k3.MustNarrow(1, 0, keys, false).MustTranspose(1, 2, true)
		vi := v3.MustNarrow(1, 0, keys, false)
		mi := mask.MustNarrow(0, lo, n, false).MustNarrow(1, 0, keys, true).MustExpand([]int64{b * h, n, keys}, false, true)
		scores := mi.MustBaddbmm(qi, ki, ts.FloatScalar(1), ts.FloatScalar(scale), false)
		qi.MustDrop()
		ki.MustDrop()
		mi.MustDrop()
		p := scores.MustSoftmax(-1, gotch.Float, true)
		outs = append(outs, p.MustBmm(vi, true))
		vi.MustDrop()
	}
	out := outs[0]
	if blocks > 1 {
		out = ts.MustCat(outs, 1)
		for _, o := range outs {
			o.MustDrop()
		}
	}
	return out.MustView([]int64{b, h, t, hd}, true)
}

// ropeTables builds cos and signed-sin tables [n, hd] for positions 0..n-1:
// inverse frequency theta^(−2i/hd) for i < hd/2, each repeated in both halves.
func ropeTables(n, hd int, dev gotch.Device) (cos, sinS *ts.Tensor, err error) {
	half := hd / 2
	cv := make([]float32, n*hd)
	sv := make([]float32, n*hd)
	for p := 0; p < n; p++ {
		for i := 0; i < half; i++ {
			ang := float64(p) * math.Pow(ropeTheta, -2*float64(i)/float64(hd))
			c, s := float32(math.Cos(ang)), float32(math.Sin(ang))
			cv[p*hd+i], cv[p*hd+half+i] = c, c
			sv[p*hd+i], sv[p*hd+half+i] = -s, s
		}
	}
	if cos, err = tensorOf(cv, []int64{int64(n), int64(hd)}, dev); err != nil {
		return nil, nil, err
	}
	if sinS, err = tensorOf(sv, []int64{int64(n), int64(hd)}, dev); err != nil {
		return nil, nil, err
	}
	return cos, sinS, nil
}

// tensorOf copies a Go slice into a tensor of the given shape on dev. The
// tensor owns its storage (it is not a view), so it can become a parameter
// that the optimizer updates in place.
func tensorOf[T float32 | int64](vals []T, dims []int64, dev gotch.Device) (*ts.Tensor, error) {
	dtype := gotch.Float
	var zero T
	if _, ok := any(zero).(int64); ok {
		dtype = gotch.Int64
	}
	var raw []byte
	if len(vals) > 0 {
		raw = unsafe.Slice((*byte)(unsafe.Pointer(&vals[0])), len(vals)*int(unsafe.Sizeof(zero)))
	}
	t, err := ts.OfDataSize(raw, dims, dtype)
	if err != nil {
		return nil, err
	}
	if dev == gotch.CPU {
		return t, nil
	}
	return t.To(dev, true)
}

// Replica returns a GPT whose weights share storage with g's but are
// separate autograd leaves, so another OS thread can run forward and
// backward on it concurrently and its gradients land in its own tensors.
// Updates to g's weights are seen by the replica.
func (g *GPT) Replica() *GPT {
	r := *g
	r.causal = map[int64]*ts.Tensor{}
	r.params = make([]Param, len(g.params))
	alias := map[*ts.Tensor]*ts.Tensor{}
	for i, p := range g.params {
		t := p.Tensor.MustDetach(false).MustSetRequiresGrad(true, true)
		alias[p.Tensor] = t
		r.params[i] = Param{Name: p.Name, Tensor: t, Decay: p.Decay}
	}
	r.embed, r.norm, r.head = alias[g.embed], alias[g.norm], alias[g.head]
	r.blocks = make([]block, len(g.blocks))
	for i, b := range g.blocks {
		r.blocks[i] = block{
			attnNorm: alias[b.attnNorm], q: alias[b.q], k: alias[b.k], v: alias[b.v], o: alias[b.o],
			mlpNorm: alias[b.mlpNorm], gate: alias[b.gate], up: alias[b.up], down: alias[b.down],
		}
	}
	return &r
}
