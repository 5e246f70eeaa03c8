package engine

import (
	"fmt"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Cache holds each layer's keys and values for incremental decoding of a
// batch. Rows may be left-padded: SetStarts tells where each row's real
// tokens begin, and those positions are neither attended nor counted. It
// is the model's KV store (model.KVStore) and picks, when it is made, the
// backend its passes run (see backendFor).
type Cache struct {
	g      *model.GPT
	batch  int
	maxLen int
	n      int          // positions filled
	starts []int        // first real position of each row
	k, v   []*ts.Tensor // per layer [B,KVHeads,maxLen,hd]
	// joins are the layers' concatenated weights, kept for the cache's
	// passes (joins.go).
	joins *joins
	// approx, when not nil, is the approximation the cache decodes under
	// (Approximation, package engine/approx).
	approx Approximation
	// backend computes the attention and products of every pass.
	backend model.Backend
	// graphs are greedy decoding's captured token steps on this cache's
	// tensors (graph.go); nil where none was tried.
	graphs *cacheGraphs
}

// NewCache makes an empty cache of g for batch rows of up to maxLen
// positions (maxLen <= Context). Every row starts at position 0 until
// SetStarts.
func NewCache(g *model.GPT, batch, maxLen int) (*Cache, error) {
	c := g.Config()
	if batch <= 0 || maxLen <= 0 || maxLen > c.Context {
		return nil, fmt.Errorf("model: cache of %d rows × %d positions: want rows > 0 and 0 < positions <= context %d", batch, maxLen, c.Context)
	}
	kc := &Cache{g: g, batch: batch, maxLen: maxLen, starts: make([]int, batch), joins: &joins{g: g}}
	dims := []int64{int64(batch), int64(c.KVHeads), int64(maxLen), int64(c.HeadDim)}
	for range c.Layers {
		kc.k = append(kc.k, ts.MustZeros(dims, gotch.Float, g.Device()))
		kc.v = append(kc.v, ts.MustZeros(dims, gotch.Float, g.Device()))
	}
	kc.backend = backendFor(kc)
	return kc, nil
}

// under makes the cache decode under a (NewStepperUnder), before its
// first pass.
func (kc *Cache) under(a Approximation) {
	kc.approx = a
	kc.backend = backendFor(kc)
}

// Len is the number of positions filled (padding included).
func (kc *Cache) Len() int { return kc.n }

// Batch is the number of rows.
func (kc *Cache) Batch() int { return kc.batch }

// SetStarts marks positions before starts[i] of row i as padding: they are
// never attended, and row i's first real token gets rotary position 0.
// Call it before the first Forward.
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
	it, err := model.TensorOf(idx, []int64{int64(len(idx))}, kc.g.Device())
	if err != nil {
		return fmt.Errorf("model: reorder: %w", err)
	}
	defer it.MustDrop()
	kc.reorderBy(it, starts)
	if kc.approx != nil {
		kc.approx.Reorder(rows)
	}
	return nil
}

// reorderBy is Reorder by the rows in idx, an int64 tensor on the
// cache's device that the host need not read (beam search's parents on
// the device), the new rows starting at starts. An approximation's state
// is not reordered: callers decline under one.
func (kc *Cache) reorderBy(idx *ts.Tensor, starts []int) {
	kc.dropGraphs() // captured on the tensors replaced here
	torchx.NoGrad(func() {
		for l := range kc.k {
			kc.k[l] = kc.k[l].MustIndexSelect(0, idx, true)
			kc.v[l] = kc.v[l].MustIndexSelect(0, idx, true)
		}
	})
	kc.starts, kc.batch = starts, len(starts)
}

// Drop frees the cache's tensors now rather than at the next collection.
func (kc *Cache) Drop() {
	kc.dropGraphs()
	for l := range kc.k {
		kc.k[l].MustDrop()
		kc.v[l].MustDrop()
	}
	kc.joins.drop()
	kc.k, kc.v = nil, nil
	if kc.approx != nil {
		kc.approx.Drop()
	}
}

// Append stores this pass's keys and values [B,H,t,hd] of layer l after
// the filled positions and returns all keys and values so far
// (model.KVStore). It takes ownership of k and v.
func (kc *Cache) Append(l int, k, v *ts.Tensor) (*ts.Tensor, *ts.Tensor) {
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

// Keys is layer l's cached keys [B,KV,Len,hd] (post-rotary), a view the
// caller drops: Loki's calibration reads them.
func (kc *Cache) Keys(l int) *ts.Tensor {
	return kc.k[l].MustNarrow(2, 0, int64(kc.n), false)
}

// Forward runs ids [B,t] (int64) as the next t positions of every row,
// appends their keys and values to the cache and returns logits [B,t,V].
// Positions continue from the cache's length. It runs without gradients.
// It panics when B differs from the cache's or the cache would overflow.
func (kc *Cache) Forward(ids *ts.Tensor) *ts.Tensor { return kc.forward(ids, false) }

// ForwardLast is Forward returning only the last position's logits
// [B,1,V]: what a decoder needs after a prompt pass, without the LM head
// over every prompt position.
func (kc *Cache) ForwardLast(ids *ts.Tensor) *ts.Tensor { return kc.forward(ids, true) }

func (kc *Cache) forward(ids *ts.Tensor, lastOnly bool) *ts.Tensor {
	size := ids.MustSize()
	if len(size) != 2 || size[0] != int64(kc.batch) || kc.n+int(size[1]) > kc.maxLen {
		panic(fmt.Sprintf("engine: Forward on ids %v with a cache of %d rows, %d/%d positions filled", size, kc.batch, kc.n, kc.maxLen))
	}
	logits := kc.g.ForwardWith(ids, kc.passState(lastOnly))
	kc.n += int(size[1])
	return logits
}

// passState is the model's view of the cache for its next pass.
func (kc *Cache) passState(lastOnly bool) *model.PassState {
	return &model.PassState{Past: kc.n, Starts: kc.starts, KV: kc, Joins: kc.joins, LastOnly: lastOnly, Backend: kc.backend}
}
