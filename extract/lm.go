package extract

import (
	"fmt"

	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// gptStepper decodes with a model.GPT. With useCache it feeds each new
// token through the KV cache; without, it runs the whole sequence again for
// every token (the check on the cache, and the baseline of the benchmark).
// Prompts are left-padded; the cache's starts hide the padding.
type gptStepper struct {
	g        *model.GPT
	useCache bool
	cache    *model.Cache
	seqs     [][]int64 // left-padded rows: prompt then generated tokens
	starts   []int
	maxLen   int
	fed      int // positions of seqs already in the cache
}

func newStepper(g *model.GPT, useCache bool) *gptStepper {
	return &gptStepper{g: g, useCache: useCache}
}

func (s *gptStepper) Start(prompts [][]int32, maxNew int) ([][]float32, error) {
	vocab := s.g.Config().Vocab
	longest := 0
	for i, p := range prompts {
		if len(p) == 0 {
			return nil, fmt.Errorf("prompt %d is empty", i)
		}
		for _, id := range p {
			if id < 0 || int(id) >= vocab {
				return nil, fmt.Errorf("prompt %d: token %d outside the model's vocabulary [0, %d)", i, id, vocab)
			}
		}
		longest = max(longest, len(p))
	}
	// The last generated token is never fed back.
	s.maxLen = longest + max(maxNew, 1) - 1
	if ctx := s.g.Config().Context; s.maxLen > ctx {
		return nil, fmt.Errorf("prompt of %d tokens + %d generated exceed the model context %d", longest, maxNew, ctx)
	}
	s.seqs = make([][]int64, len(prompts))
	s.starts = make([]int, len(prompts))
	for i, p := range prompts {
		s.starts[i] = longest - len(p)
		row := make([]int64, longest, s.maxLen+1)
		for j, id := range p {
			row[s.starts[i]+j] = int64(id)
		}
		s.seqs[i] = row
	}
	if err := s.newCache(); err != nil {
		return nil, err
	}
	return s.feed()
}

func (s *gptStepper) newCache() error {
	if s.cache != nil {
		s.cache.Drop()
	}
	c, err := s.g.NewCache(len(s.seqs), s.maxLen)
	if err != nil {
		return err
	}
	if err := c.SetStarts(s.starts); err != nil {
		c.Drop()
		return err
	}
	s.cache, s.fed = c, 0
	return nil
}

// feed runs the positions not yet in the cache and returns the logits of
// each row's last position.
func (s *gptStepper) feed() ([][]float32, error) {
	b, width := len(s.seqs), len(s.seqs[0])-s.fed
	flat := make([]int64, 0, b*width)
	for _, row := range s.seqs {
		flat = append(flat, row[s.fed:]...)
	}
	ids, err := ts.OfSlice(flat)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	defer ids.MustDrop()
	ids2 := ids.MustView([]int64{int64(b), int64(width)}, false)
	defer ids2.MustDrop()
	var out [][]float32
	ts.NoGrad(func() {
		logits := s.g.ForwardCached(ids2, s.cache)
		last := logits.MustSelect(1, int64(width-1), true)
		out = rowsOf(last, b)
		last.MustDrop()
	})
	s.fed = len(s.seqs[0])
	return out, nil
}

func (s *gptStepper) Next(tokens []int32) ([][]float32, error) {
	if len(tokens) != len(s.seqs) {
		return nil, fmt.Errorf("decode: %d tokens for %d rows", len(tokens), len(s.seqs))
	}
	for i, t := range tokens {
		s.seqs[i] = append(s.seqs[i], int64(t))
	}
	if !s.useCache {
		if err := s.newCache(); err != nil {
			return nil, err
		}
	}
	return s.feed()
}

func (s *gptStepper) Reorder(rows []int) error {
	seqs := make([][]int64, len(rows))
	starts := make([]int, len(rows))
	for i, r := range rows {
		seqs[i] = append(make([]int64, 0, s.maxLen+1), s.seqs[r]...)
		starts[i] = s.starts[r]
	}
	s.seqs, s.starts = seqs, starts
	if s.useCache {
		return s.cache.Reorder(rows)
	}
	return nil
}

func (s *gptStepper) Close() {
	if s.cache != nil {
		s.cache.Drop()
		s.cache = nil
	}
}

// rowsOf copies a float [b, V] tensor into Go rows.
func rowsOf(t *ts.Tensor, b int) [][]float32 {
	c := t.MustTotype(gotch.Float, false)
	c2 := c.MustContiguous(true)
	n := c2.Numel()
	flat := make([]float32, n)
	c2.MustCopyData(flat, n)
	c2.MustDrop()
	v := int(n) / b
	out := make([][]float32, b)
	for i := range out {
		out[i] = flat[i*v : (i+1)*v : (i+1)*v]
	}
	return out
}

// tokenLosses returns, for each window, the model's negative log-likelihood
// of every token after the first given those before it (len(w)−1 values).
// Windows are right-padded into one batch: causal attention never lets a
// position see the padding after it.
func tokenLosses(g *model.GPT, windows [][]int32) ([][]float32, error) {
	t := 0
	for _, w := range windows {
		t = max(t, len(w)-1)
	}
	out := make([][]float32, len(windows))
	if t <= 0 {
		return out, nil
	}
	b := len(windows)
	const ignore = -100
	in := make([]int64, b*t)
	tg := make([]int64, b*t)
	for i, w := range windows {
		for j := 0; j < t; j++ {
			tg[i*t+j] = ignore
			if j < len(w)-1 {
				in[i*t+j] = int64(w[j])
				tg[i*t+j] = int64(w[j+1])
			}
		}
	}
	ins, err := ts.OfSlice(in)
	if err != nil {
		return nil, err
	}
	defer ins.MustDrop()
	tgs, err := ts.OfSlice(tg)
	if err != nil {
		return nil, err
	}
	defer tgs.MustDrop()
	var flat []float32
	var ferr error
	ts.NoGrad(func() {
		ids := ins.MustView([]int64{int64(b), int64(t)}, false)
		logits := g.Forward(ids)
		ids.MustDrop()
		v := logits.MustSize()[2]
		lf := logits.MustView([]int64{-1, v}, true)
		weight := ts.NewTensor()
		nll, err := lf.CrossEntropyLoss(tgs, weight, ts.ReductionNone, ignore, 0, false)
		weight.MustDrop()
		lf.MustDrop()
		if err != nil {
			ferr = err
			return
		}
		flat = rowsOf(nll.MustView([]int64{1, -1}, true), 1)[0]
	})
	if ferr != nil {
		return nil, fmt.Errorf("token losses: %w", ferr)
	}
	for i, w := range windows {
		n := max(len(w)-1, 0)
		out[i] = append([]float32(nil), flat[i*t:i*t+n]...)
	}
	return out, nil
}
