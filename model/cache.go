package model

import (
	"fmt"
	"math"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Cache holds each layer's keys and values for incremental decoding of a
// batch. Rows may be left-padded: SetStarts tells where each row's real
// tokens begin, and those positions are neither attended nor counted.
type Cache struct {
	g      *GPT
	batch  int
	maxLen int
	n      int          // positions filled
	starts []int        // first real position of each row
	k, v   []*ts.Tensor // per layer [B,KVHeads,maxLen,hd]
	// fused are the llama layers' concatenated weights (see fusedLayer).
	fused []fusedWeights
	// approx, when not nil, is the approximation the cache decodes under
	// (Approximation, package model/approx).
	approx Approximation
}

// fusedWeights are one layer's separately stored weights concatenated for
// one product each: q|k|v and gate|up (and their biases, nil without).
type fusedWeights struct{ qkv, qkvBias, gateUp, gateUpBias *ts.Tensor }

// fusedLayer returns layer li's concatenated weights, made on first use.
// Concatenating them at every decode step cost more than the step's own
// products at small batches; a cache lives for one decode of one batch,
// during which weights do not change, and holds the copies (about one
// more copy of the blocks' weights) until Drop.
func (kc *Cache) fusedLayer(li int) fusedWeights {
	if j := kc.g.blocks[li].joined; j.qkv != nil || j.gateUp != nil {
		return j // the model's own (NewForInference): nothing to copy or drop
	}
	if kc.fused == nil {
		kc.fused = make([]fusedWeights, len(kc.g.blocks))
	}
	f := &kc.fused[li]
	if f.qkv == nil && f.gateUp == nil {
		g, blk := kc.g, &kc.g.blocks[li]
		if g.arch.QKV == QKVSeparate {
			f.qkv, f.qkvBias = g.catQKV(blk)
		}
		if g.arch.MLP == MLPGated {
			f.gateUp, f.gateUpBias = g.catGateUp(blk)
		}
	}
	return *f
}

// NewCache makes an empty cache for batch rows of up to maxLen positions
// (maxLen <= Context). Every row starts at position 0 until SetStarts.
func (g *GPT) NewCache(batch, maxLen int) (*Cache, error) {
	c := g.cfg
	if batch <= 0 || maxLen <= 0 || maxLen > c.Context {
		return nil, fmt.Errorf("model: cache of %d rows × %d positions: want rows > 0 and 0 < positions <= context %d", batch, maxLen, c.Context)
	}
	kc := &Cache{g: g, batch: batch, maxLen: maxLen, starts: make([]int, batch)}
	dims := []int64{int64(batch), int64(c.KVHeads), int64(maxLen), int64(c.HeadDim)}
	for range g.blocks {
		kc.k = append(kc.k, ts.MustZeros(dims, gotch.Float, g.device))
		kc.v = append(kc.v, ts.MustZeros(dims, gotch.Float, g.device))
	}
	return kc, nil
}

// Len is the number of positions filled (padding included).
func (kc *Cache) Len() int { return kc.n }

// Batch is the number of rows.
func (kc *Cache) Batch() int { return kc.batch }

// SetStarts marks positions before starts[i] of row i as padding: they are
// never attended, and row i's first real token gets rotary position 0.
// Call it before the first ForwardCached.
func (kc *Cache) SetStarts(starts []int) error {
	if len(starts) != kc.batch {
		return fmt.Errorf("model: %d cache starts for %d rows", len(starts), kc.batch)
	}
	for i, s := range starts {
		if s < 0 || s >= kc.maxLen {
			return fmt.Errorf("model: cache start %d of row %d: want 0 <= start < %d", s, i, kc.maxLen)
		}
	}
	copy(kc.starts, starts)
	return nil
}

// Starts returns a copy of each row's first real position.
func (kc *Cache) Starts() []int { return append([]int(nil), kc.starts...) }

// Reorder makes row i of the cache a copy of row rows[i] (beam search
// keeps the survivors' histories this way). rows may be longer than the
// batch: the cache then holds len(rows) rows, so that a prompt run once
// continues as several samples without running it again.
func (kc *Cache) Reorder(rows []int) error {
	if len(rows) == 0 {
		return fmt.Errorf("model: reorder to no rows")
	}
	idx := make([]int64, len(rows))
	starts := make([]int, len(rows))
	for i, r := range rows {
		if r < 0 || r >= kc.batch {
			return fmt.Errorf("model: reorder row %d = %d: want 0 <= row < %d", i, r, kc.batch)
		}
		idx[i], starts[i] = int64(r), kc.starts[r]
	}
	it, err := tensorOf(idx, []int64{int64(len(idx))}, kc.g.device)
	if err != nil {
		return fmt.Errorf("model: reorder: %w", err)
	}
	defer it.MustDrop()
	torchx.NoGrad(func() {
		for l := range kc.k {
			kc.k[l] = kc.k[l].MustIndexSelect(0, it, true)
			kc.v[l] = kc.v[l].MustIndexSelect(0, it, true)
		}
	})
	kc.starts, kc.batch = starts, len(rows)
	if kc.approx != nil {
		kc.approx.Reorder(rows)
	}
	return nil
}

// Drop frees the cache's tensors now rather than at the next collection.
func (kc *Cache) Drop() {
	for l := range kc.k {
		kc.k[l].MustDrop()
		kc.v[l].MustDrop()
	}
	for _, f := range kc.fused {
		for _, t := range []*ts.Tensor{f.qkv, f.qkvBias, f.gateUp, f.gateUpBias} {
			if t != nil {
				t.MustDrop()
			}
		}
	}
	kc.k, kc.v, kc.fused = nil, nil, nil
	if kc.approx != nil {
		kc.approx.Drop()
	}
}

// append stores this call's keys and values [B,H,t,hd] of layer l after the
// filled positions and returns all keys and values so far. It takes
// ownership of k and v.
func (kc *Cache) append(l int, k, v *ts.Tensor) (*ts.Tensor, *ts.Tensor) {
	t := k.MustSize()[2]
	kn := kc.k[l].MustNarrow(2, int64(kc.n), t, false)
	vn := kc.v[l].MustNarrow(2, int64(kc.n), t, false)
	kn.Copy_(k)
	vn.Copy_(v)
	kn.MustDrop()
	vn.MustDrop()
	k.MustDrop()
	v.MustDrop()
	total := int64(kc.n) + t
	return kc.k[l].MustNarrow(2, 0, total, false), kc.v[l].MustNarrow(2, 0, total, false)
}

// ForwardCached runs ids [B,t] (int64) as the next t positions of every row,
// appends their keys and values to the cache and returns logits [B,t,V].
// Positions continue from the cache's length. It runs without gradients.
// It panics when B differs from the cache's or the cache would overflow.
func (g *GPT) ForwardCached(ids *ts.Tensor, cache *Cache) *ts.Tensor {
	return g.forwardCached(ids, cache, false)
}

// ForwardCachedLast is ForwardCached returning only the last position's
// logits [B,1,V]: what a decoder needs after a prompt pass, without the
// LM head over every prompt position.
func (g *GPT) ForwardCachedLast(ids *ts.Tensor, cache *Cache) *ts.Tensor {
	return g.forwardCached(ids, cache, true)
}

func (g *GPT) forwardCached(ids *ts.Tensor, cache *Cache, lastOnly bool) *ts.Tensor {
	size := ids.MustSize()
	if len(size) != 2 || size[0] != int64(cache.batch) || cache.n+int(size[1]) > cache.maxLen {
		panic(fmt.Sprintf("model: ForwardCached on ids %v with a cache of %d rows, %d/%d positions filled", size, cache.batch, cache.n, cache.maxLen))
	}
	b, t := int(size[0]), int(size[1])
	s := cache.n + t
	pos := make([]int64, b*t)
	for r := 0; r < b; r++ {
		for i := 0; i < t; i++ {
			pos[r*t+i] = int64(max(0, cache.n+i-cache.starts[r]))
		}
	}
	var logits *ts.Tensor
	torchx.NoGrad(func() {
		in, err := g.cachedInputs(cache, pos, b, t)
		if err != nil {
			panic(fmt.Sprintf("model: %v", err))
		}
		logits = g.run(ids, in, cache, lastOnly)
		in.drop()
	})
	cache.n = s
	return logits
}

// mask is the additive attention mask of the next t positions over the
// cache's filled ones and theirs: 0 where attended, −Inf where not. Without
// padding every row has the same causal mask, so it is [t,S], which lets
// attention skip the fully masked blocks; a single position then attends
// every key and gets no mask at all (nil). With padding it is per row,
// [B,1,t,S]. With a window w > 0 a query also ignores keys w or more
// positions back.
func (kc *Cache) mask(t, window int) (*ts.Tensor, error) {
	s := kc.n + t
	// A sliding window that leaves keys out is a per-row mask too, so that
	// a decode step's attention kernel applies it.
	padded := window > 0 && s > window
	for _, st := range kc.starts {
		padded = padded || st > 0
	}
	if !padded {
		if t == 1 {
			return nil, nil
		}
		return tensorOf(maskValues([]int{0}, kc.n, t, 0), []int64{int64(t), int64(s)}, kc.g.device)
	}
	b := len(kc.starts)
	return tensorOf(maskValues(kc.starts, kc.n, t, window), []int64{int64(b), 1, int64(t), int64(s)}, kc.g.device)
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
// position embeddings gathered per row, and the cache's masks.
func (g *GPT) cachedInputs(cache *Cache, pos []int64, b, t int) (*inputs, error) {
	in := &inputs{masks: map[int]*ts.Tensor{}}
	pt, err := tensorOf(pos, []int64{int64(b * t)}, g.device)
	if err != nil {
		return nil, fmt.Errorf("positions: %w", err)
	}
	defer pt.MustDrop()
	rot := int64(g.cfg.RotaryDim())
	for _, r := range g.ropes {
		in.cos = append(in.cos, r.cos.MustIndexSelect(0, pt, false).MustView([]int64{int64(b), 1, int64(t), rot}, true))
		in.sin = append(in.sin, r.sinSigned.MustIndexSelect(0, pt, false).MustView([]int64{int64(b), 1, int64(t), rot}, true))
	}
	if pe := g.top[modPositions].w; pe != nil {
		in.positions = pe.MustIndexSelect(0, pt, false).MustView([]int64{int64(b), int64(t), -1}, true)
	}
	for _, blk := range g.blocks {
		if _, ok := in.masks[blk.window]; !ok {
			m, err := cache.mask(t, blk.window)
			if err != nil {
				in.drop()
				return nil, fmt.Errorf("mask: %w", err)
			}
			in.masks[blk.window] = m
		}
	}
	return in, nil
}
