// Package model is memo's decoder: a transformer on libtorch (through
// gotch), its parameter and FLOP counts, and KV-cache decoding.
//
// Two block layouts share one forward pass, so that memo trains its own
// models and imports the checkpoints researchers study (docs/DESIGN.md):
//
//   - llama (memo's own, and Llama/TinyLlama/SmolLM/Mistral): RMSNorm →
//     causal attention with rotary embeddings (rotate-half) over
//     grouped-query heads → residual → RMSNorm → SwiGLU
//     down(silu(gate(x)) * up(x)) → residual; optional attention biases;
//   - gpt_neox (Pythia): LayerNorm with bias, one fused per-head q|k|v
//     projection with bias, rotary on the first rotary_pct of each head,
//     an exact-GELU MLP with biases, and optionally the parallel residual
//     x + attn(ln1(x)) + mlp(ln2(x)).
//
// Then a final norm and an LM head, tied to the embedding unless
// Config.Untied. Fresh weights are N(0, 0.02), norm gains 1, biases 0.
// Tensor names are Hugging Face's for the layout (see Params).
//
// libtorch keeps its grad mode per OS thread: a caller that wraps Forward in
// ts.NoGrad must hold runtime.LockOSThread around it, or the goroutine may
// run the forward on another thread with gradients on. ForwardCached and
// the Stepper do this themselves.
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
	norm   norm
	head   *ts.Tensor // [V, d]; the embedding when tied
	params []Param
	// cos and sinSigned are the rotary tables [Context, RotaryDim];
	// sinSigned carries rotate-half's sign (−sin on the first half), so
	// that rope(x) = x·cos + swapHalves(x)·sinSigned.
	cos, sinSigned *ts.Tensor
	causal         *ts.Tensor // the additive causal mask of the longest length asked for (causalMask)
}

// norm is RMSNorm's gain, or LayerNorm's gain and bias (gpt_neox).
type norm struct{ weight, bias *ts.Tensor }

// block holds one layer's weights. A nil bias is no bias.
type block struct {
	norm1, norm2 norm
	// llama: separate q, k, v projections [heads·hd, d] and [kv·hd, d],
	// concatenated into one product per forward so that checkpoints keep
	// Hugging Face's separate q/k/v_proj. gpt_neox: qkv [3·heads·hd, d]
	// laid out per head as q|k|v.
	q, k, v, qBias, kBias, vBias *ts.Tensor
	qkv, qkvBias                 *ts.Tensor
	out, outBias                 *ts.Tensor // [d, heads·hd]
	// llama: gate, up [ffn, d], down [d, ffn]; gpt_neox: up and down with biases.
	gate, up, down, upBias, downBias *ts.Tensor
}

// tensors lists a block's weight slots, so Replica can remap them all.
func (b *block) tensors() []**ts.Tensor {
	return []**ts.Tensor{&b.norm1.weight, &b.norm1.bias, &b.norm2.weight, &b.norm2.bias,
		&b.q, &b.k, &b.v, &b.qBias, &b.kBias, &b.vBias, &b.qkv, &b.qkvBias, &b.out, &b.outBias,
		&b.gate, &b.up, &b.down, &b.upBias, &b.downBias}
}

// New builds a GPT with fresh weights on p. cfg is resolved first; the
// weights are drawn from cfg.Seed in Go, so they are the same on any device
// and libtorch build.
func New(p *nn.Path, cfg Config) (*GPT, error) { return build(p, cfg, true) }

// NewUninitialized builds a GPT whose weights are allocated but not set,
// for a caller that loads every one of them from a file next: drawing
// a billion normal values only to overwrite them would take seconds.
func NewUninitialized(p *nn.Path, cfg Config) (*GPT, error) { return build(p, cfg, false) }

// weightKind says how a fresh weight starts.
type weightKind int

const (
	matrixWeight weightKind = iota // N(0, 0.02), decayed
	gainWeight                     // ones
	biasWeight                     // zeros
)

func build(p *nn.Path, cfg Config, initialise bool) (*GPT, error) {
	c, err := cfg.Resolve()
	if err != nil {
		return nil, err
	}
	g := &GPT{cfg: c, device: p.Device()}
	rng := rand.New(rand.NewPCG(uint64(c.Seed), 0x6d656d6f)) // "memo"
	// Every weight's path is built afresh from p: gotch's Path.Sub appends to
	// a shared slice, so two live sibling paths could overwrite each other.
	add := func(name string, kind weightKind, dims ...int64) *ts.Tensor {
		if err != nil {
			return nil
		}
		var t *ts.Tensor
		if initialise {
			n := dims[0]
			if len(dims) == 2 {
				n *= dims[1]
			}
			vals := make([]float32, n)
			for i := range vals {
				switch kind {
				case matrixWeight:
					vals[i] = float32(rng.NormFloat64() * initStdDev)
				case gainWeight:
					vals[i] = 1
				}
			}
			if t, err = tensorOf(vals, dims, g.device); err != nil {
				return nil
			}
		} else {
			t = ts.MustEmpty(dims, gotch.Float, g.device)
		}
		defer t.MustDrop()
		leaf := p
		parts := strings.Split(name, ".")
		for _, part := range parts[:len(parts)-1] {
			leaf = leaf.Sub(part)
		}
		pt, e := leaf.Add(parts[len(parts)-1], t, true)
		if e != nil {
			err = fmt.Errorf("add %s: %w", name, e)
			return nil
		}
		g.params = append(g.params, Param{Name: name, Tensor: pt, Decay: kind == matrixWeight})
		return pt
	}
	v, d, f := int64(c.Vocab), int64(c.Dim), int64(c.FFN)
	q, kv := int64(c.Heads*c.HeadDim), int64(c.KVHeads*c.HeadDim)
	optBias := func(name string, n int64) *ts.Tensor {
		if !c.Bias {
			return nil
		}
		return add(name, biasWeight, n)
	}
	switch c.Arch {
	case ArchLlama:
		g.embed = add("model.embed_tokens.weight", matrixWeight, v, d)
		for i := 0; i < c.Layers; i++ {
			lp := fmt.Sprintf("model.layers.%d.", i)
			var b block
			b.norm1.weight = add(lp+"input_layernorm.weight", gainWeight, d)
			b.q = add(lp+"self_attn.q_proj.weight", matrixWeight, q, d)
			b.qBias = optBias(lp+"self_attn.q_proj.bias", q)
			b.k = add(lp+"self_attn.k_proj.weight", matrixWeight, kv, d)
			b.kBias = optBias(lp+"self_attn.k_proj.bias", kv)
			b.v = add(lp+"self_attn.v_proj.weight", matrixWeight, kv, d)
			b.vBias = optBias(lp+"self_attn.v_proj.bias", kv)
			b.out = add(lp+"self_attn.o_proj.weight", matrixWeight, d, q)
			b.outBias = optBias(lp+"self_attn.o_proj.bias", d)
			b.norm2.weight = add(lp+"post_attention_layernorm.weight", gainWeight, d)
			b.gate = add(lp+"mlp.gate_proj.weight", matrixWeight, f, d)
			b.up = add(lp+"mlp.up_proj.weight", matrixWeight, f, d)
			b.down = add(lp+"mlp.down_proj.weight", matrixWeight, d, f)
			g.blocks = append(g.blocks, b)
		}
		g.norm.weight = add("model.norm.weight", gainWeight, d)
		g.head = g.embed
		if c.Untied {
			g.head = add("lm_head.weight", matrixWeight, v, d)
		}
	case ArchGPTNeoX:
		g.embed = add("gpt_neox.embed_in.weight", matrixWeight, v, d)
		for i := 0; i < c.Layers; i++ {
			lp := fmt.Sprintf("gpt_neox.layers.%d.", i)
			var b block
			b.norm1 = norm{add(lp+"input_layernorm.weight", gainWeight, d), add(lp+"input_layernorm.bias", biasWeight, d)}
			b.norm2 = norm{add(lp+"post_attention_layernorm.weight", gainWeight, d), add(lp+"post_attention_layernorm.bias", biasWeight, d)}
			b.qkv = add(lp+"attention.query_key_value.weight", matrixWeight, 3*q, d)
			b.qkvBias = add(lp+"attention.query_key_value.bias", biasWeight, 3*q)
			b.out = add(lp+"attention.dense.weight", matrixWeight, d, q)
			b.outBias = add(lp+"attention.dense.bias", biasWeight, d)
			b.up = add(lp+"mlp.dense_h_to_4h.weight", matrixWeight, f, d)
			b.upBias = add(lp+"mlp.dense_h_to_4h.bias", biasWeight, f)
			b.down = add(lp+"mlp.dense_4h_to_h.weight", matrixWeight, d, f)
			b.downBias = add(lp+"mlp.dense_4h_to_h.bias", biasWeight, d)
			g.blocks = append(g.blocks, b)
		}
		g.norm = norm{add("gpt_neox.final_layer_norm.weight", gainWeight, d), add("gpt_neox.final_layer_norm.bias", biasWeight, d)}
		g.head = g.embed
		if c.Untied {
			g.head = add("embed_out.weight", matrixWeight, v, d)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if g.cos, g.sinSigned, err = ropeTables(c, g.device); err != nil {
		return nil, fmt.Errorf("model: rotary tables: %w", err)
	}
	return g, nil
}

// Config is the resolved configuration the model was built with.
func (g *GPT) Config() Config { return g.cfg }

// Device is where the weights live.
func (g *GPT) Device() gotch.Device { return g.device }

// Params lists the trainable tensors in a fixed order: for llama the
// embedding, each layer's input_layernorm, q/k/v/o_proj (each followed by
// its bias when Config.Bias), post_attention_layernorm, gate/up/down_proj,
// then model.norm and (untied) lm_head; gpt_neox likewise in its names.
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

// Forward maps token ids [B,T] (int64, T <= Context) to logits [B,T,V]. It
// panics when T exceeds the context, a caller's bug.
func (g *GPT) Forward(ids *ts.Tensor) *ts.Tensor {
	size := ids.MustSize()
	if len(size) != 2 || size[1] > int64(g.cfg.Context) {
		panic(fmt.Sprintf("model: Forward on ids %v: want [B,T] with T <= context %d", size, g.cfg.Context))
	}
	t := size[1]
	cos := g.cos.MustNarrow(0, 0, t, false)
	sin := g.sinSigned.MustNarrow(0, 0, t, false)
	defer cos.MustDrop()
	defer sin.MustDrop()
	mask := g.causalMask(t)
	defer mask.MustDrop()
	return g.run(ids, cos, sin, mask, nil, false)
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
		g.causal = g.newCausalMask(t)
	}
	return g.causal.MustNarrow(0, 0, t, false).MustNarrow(1, 0, t, true)
}

// newCausalMask builds the [T,T] causal mask (see causalMask).
func (g *GPT) newCausalMask(t int64) *ts.Tensor {
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
	return m
}

// scope collects the intermediate tensors of one block so they are freed
// together when it ends, instead of a MustDrop after every use.
type scope []*ts.Tensor

func (s *scope) keep(t *ts.Tensor) *ts.Tensor {
	*s = append(*s, t)
	return t
}

func (s *scope) drop() {
	for _, t := range *s {
		t.MustDrop()
	}
	*s = nil
}

// run is the network. cos and sin are broadcastable to [B,1,T,rot] (rows
// of the rotary tables for each token's position); mask is additive and
// broadcastable to [B,H,T,S] where S counts the keys attended; cache, when
// not nil, receives this call's keys and values and supplies earlier ones.
//
// With lastOnly the final norm and the LM head run on the last position
// only and the logits are [B,1,V]: a decoder needs no other position's,
// and at a prompt of T tokens the head over every position (V×d per
// token) is the prompt pass's largest product. So does the last block
// after its keys and values (which the cache needs for every position):
// its attention, output projection and MLP, most of a block's work.
func (g *GPT) run(ids, cos, sin, mask *ts.Tensor, cache *Cache, lastOnly bool) *ts.Tensor {
	x := ts.MustEmbedding(g.embed, ids, -1, false, false) // [B,T,d]
	// Approximate attention after the prompt pass reads every query's
	// scores: there the last block runs whole.
	trimLast := lastOnly && (cache == nil || cache.approx == nil || cache.n == 0)
	for li := range g.blocks {
		next := g.block(li, x, cos, sin, mask, cache, trimLast && li == len(g.blocks)-1)
		x.MustDrop()
		x = next
	}
	var s scope
	defer s.drop()
	s.keep(x)
	if t := x.MustSize()[1]; lastOnly && t > 1 {
		x = s.keep(x.MustNarrow(1, t-1, 1, false))
	}
	return linear(s.keep(g.normalize(x, g.norm)), g.head, nil) // [B,T,V]
}

// block is one layer: x + attn(norm1(x)), then + mlp(norm2(·)), or both
// branches from x with the parallel residual. With lastOnly it returns the
// last position only, [B,1,d] (see run).
func (g *GPT) block(li int, x, cos, sin, mask *ts.Tensor, cache *Cache, lastOnly bool) *ts.Tensor {
	blk := &g.blocks[li]
	var s scope
	defer s.drop()
	attn := s.keep(g.attend(&s, li, s.keep(g.normalize(x, blk.norm1)), cos, sin, mask, cache, lastOnly))
	if t := x.MustSize()[1]; lastOnly && t > 1 {
		x = s.keep(x.MustNarrow(1, t-1, 1, false))
	}
	if g.cfg.ParallelResidual {
		mlp := s.keep(g.mlp(&s, li, s.keep(g.normalize(x, blk.norm2)), cache))
		// Hugging Face's order of the sum: (mlp + attn) + x.
		return s.keep(mlp.MustAdd(attn, false)).MustAdd(x, false)
	}
	x1 := s.keep(x.MustAdd(attn, false))
	mlp := s.keep(g.mlp(&s, li, s.keep(g.normalize(x1, blk.norm2)), cache))
	return x1.MustAdd(mlp, false)
}

// attend is causal self-attention of the normalized xn [B,T,d]: q, k and v
// in one product, rotary positions, the cache, grouped-query heads shared
// by repetition, and the output projection. With lastOnly only the last
// position queries, and the result is [B,1,d].
func (g *GPT) attend(s *scope, li int, xn, cos, sin, mask *ts.Tensor, cache *Cache, lastOnly bool) *ts.Tensor {
	c, blk := g.cfg, &g.blocks[li]
	size := xn.MustSize()
	b, t := size[0], size[1]
	h, kvh, hd := int64(c.Heads), int64(c.KVHeads), int64(c.HeadDim)
	var q, k, v *ts.Tensor // [B,H,T,hd], [B,KV,T,hd], [B,KV,T,hd]
	if c.Arch == ArchGPTNeoX {
		qkv := s.keep(linear(xn, blk.qkv, blk.qkvBias))                                                           // [B,T,H·3·hd]
		perHead := s.keep(qkv.MustView([]int64{b, t, h, 3, hd}, false).MustPermute([]int64{3, 0, 2, 1, 4}, true)) // [3,B,H,T,hd]
		q = s.keep(perHead.MustSelect(0, 0, false))
		k = s.keep(perHead.MustSelect(0, 1, false))
		v = s.keep(perHead.MustSelect(0, 2, false))
	} else {
		w, bias := g.fusedQKV(s, li, cache)
		qkv := s.keep(linear(xn, w, bias)) // [B,T,(H+2·KV)·hd]
		heads := func(from, n int64) *ts.Tensor {
			return s.keep(qkv.MustNarrow(2, from*hd, n*hd, false).MustView([]int64{b, t, n, hd}, true).MustTranspose(1, 2, true))
		}
		q, k, v = heads(0, h), heads(h, kvh), heads(h+kvh, kvh)
	}
	q = s.keep(g.rope(q, cos, sin))
	k = g.rope(k, cos, sin)
	v = v.MustShallowClone() // cache.append takes ownership of k and v
	if cache != nil {
		k, v = cache.append(li, k, v)
	}
	s.keep(k)
	s.keep(v)
	scale := 1 / math.Sqrt(float64(hd))
	if t == 1 && (cache == nil || cache.approx == nil) { // a decode step
		if att, ok := torchx.AttendOne(q, k, v, mask, scale); ok {
			merged := s.keep(att.MustView([]int64{b, 1, h * hd}, true))
			return linear(merged, blk.out, blk.outBias)
		}
	}
	if kvh < h { // each key/value head serves h/kvh query heads in a row
		k, v = s.keep(repeatHeads(k, h/kvh)), s.keep(repeatHeads(v, h/kvh))
	}
	if lastOnly && t > 1 {
		q = s.keep(q.MustNarrow(2, t-1, 1, false))
		switch {
		case mask == nil:
		case mask.Dim() == 2: // shared causal: the last query attends every key
			mask = nil
		default:
			mask = s.keep(mask.MustNarrow(2, t-1, 1, false))
		}
		t = 1
	}
	att := s.keep(attentionOf(li, q, k, v, mask, scale, cache)) // [B,H,T,hd]
	merged := s.keep(att.MustTranspose(1, 2, false).MustReshape([]int64{b, t, h * hd}, true))
	return linear(merged, blk.out, blk.outBias) // [B,T,d]
}

// mlp is SwiGLU (gate and up in one product) for llama, GELU for gpt_neox.
func (g *GPT) mlp(s *scope, li int, xn *ts.Tensor, cache *Cache) *ts.Tensor {
	blk := &g.blocks[li]
	if g.cfg.Arch == ArchGPTNeoX {
		hidden := s.keep(linear(xn, blk.up, blk.upBias).MustGelu("none", true))
		return linear(hidden, blk.down, blk.downBias)
	}
	f := int64(g.cfg.FFN)
	w := g.fusedGateUp(s, li, cache)
	gateUp := s.keep(linear(xn, w, nil)) // [B,T,2f]
	gate := s.keep(gateUp.MustNarrow(2, 0, f, false))
	up := s.keep(gateUp.MustNarrow(2, f, f, false))
	act := s.keep(gate.MustSilu(false).MustMul(up, true))
	return linear(act, blk.down, nil)
}

// catQKV concatenates a llama block's q, k and v weights (and biases, nil
// without) for one product. In training's forward pass the concatenation is
// part of the graph, so gradients reach the separate Hugging Face
// parameters.
func (b *block) catQKV() (w, bias *ts.Tensor) {
	w = ts.MustCat([]*ts.Tensor{b.q, b.k, b.v}, 0)
	if b.qBias != nil {
		bias = ts.MustCat([]*ts.Tensor{b.qBias, b.kBias, b.vBias}, 0)
	}
	return w, bias
}

// catGateUp concatenates a llama block's gate and up weights, as catQKV.
func (b *block) catGateUp() *ts.Tensor { return ts.MustCat([]*ts.Tensor{b.gate, b.up}, 0) }

// fusedQKV is layer li's q|k|v weight and bias: the cache's copy when
// decoding (made once per cache rather than at every step), else made now
// and freed with s.
func (g *GPT) fusedQKV(s *scope, li int, cache *Cache) (w, bias *ts.Tensor) {
	if cache != nil {
		f := cache.fusedLayer(li)
		return f.qkv, f.qkvBias
	}
	w, bias = g.blocks[li].catQKV()
	s.keep(w)
	if bias != nil {
		s.keep(bias)
	}
	return w, bias
}

// fusedGateUp is layer li's gate|up weight, as fusedQKV.
func (g *GPT) fusedGateUp(s *scope, li int, cache *Cache) *ts.Tensor {
	if cache != nil {
		return cache.fusedLayer(li).gateUp
	}
	return s.keep(g.blocks[li].catGateUp())
}

// normalize is RMSNorm (llama) or LayerNorm (gpt_neox) over the last dimension.
func (g *GPT) normalize(x *ts.Tensor, n norm) *ts.Tensor {
	if n.bias != nil {
		return ts.MustLayerNorm(x, []int64{int64(g.cfg.Dim)}, n.weight, n.bias, g.cfg.NormEps, false)
	}
	return rmsNorm(x, n.weight, g.cfg.NormEps)
}

// noBias stands for an absent bias in libtorch's linear.
var noBias = ts.NewTensor()

// linear is x·wᵀ (+ bias when not nil). A decode step's few rows take
// torchx.LinearRows when it applies (no gradients, AVX2): OpenBLAS would
// repack the whole weight for them.
func linear(x, w, bias *ts.Tensor) *ts.Tensor {
	if y, ok := torchx.LinearRows(x, w, bias); ok {
		return y
	}
	if bias == nil {
		bias = noBias
	}
	return ts.MustLinear(x, w, bias)
}

// repeatHeads maps [B,KV,S,hd] to [B,KV·n,S,hd], key/value head j serving
// heads j·n … j·n+n−1 (Hugging Face's repeat_kv).
func repeatHeads(x *ts.Tensor, n int64) *ts.Tensor {
	sz := x.MustSize()
	e := x.MustUnsqueeze(2, false).MustExpand([]int64{sz[0], sz[1], n, sz[2], sz[3]}, false, true)
	return e.MustReshape([]int64{sz[0], sz[1] * n, sz[2], sz[3]}, true)
}

// rmsNorm is x / sqrt(mean(x²) + eps) · w over the last dimension.
func rmsNorm(x, w *ts.Tensor, eps float64) *ts.Tensor {
	ms := x.MustSquare(false).MustMeanDim([]int64{-1}, true, gotch.Float, true)
	inv := ms.MustAddScalar(ts.FloatScalar(eps), true).MustRsqrt(true)
	y := x.MustMul(inv, false)
	inv.MustDrop()
	return y.MustMul(w, true)
}

// rope rotates the first RotaryDim dimensions of x [..., T, hd] by their
// positions' angles (rotate-half within them); the rest pass unchanged.
func (g *GPT) rope(x, cos, sinSigned *ts.Tensor) *ts.Tensor {
	hd, rot := int64(g.cfg.HeadDim), int64(g.cfg.RotaryDim())
	if rot == hd {
		return rotateHalf(x, cos, sinSigned)
	}
	head := x.MustNarrow(-1, 0, rot, false)
	pass := x.MustNarrow(-1, rot, hd-rot, false)
	rotated := rotateHalf(head, cos, sinSigned)
	out := ts.MustCat([]*ts.Tensor{rotated, pass}, -1)
	for _, t := range []*ts.Tensor{head, pass, rotated} {
		t.MustDrop()
	}
	return out
}

// rotateHalf is x·cos + swapHalves(x)·sinSigned over x's last dimension.
func rotateHalf(x, cos, sinSigned *ts.Tensor) *ts.Tensor {
	half := x.MustSize()[x.Dim()-1] / 2
	x1 := x.MustNarrow(-1, 0, half, false)
	x2 := x.MustNarrow(-1, half, half, false)
	swapped := ts.MustCat([]*ts.Tensor{x2, x1}, -1)
	x1.MustDrop()
	x2.MustDrop()
	a := x.MustMul(cos, false)
	bsin := swapped.MustMul(sinSigned, true)
	out := a.MustAdd(bsin, true)
	bsin.MustDrop()
	return out
}

// attention is softmax(q·kᵀ·scale + mask)·v with q [B,H,T,hd], k and v
// [B,H,S,hd]. Written with matmul and softmax: libtorch 1.13's fused
// scaled_dot_product_attention is not available here. A nil mask attends
// every key (a decode step without padding). Masked self-attention (T == S)
// and shared [T,S] masks take the blocked path of maskedAttention.
func attention(q, k, v, mask *ts.Tensor, scale float64) *ts.Tensor {
	if mask != nil && (mask.Dim() == 2 || q.MustSize()[2] == k.MustSize()[2]) {
		return maskedAttention(q, k, v, mask, scale)
	}
	kt := k.MustTranspose(-2, -1, false)
	s := q.MustMatmul(kt, false)
	kt.MustDrop()
	// In place: the scores are this call's own tensor, and a new one for
	// each op cost an allocation of B·H·T·S floats apiece.
	torchx.MulScalar_(s, scale)
	if mask != nil {
		torchx.Add_(s, mask)
	}
	p := s.MustSoftmax(-1, gotch.Float, true)
	out := p.MustMatmul(v, true)
	return out
}

// maskedAttention is attention under a [T,S] mask shared by every row and
// head, or a per-row [B,1,T,S] one: scaling, masking and the score product
// are one baddbmm on [B·H,T,hd]. For causal self-attention (T == S) the
// queries are cut into blocks that attend only to the keys up to their
// block's end, which skips most of the fully masked scores (a quarter of
// the work with two blocks, 3/8 with four): every mask here is causal, a
// padded row's too, so the keys after a block's end are masked for all
// rows.
func maskedAttention(q, k, v, mask *ts.Tensor, scale float64) *ts.Tensor {
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
		var mi *ts.Tensor
		if mask.Dim() == 2 {
			mi = mask.MustNarrow(0, lo, n, false).MustNarrow(1, 0, keys, true).MustExpand([]int64{b * h, n, keys}, false, true)
		} else { // [B,1,T,S]: each row's mask for its h heads
			mi = mask.MustNarrow(2, lo, n, false).MustNarrow(3, 0, keys, true).
				MustExpand([]int64{b, h, n, keys}, false, true).MustReshape([]int64{b * h, n, keys}, true)
		}
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

// ropeTables builds cos and signed-sin tables [Context, RotaryDim] for
// positions 0..Context-1: inverse frequency theta^(−2i/rot) for i < rot/2
// (rescaled for llama3 rope scaling), each repeated in both halves. The
// angles are computed in float64 and rounded once.
func ropeTables(c Config, dev gotch.Device) (cos, sinSigned *ts.Tensor, err error) {
	n, rot := c.Context, c.RotaryDim()
	half := rot / 2
	invFreq := make([]float64, half)
	for i := range invFreq {
		invFreq[i] = math.Pow(c.RopeTheta, -2*float64(i)/float64(rot))
	}
	if c.RopeScaling == "llama3" {
		llama3Scale(invFreq, c)
	}
	cv := make([]float32, n*rot)
	sv := make([]float32, n*rot)
	for p := 0; p < n; p++ {
		for i, f := range invFreq {
			ang := float64(p) * f
			co, si := float32(math.Cos(ang)), float32(math.Sin(ang))
			cv[p*rot+i], cv[p*rot+half+i] = co, co
			sv[p*rot+i], sv[p*rot+half+i] = -si, si
		}
	}
	if cos, err = tensorOf(cv, []int64{int64(n), int64(rot)}, dev); err != nil {
		return nil, nil, err
	}
	if sinSigned, err = tensorOf(sv, []int64{int64(n), int64(rot)}, dev); err != nil {
		return nil, nil, err
	}
	return cos, sinSigned, nil
}

// llama3Scale applies Llama 3.1's frequency rescaling (transformers'
// modeling_rope_utils): wavelengths longer than original/low_freq_factor
// are slowed by factor, those shorter than original/high_freq_factor kept,
// and the band between interpolated smoothly.
func llama3Scale(invFreq []float64, c Config) {
	orig := float64(c.RopeOriginalContext)
	lowWave, highWave := orig/c.RopeLowFreqFactor, orig/c.RopeHighFreqFactor
	for i, f := range invFreq {
		wave := 2 * math.Pi / f
		switch {
		case wave < highWave:
		case wave > lowWave:
			invFreq[i] = f / c.RopeFactor
		default:
			smooth := (orig/wave - c.RopeLowFreqFactor) / (c.RopeHighFreqFactor - c.RopeLowFreqFactor)
			invFreq[i] = (1-smooth)*f/c.RopeFactor + smooth*f
		}
	}
}

// tensorOf copies a Go slice into a tensor of the given shape on dev. The
// tensor owns its storage (it is not a view), so it can become a parameter
// that the optimizer updates in place.
func tensorOf[T float32 | int64](vals []T, dims []int64, dev gotch.Device) (*ts.Tensor, error) {
	t, err := torchx.TensorOf(vals, dims)
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
	r.causal = nil
	r.params = make([]Param, len(g.params))
	alias := map[*ts.Tensor]*ts.Tensor{}
	for i, p := range g.params {
		t := p.Tensor.MustDetach(false).MustSetRequiresGrad(true, true)
		alias[p.Tensor] = t
		r.params[i] = Param{Name: p.Name, Tensor: t, Decay: p.Decay}
	}
	r.embed, r.head = alias[g.embed], alias[g.head]
	r.norm = norm{alias[g.norm.weight], alias[g.norm.bias]}
	r.blocks = make([]block, len(g.blocks))
	for i, b := range g.blocks {
		for _, slot := range b.tensors() {
			*slot = alias[*slot] // nil (no such weight) maps to nil
		}
		r.blocks[i] = b
	}
	return &r
}
