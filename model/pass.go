package model

import (
	"fmt"
	"math"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// KVStore is where a cached pass's keys and values go and earlier ones
// come from: the engine's KV cache (package engine) implements it, so the
// network knows nothing of how a cache is laid out or reordered.
type KVStore interface {
	// Append stores this pass's keys and values [B,KV,t,hd] of layer
	// after the positions already filled, taking ownership of k and v,
	// and returns all keys and values so far, [B,KV,Past+t,hd] (the
	// caller owns the results).
	Append(layer int, k, v *ts.Tensor) (kAll, vAll *ts.Tensor)
}

// PassState is what one forward pass (ForwardWith) reads beside its ids:
// where the rows stand, where keys and values go, and which backend runs.
// An engine keeps one cache's worth of it across passes and hands it over
// at each. Without KV it is Forward's pass (positions 0 … T−1 in every
// row, no cache) under Backend, and only Backend and LastOnly count.
type PassState struct {
	// Past is the number of positions already in KV (padding included).
	Past int
	// Starts is each row's first real position: earlier ones are padding,
	// never attended, and row i's first real token gets position 0. Its
	// length is the batch.
	Starts []int
	// KV receives this pass's keys and values (nil: an uncached pass).
	KV KVStore
	// Joins keeps the concatenated weights across the passes of one cache
	// (nil: each pass concatenates its own).
	Joins Joins
	// LastOnly returns the last position's logits only, [B,1,V] (see run).
	LastOnly bool
	// Backend computes the attention and the products (nil: g.Backend(),
	// the model's own).
	Backend Backend
	// ForLoss marks a pass whose logits only the training loss reads: the
	// LM head is a LossLogits product (see ForwardForLoss).
	ForLoss bool
	// Static, when set, holds a cached pass's per-position inputs already
	// on the device, so that the pass makes no tensor from host memory:
	// what a CUDA graph can capture and replay with new values copied in.
	Static *StaticInputs
}

// StaticInputs are a cached pass's inputs kept on the device between
// passes (PassState.Static) for a model without sliding windows: the
// rows' positions, [B·t] int64 (StepValues' pos), and the additive mask,
// [B,1,t,S] float32, nil where the pass needs none (StepValues' mask).
// The pass reads them and frees neither.
type StaticInputs struct{ Positions, Mask *ts.Tensor }

// StepValues are the host values of the inputs of st's next pass of t
// positions a row that StaticInputs hold: each row's positions, and the
// additive mask with its dims (nil where the pass needs none) for a
// model without sliding windows.
func (st *PassState) StepValues(t int) (pos []int64, mask []float32, maskDims []int64) {
	mask, maskDims = st.maskValues(t, 0)
	return st.positions(t), mask, maskDims
}

// positions are the rotary and learned positions of st's next t
// positions in every row, row by row: a row's first real token is at 0.
func (st *PassState) positions(t int) []int64 {
	pos := make([]int64, len(st.Starts)*t)
	for r, start := range st.Starts {
		for i := 0; i < t; i++ {
			pos[r*t+i] = int64(max(0, st.Past+i-start))
		}
	}
	return pos
}

// cached reports whether st is a cached pass (Forward's is not).
func (st *PassState) cached() bool { return st != nil && st.KV != nil }

// ForwardWith runs ids [B,t] (int64) as the next t positions of every row
// of st, its keys and values appended to st.KV, and returns logits
// [B,t,V] ([B,1,V] with st.LastOnly). It runs without gradients. It panics
// when B is not len(st.Starts) or the positions would pass the context, a
// caller's bug. Without st.KV it is Forward under st.Backend, without
// gradients.
func (g *GPT) ForwardWith(ids *ts.Tensor, st *PassState) *ts.Tensor {
	size := ids.MustSize()
	if !st.cached() {
		var logits *ts.Tensor
		torchx.NoGrad(func() { logits = g.uncached(ids, st) })
		return logits
	}
	if len(size) != 2 || size[0] != int64(len(st.Starts)) || st.Past+int(size[1]) > g.cfg.Context {
		panic(fmt.Sprintf("model: ForwardWith on ids %v with %d rows, %d positions past, context %d", size, len(st.Starts), st.Past, g.cfg.Context))
	}
	b, t := int(size[0]), int(size[1])
	var logits *ts.Tensor
	torchx.NoGrad(func() {
		var in *inputs
		var err error
		if st.Static != nil {
			in, err = g.staticInputs(st, b, t)
		} else {
			in, err = g.cachedInputs(st, st.positions(t), b, t)
		}
		if err != nil {
			panic(fmt.Sprintf("model: %v", err))
		}
		logits = g.run(ids, in, st, st.LastOnly)
		in.drop()
	})
	return logits
}

// mask is the additive attention mask on dev of the next t positions over
// st's filled ones and theirs: 0 where attended, −Inf where not. Without
// padding every row has the same causal mask, so it is [t,S], which lets
// attention skip the fully masked blocks; a single position then attends
// every key and gets no mask at all (nil). With padding it is per row,
// [B,1,t,S]. With a window w > 0 a query also ignores keys w or more
// positions back.
func (st *PassState) mask(t, window int, dev gotch.Device) (*ts.Tensor, error) {
	vals, dims := st.maskValues(t, window)
	if vals == nil {
		return nil, nil
	}
	return tensorOf(vals, dims, dev)
}

// maskValues are mask's values and dims on the host; nil where the pass
// needs no mask.
func (st *PassState) maskValues(t, window int) ([]float32, []int64) {
	s := st.Past + t
	// A sliding window that leaves keys out is a per-row mask too, so that
	// a decode step's attention kernel applies it.
	padded := window > 0 && s > window
	for _, start := range st.Starts {
		padded = padded || start > 0
	}
	if !padded {
		if t == 1 {
			return nil, nil
		}
		return maskValues([]int{0}, st.Past, t, 0), []int64{int64(t), int64(s)}
	}
	b := len(st.Starts)
	return maskValues(st.Starts, st.Past, t, window), []int64{int64(b), 1, int64(t), int64(s)}
}

// maskValues is memo's one builder of additive attention masks: for each
// row start st (the row's first real position), t queries at positions
// n … n+t−1 over keys 0 … n+t−1, row by row; 0 where a query attends, −Inf
// where it does not: keys after it, padding before st, and with a window
// w > 0 keys w or more positions back (Hugging Face's sliding window). A
// padding query attends to itself only, so its softmax stays finite; its
// output is never used. One row with start 0 and n = 0 is the plain
// causal mask.
func maskValues(starts []int, n, t, window int) []float32 {
	s := n + t
	ninf := float32(math.Inf(-1))
	m := make([]float32, len(starts)*t*s)
	for r, st := range starts {
		for i := 0; i < t; i++ {
			qi := n + i
			row := m[(r*t+i)*s : (r*t+i+1)*s]
			for j := range row {
				if j > qi || (j < st && j != qi) || window > 0 && j <= qi-window && j != qi {
					row[j] = ninf
				}
			}
		}
	}
	return m
}

// cachedInputs are the inputs of a cached pass of t positions per row at
// the given positions (b·t of them, row by row): rotary rows and learned
// position embeddings gathered per row, and st's masks.
func (g *GPT) cachedInputs(st *PassState, pos []int64, b, t int) (*inputs, error) {
	pt, err := tensorOf(pos, []int64{int64(b * t)}, g.device)
	if err != nil {
		return nil, fmt.Errorf("positions: %w", err)
	}
	defer pt.MustDrop()
	in := g.positionInputs(pt, b, t)
	for _, blk := range g.blocks {
		if _, ok := in.masks[blk.window]; !ok {
			m, err := st.mask(t, blk.window, g.device)
			if err != nil {
				in.drop()
				return nil, fmt.Errorf("mask: %w", err)
			}
			in.masks[blk.window] = m
		}
	}
	return in, nil
}

// staticInputs are cachedInputs from st.Static's device tensors: the
// rotary rows and learned position embeddings gathered at its positions
// on the device, and its mask (a view, so that dropping the inputs
// leaves it), for a model without sliding windows.
func (g *GPT) staticInputs(st *PassState, b, t int) (*inputs, error) {
	if g.cfg.SlidingWindow > 0 {
		return nil, fmt.Errorf("static inputs: a sliding window (%d) needs a mask of its own", g.cfg.SlidingWindow)
	}
	pt := st.Static.Positions
	if pt == nil || pt.Numel() != uint(b*t) {
		return nil, fmt.Errorf("static inputs: positions for %d rows × %d positions, got %v", b, t, pt)
	}
	in := g.positionInputs(pt, b, t)
	in.masks[0] = nil
	if m := st.Static.Mask; m != nil {
		in.masks[0] = m.MustAlias(false)
	}
	return in, nil
}

// positionInputs are a cached pass's rotary rows and learned position
// embeddings gathered at positions pt ([b·t] int64 on the model's
// device), with no masks yet.
func (g *GPT) positionInputs(pt *ts.Tensor, b, t int) *inputs {
	in := &inputs{masks: map[int]*ts.Tensor{}}
	rot := int64(g.cfg.RotaryDim())
	for _, r := range g.ropes {
		in.cos = append(in.cos, r.cos.MustIndexSelect(0, pt, false).MustView([]int64{int64(b), 1, int64(t), rot}, true))
		in.sin = append(in.sin, r.sinSigned.MustIndexSelect(0, pt, false).MustView([]int64{int64(b), 1, int64(t), rot}, true))
	}
	if pe := g.top[modPositions].w; pe != nil {
		in.positions = pe.MustIndexSelect(0, pt, false).MustView([]int64{int64(b), int64(t), -1}, true)
	}
	return in
}

// Joined is one layer's separately stored weights concatenated for one
// product each: q|k|v and gate|up, and their biases (nil where the family
// has none, or stores the module fused).
type Joined struct{ QKV, QKVBias, GateUp, GateUpBias *ts.Tensor }

// Joins keeps each layer's Joined weights across the passes of one cache,
// so a decode step does not concatenate them anew: concatenating at every
// step cost more than the step's own products at small batches. The
// engine's cache holds one (it makes them with JoinLayer and frees them
// with the cache).
type Joins interface {
	// Layer is layer li's joined weights, owned by the Joins.
	Layer(li int) Joined
}

// JoinLayer concatenates layer li's separately stored q, k, v weights and
// gate, up weights (and their biases), those the family stores apart; the
// others are nil. The caller owns the results. Weights do not change
// during a decode, so a cache may keep them for its passes (Joins).
func (g *GPT) JoinLayer(li int) Joined {
	var j Joined
	blk := &g.blocks[li]
	if g.arch.QKV == QKVSeparate {
		j.QKV, j.QKVBias = g.catQKV(blk)
	}
	if g.arch.MLP == MLPGated {
		j.GateUp, j.GateUpBias = g.catGateUp(blk)
	}
	return j
}
