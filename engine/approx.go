package engine

import (
	"fmt"

	"github.com/sugarme/gotch/ts"

	"github.com/memo-research/memo/model"
)

// Approximation is the one hook through which an inference
// approximation (package engine/approx: KV quantization, Loki, Sift, and
// QuantSpec's draft) changes decoding. A cache of a Stepper made by
// NewStepperUnder has one, and its backend (approxBackend)
// hands each layer of a cached pass to it: what enters the cache goes
// through Store, and Attend replaces attention; Reorder and Drop follow
// the cache's rows and its end. Exact decoding has none.
type Approximation interface {
	// Store returns keys or values [B,KV,t,hd] as the cache keeps them,
	// taking ownership of x.
	Store(x *ts.Tensor) *ts.Tensor
	// Attend is layer li's attention of a cached pass over c (Len is
	// the positions cached before this pass, Starts each row's first):
	// q [B,H,T,hd], k and v [B,H,S,hd] (heads repeated), the per-row
	// mask [B,1,T,S], the scale and the soft-cap (0: none).
	// model.Attention computes it exactly.
	Attend(c *Cache, li int, q, k, v, mask *ts.Tensor, scale, cap float64) *ts.Tensor
	// Reorder follows Cache.Reorder.
	Reorder(rows []int)
	// Drop frees what the approximation holds.
	Drop()
}

// NewStepperUnder decodes with g through the KV cache, each cache under
// the approximation newApprox makes for its rows.
func NewStepperUnder(g *model.GPT, newApprox func(rows int) Approximation) *Stepper {
	return &Stepper{g: g, useCache: true, newApprox: newApprox}
}

// Resync makes row i's sequence its prompt followed by gen[i] (all rows
// equally long), keeps in the cache the positions that did not change,
// feeds the rest and returns each row's logits at every position fed:
// speculative decoding rewinds to the tokens it kept (engine/approx).
func (s *Stepper) Resync(gen [][]int32) ([][][]float32, error) {
	longest := s.promptLen
	same := len(s.seqs[0])
	for i, row := range s.seqs {
		if len(gen[i]) != len(gen[0]) {
			return nil, fmt.Errorf("decode: resync rows of %d and %d tokens", len(gen[0]), len(gen[i]))
		}
		p := longest
		for p < len(row) && p-longest < len(gen[i]) && row[p] == int64(gen[i][p-longest]) {
			p++
		}
		same = min(same, p)
		row = row[:longest]
		for _, t := range gen[i] {
			row = append(row, int64(t))
		}
		s.seqs[i] = row
	}
	if len(s.seqs[0]) > s.maxLen {
		return nil, fmt.Errorf("decode: %d positions exceed the %d reserved", len(s.seqs[0]), s.maxLen)
	}
	// The last position is never cached before it is fed.
	s.fed = min(s.fed, same, len(s.seqs[0])-1)
	s.cache.n = s.fed
	return s.run(false)
}
