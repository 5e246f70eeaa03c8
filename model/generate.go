package model

import (
	"fmt"

	"github.com/memo-research/memo/internal/torchx"
)

// GenOptions controls Generate.
type GenOptions struct {
	// UseCache decodes incrementally with a KV cache; false recomputes the
	// whole sequence for every new token (slow; a check on the cache).
	UseCache bool
}

// Generate greedily continues each prompt by n tokens. Prompts may differ
// in length: they are left-padded, and padding is neither attended nor
// counted in positions, so each row decodes as it would alone. The longest
// prompt plus n must fit in the context.
func (g *GPT) Generate(prompts [][]int32, n int, opt GenOptions) ([][]int32, error) {
	if len(prompts) == 0 || n <= 0 {
		return make([][]int32, len(prompts)), nil
	}
	longest := 0
	for i, p := range prompts {
		if len(p) == 0 {
			return nil, fmt.Errorf("model: generate: prompt %d is empty", i)
		}
		for j, id := range p {
			if id < 0 || int(id) >= g.cfg.Vocab {
				return nil, fmt.Errorf("model: generate: prompt %d token %d = %d: outside vocabulary [0, %d)", i, j, id, g.cfg.Vocab)
			}
		}
		longest = max(longest, len(p))
	}
	if longest+n > g.cfg.Context {
		return nil, fmt.Errorf("model: generate: prompt of %d tokens + %d new exceeds context %d", longest, n, g.cfg.Context)
	}
	b := len(prompts)
	starts := make([]int, b)
	seqs := make([][]int64, b) // left-padded with token 0
	for i, p := range prompts {
		starts[i] = longest - len(p)
		seqs[i] = make([]int64, longest, longest+n)
		for j, id := range p {
			seqs[i][starts[i]+j] = int64(id)
		}
	}
	out := make([][]int32, b)

	var cache *Cache
	fed := 0 // positions of seqs already in the cache
	for step := 0; step < n; step++ {
		if !opt.UseCache || cache == nil {
			if cache != nil {
				cache.Drop()
			}
			var err error
			if cache, err = g.NewCache(b, longest+n); err != nil {
				return nil, err
			}
			if err := cache.SetStarts(starts); err != nil {
				return nil, err
			}
			fed = 0
		}
		width := len(seqs[0]) - fed
		flat := make([]int64, 0, b*width)
		for _, s := range seqs {
			flat = append(flat, s[fed:]...)
		}
		next, err := g.greedyNext(flat, b, width, cache)
		if err != nil {
			return nil, err
		}
		fed = len(seqs[0])
		for i := range seqs {
			seqs[i] = append(seqs[i], next[i])
			out[i] = append(out[i], int32(next[i]))
		}
	}
	cache.Drop()
	return out, nil
}

// greedyNext feeds ids [b,width] through the cache and returns the argmax
// of each row's last logits.
func (g *GPT) greedyNext(flat []int64, b, width int, cache *Cache) ([]int64, error) {
	ids, err := tensorOf(flat, []int64{int64(b), int64(width)}, g.device)
	if err != nil {
		return nil, fmt.Errorf("model: generate: %w", err)
	}
	defer ids.MustDrop()
	logits := g.ForwardCached(ids, cache)
	defer logits.MustDrop()
	var next []int64
	torchx.NoGrad(func() {
		last := logits.MustSelect(1, int64(width-1), false)
		am := last.MustArgmax([]int64{-1}, false, true)
		next = am.Int64Values()
		am.MustDrop()
	})
	return next, nil
}
