package engine

import (
	"fmt"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch/ts"
)

// Stepper decodes a batch of prompts in lockstep: Start feeds the prompts,
// each Next appends one token to every row, and both return every row's
// next-token logits. Prompts may differ in length: they are left-padded,
// and the cache's starts keep the padding out of attention and positions,
// so each row decodes as it would alone. This is memo's one decoding path:
// greedy, sampling and beam search (extract) and Generate all drive it.
type Stepper struct {
	g        *model.GPT
	useCache bool
	cache    *Cache
	seqs     [][]int64 // left-padded rows: prompt then generated tokens
	starts   []int
	maxLen   int
	fed      int // positions of seqs already in the cache
	// promptLen is the length of the left-padded prompts in seqs.
	promptLen int
	// newApprox, when not nil, makes the approximation each cache
	// decodes under (NewStepperUnder; exact decoding has none).
	newApprox func(rows int) Approximation
}

// NewStepper decodes with g. With useCache each new token goes through the
// KV cache; without, the whole sequence runs again for every token (the
// check on the cache, and the baseline of the benchmark).
func NewStepper(g *model.GPT, useCache bool) *Stepper {
	return &Stepper{g: g, useCache: useCache}
}

// Start feeds the prompts (any lengths, none empty) and returns each row's
// next-token logits; room is reserved for maxNew generated tokens.
func (s *Stepper) Start(prompts [][]int32, maxNew int) ([][]float32, error) {
	if len(prompts) == 0 {
		return nil, fmt.Errorf("decode: no prompts")
	}
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
	s.promptLen = longest
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

func (s *Stepper) newCache() error {
	if s.cache != nil {
		s.cache.Drop()
	}
	c, err := NewCache(s.g, len(s.seqs), s.maxLen)
	if err != nil {
		return err
	}
	if err := c.SetStarts(s.starts); err != nil {
		c.Drop()
		return err
	}
	if s.newApprox != nil {
		c.under(s.newApprox(len(s.seqs)))
	}
	s.cache, s.fed = c, 0
	return nil
}

// feed runs the positions not yet in the cache and returns the logits of
// each row's last position.
func (s *Stepper) feed() ([][]float32, error) {
	all, err := s.run(true)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(all))
	for i, r := range all {
		out[i] = r[0]
	}
	return out, nil
}

// run feeds the positions of seqs not yet in the cache, in one forward
// pass, and returns row i's logits at each position fed, out[i][j]; with
// lastOnly, at the last position only (out[i][0]), and the model's head
// runs on that position alone: feed for the next token, run(false) for
// speculative decoding's verification of every drafted position (resync).
func (s *Stepper) run(lastOnly bool) ([][][]float32, error) {
	b, width := len(s.seqs), len(s.seqs[0])-s.fed
	flat := make([]int64, 0, b*width)
	for _, row := range s.seqs {
		flat = append(flat, row[s.fed:]...)
	}
	ids, err := model.TensorOf(flat, []int64{int64(b), int64(width)}, s.g.Device())
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	defer ids.MustDrop()
	var logits *ts.Tensor // [b·width, vocab], width 1 with lastOnly
	if lastOnly {
		logits = s.cache.ForwardLast(ids).MustSelect(1, 0, true)
		width = 1
	} else {
		logits = s.cache.Forward(ids).MustReshape([]int64{int64(b * width), -1}, true)
	}
	rows := model.RowsOf(logits, b*width)
	logits.MustDrop()
	out := make([][][]float32, b)
	for i := range out {
		out[i] = rows[i*width : (i+1)*width]
	}
	s.fed = len(s.seqs[0])
	return out, nil
}

// Next appends tokens[i] to row i and returns the next logits.
func (s *Stepper) Next(tokens []int32) ([][]float32, error) {
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

// Reorder makes row i continue the history of row rows[i]: beam search
// keeps its survivors, and sampling expands each prompt into its samples
// (rows longer than the batch) after running the prompt once.
func (s *Stepper) Reorder(rows []int) error {
	seqs := make([][]int64, len(rows))
	starts := make([]int, len(rows))
	for i, r := range rows {
		if r < 0 || r >= len(s.seqs) {
			return fmt.Errorf("decode: reorder row %d = %d: want 0 <= row < %d", i, r, len(s.seqs))
		}
		seqs[i] = append(make([]int64, 0, s.maxLen+1), s.seqs[r]...)
		starts[i] = s.starts[r]
	}
	s.seqs, s.starts = seqs, starts
	if s.useCache {
		return s.cache.Reorder(rows)
	}
	return nil
}

// Close frees what Start allocated.
func (s *Stepper) Close() {
	if s.cache != nil {
		s.cache.Drop()
		s.cache = nil
	}
}

// GenOptions controls Generate.
type GenOptions struct {
	// UseCache decodes incrementally with a KV cache; false recomputes the
	// whole sequence for every new token (slow; a check on the cache).
	UseCache bool
}

// Generate greedily continues each prompt by n tokens (ties go to the
// lowest id, as torch.argmax).
func Generate(g *model.GPT, prompts [][]int32, n int, opt GenOptions) ([][]int32, error) {
	if len(prompts) == 0 || n <= 0 {
		return make([][]int32, len(prompts)), nil
	}
	s := NewStepper(g, opt.UseCache)
	defer s.Close()
	logits, err := s.Start(prompts, n)
	if err != nil {
		return nil, fmt.Errorf("model: generate: %w", err)
	}
	out, err := Continue(s.Next, logits, n, Greedy)
	if err != nil {
		return nil, fmt.Errorf("model: generate: %w", err)
	}
	return out, nil
}

// Continue is memo's one token loop: it extends every row of a decoding
// by n tokens in lockstep, pick choosing row r's token from its logits.
// The first token comes from logits (the rows' next-token logits after
// Start, Reorder or a speculative resync); each later one from next
// (Stepper.Next) fed the tokens just chosen. Generate, the speculative
// draft, and extract's greedy, sampling and many-guess attacks all
// decode through it. pick is called row by row, in row order.
func Continue(next func(tokens []int32) ([][]float32, error), logits [][]float32, n int, pick func(r int, logits []float32) int32) ([][]int32, error) {
	out := make([][]int32, len(logits))
	if n <= 0 || len(logits) == 0 {
		return out, nil
	}
	toks := make([]int32, len(logits))
	for step := 0; ; step++ {
		for r, l := range logits {
			toks[r] = pick(r, l)
			out[r] = append(out[r], toks[r])
		}
		if step == n-1 {
			return out, nil
		}
		var err error
		if logits, err = next(toks); err != nil {
			return nil, err
		}
		if len(logits) != len(toks) {
			return nil, fmt.Errorf("decode: %d rows of logits for %d rows", len(logits), len(toks))
		}
	}
}

// Greedy is Continue's greedy choice: Argmax.
func Greedy(_ int, logits []float32) int32 { return Argmax(logits) }

// Argmax is the index of the largest logit, the lowest among equals.
func Argmax(logits []float32) int32 {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	return int32(best)
}

// TokenNLL returns, for each window, the model's negative log-likelihood
// of every token after the first given those before it (len(w)−1 values).
// Windows are right-padded into one batch: causal attention never lets a
// position see the padding after it.
func TokenNLL(g *model.GPT, windows [][]int32) ([][]float32, error) {
	out := make([][]float32, len(windows))
	err := teacherForced(g, windows, nil, func(i int, nll []float32, _ *ts.Tensor) error {
		out[i] = nll
		return nil
	})
	return out, err
}

// teacherForced runs one forward pass over the right-padded windows and
// calls visit for each window with its per-token NLL (TokenNLL's values)
// and its logits [len(w)−1, V] (nil for a window of one token), inside the
// pass's no-grad scope. Before the visits, all (when not nil) gets the
// whole batch's logits [B·T, V], window i's position j in row i·T+j, so
// that work over every position can be a few large libtorch calls rather
// than a few per window. Neither may keep the logits tensor.
func teacherForced(g *model.GPT, windows [][]int32, all func(logits *ts.Tensor, t int) error, visit func(i int, nll []float32, logits *ts.Tensor) error) error {
	cfg := g.Config()
	vocab := cfg.Vocab
	t := 0
	for i, w := range windows {
		t = max(t, len(w)-1)
		for j, id := range w {
			if id < 0 || int(id) >= vocab {
				return fmt.Errorf("window %d token %d = %d: outside the model's vocabulary [0, %d)", i, j, id, vocab)
			}
		}
	}
	if t <= 0 {
		for i := range windows {
			if err := visit(i, nil, nil); err != nil {
				return err
			}
		}
		return nil
	}
	if t > cfg.Context {
		return fmt.Errorf("window of %d tokens exceeds the model context %d", t+1, cfg.Context)
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
	ids, err := model.TensorOf(in, []int64{int64(b), int64(t)}, g.Device())
	if err != nil {
		return err
	}
	defer ids.MustDrop()
	targets, err := model.TensorOf(tg, []int64{int64(b * t)}, g.Device())
	if err != nil {
		return err
	}
	defer targets.MustDrop()
	var ferr error
	torchx.NoGrad(func() {
		logits := g.ForwardWith(ids, uncached(g))
		v := logits.MustSize()[2]
		lf := logits.MustView([]int64{-1, v}, true)
		defer lf.MustDrop()
		weight := ts.NewTensor()
		nll, err := lf.CrossEntropyLoss(targets, weight, ts.ReductionNone, ignore, 0, false)
		weight.MustDrop()
		if err != nil {
			ferr = fmt.Errorf("token losses: %w", err)
			return
		}
		flat := model.RowsOf(nll.MustView([]int64{1, -1}, true), 1)[0]
		if all != nil {
			if ferr = all(lf, t); ferr != nil {
				return
			}
		}
		for i, w := range windows {
			n := max(len(w)-1, 0)
			var rows *ts.Tensor
			if n > 0 {
				rows = lf.MustNarrow(0, int64(i*t), int64(n), false)
			}
			err := visit(i, append([]float32(nil), flat[i*t:i*t+n]...), rows)
			if rows != nil {
				rows.MustDrop()
			}
			if err != nil {
				ferr = err
				return
			}
		}
	})
	return ferr
}
