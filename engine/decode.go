package engine

import (
	"fmt"
	"math"

	"github.com/memo-research/memo/internal/parallel"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
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
	// pending holds StartOnDevice's logits [rows, vocab] on the device
	// until ContinueSampled or ContinueBeams takes them.
	pending *ts.Tensor
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

// Device is where the stepper's model runs.
func (s *Stepper) Device() gotch.Device { return s.g.Device() }

// Start feeds the prompts (any lengths, none empty) and returns each row's
// next-token logits; room is reserved for maxNew generated tokens.
func (s *Stepper) Start(prompts [][]int32, maxNew int) ([][]float32, error) {
	if err := s.begin(prompts, maxNew); err != nil {
		return nil, err
	}
	return s.feed()
}

// StartGreedy is Start returning each row's greedy next token (Argmax of
// its logits) instead of the logits. The argmax is taken on the model's
// device, so on a GPU b ids come back to the host a step rather than
// b × vocab logits (32 MB at batch 256 and Llama's 32,000 tokens), and
// the host no longer scans them.
func (s *Stepper) StartGreedy(prompts [][]int32, maxNew int) ([]int32, error) {
	if err := s.begin(prompts, maxNew); err != nil {
		return nil, err
	}
	return s.feedGreedy()
}

// begin checks the prompts, left-pads them into seqs and makes the cache.
func (s *Stepper) begin(prompts [][]int32, maxNew int) error {
	if len(prompts) == 0 {
		return fmt.Errorf("decode: no prompts")
	}
	vocab := s.g.Config().Vocab
	longest := 0
	for i, p := range prompts {
		if len(p) == 0 {
			return fmt.Errorf("prompt %d is empty", i)
		}
		for _, id := range p {
			if id < 0 || int(id) >= vocab {
				return fmt.Errorf("prompt %d: token %d outside the model's vocabulary [0, %d)", i, id, vocab)
			}
		}
		longest = max(longest, len(p))
	}
	// The last generated token is never fed back.
	s.maxLen = longest + max(maxNew, 1) - 1
	if ctx := s.g.Config().Context; s.maxLen > ctx {
		return &ContextError{Longest: longest, New: maxNew, Context: ctx}
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
	return s.newCache()
}

func (s *Stepper) newCache() error {
	s.dropPending()
	if s.cache != nil && s.cache.reusable(len(s.seqs), s.maxLen) {
		// The same shape again: keep the cache's tensors and the token
		// steps captured on them (graph.go).
		if err := s.cache.reset(s.starts); err != nil {
			return err
		}
		s.fed = 0
		return nil
	}
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

// feedGreedy is feed returning each row's Argmax instead of its logits,
// taken on the device (argmaxRows).
func (s *Stepper) feedGreedy() ([]int32, error) {
	logits, err := s.pass(true)
	if err != nil {
		return nil, err
	}
	defer logits.MustDrop()
	return argmaxRows(logits), nil
}

// run feeds the positions of seqs not yet in the cache, in one forward
// pass, and returns row i's logits at each position fed, out[i][j]; with
// lastOnly, at the last position only (out[i][0]), and the model's head
// runs on that position alone: feed for the next token, run(false) for
// speculative decoding's verification of every drafted position (resync).
func (s *Stepper) run(lastOnly bool) ([][][]float32, error) {
	b, width := len(s.seqs), len(s.seqs[0])-s.fed
	if lastOnly {
		width = 1
	}
	logits, err := s.pass(lastOnly)
	if err != nil {
		return nil, err
	}
	rows := model.RowsOf(logits, b*width)
	logits.MustDrop()
	out := make([][][]float32, b)
	for i := range out {
		out[i] = rows[i*width : (i+1)*width]
	}
	return out, nil
}

// pass is run's forward pass, leaving the logits on the device: [b·width,
// vocab], row i·width+j the logits after row i's j-th position fed
// (width 1 with lastOnly).
func (s *Stepper) pass(lastOnly bool) (*ts.Tensor, error) {
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
	var logits *ts.Tensor
	if lastOnly {
		logits = s.cache.ForwardLast(ids).MustSelect(1, 0, true)
	} else {
		logits = s.cache.Forward(ids).MustReshape([]int64{int64(b * width), -1}, true)
	}
	s.fed = len(s.seqs[0])
	return logits, nil
}

// argmaxRows is Argmax of each row of logits [b, V], taken on their
// device: one transfer of each row's argmax and maximum (b pairs) comes
// back instead of the logits. torch.argmax returns the first index among
// equal maxima, Argmax's tie rule, but ranks NaN above every number where
// Argmax ranks it below, so a row whose maximum is NaN is copied back and
// decided by Argmax: the ids are Argmax's on every row.
func argmaxRows(logits *ts.Tensor) []int32 {
	b := logits.MustSize()[0]
	var pairs []float64 // row i: argmax, maximum
	torchx.NoGrad(func() {
		am, amCol, topCol := argmaxColumns(logits)
		am.MustDrop()
		pairs = readColumns([]*ts.Tensor{amCol, topCol})
	})
	out := make([]int32, b)
	for i := range out {
		if math.IsNaN(pairs[2*i+1]) {
			row := logits.MustSelect(0, int64(i), false)
			out[i] = Argmax(model.RowsOf(row.MustView([]int64{1, -1}, true), 1)[0])
			continue
		}
		out[i] = int32(pairs[2*i])
	}
	return out
}

// argmaxColumns is the argmax of each row of logits [b, V] ([b, 1],
// int64) and, as float64 columns for readColumns, that argmax and the
// maximum it picked.
func argmaxColumns(logits *ts.Tensor) (am, amCol, topCol *ts.Tensor) {
	am = logits.MustArgmax([]int64{-1}, true, false)
	topCol = logits.MustGather(1, am, false, false).MustTotype(gotch.Double, true)
	return am, am.MustTotype(gotch.Double, false), topCol
}

// readColumns brings float64 columns [b, 1] of one device back to the
// host in one transfer, row by row (row r holds each column's value in
// turn), and frees them.
func readColumns(cols []*ts.Tensor) []float64 {
	all := ts.MustCat(cols, 1)
	for _, c := range cols {
		c.MustDrop()
	}
	if all.MustDevice().IsCuda() {
		all = all.MustTo(gotch.CPU, true)
	}
	return all.MustView([]int64{-1}, true).Float64Values()
}

// Next appends tokens[i] to row i and returns the next logits.
func (s *Stepper) Next(tokens []int32) ([][]float32, error) {
	if err := s.append(tokens); err != nil {
		return nil, err
	}
	return s.feed()
}

// NextGreedy is Next returning each row's greedy next token, picked on
// the device as StartGreedy's.
func (s *Stepper) NextGreedy(tokens []int32) ([]int32, error) {
	if err := s.append(tokens); err != nil {
		return nil, err
	}
	return s.feedGreedy()
}

// ContinueGreedy is ContinueIDs(s.NextGreedy, first, n) right after
// StartGreedy, with the same tokens: it extends every row by n tokens,
// first being each row's first. Each step's argmax is fed to the next on
// the device, so on a GPU the host queues every step without waiting for
// one and reads every row's tokens once, at the end, instead of once a
// step. A NaN maximum anywhere (where torch.argmax and Argmax disagree)
// decodes the batch again the step-by-step way, whose argmaxRows decides
// such rows as Argmax. Without the cache, or later than right after
// StartGreedy, it is the step-by-step loop.
func (s *Stepper) ContinueGreedy(first []int32, n int) ([][]int32, error) {
	fresh := s.cache != nil && len(s.seqs) > 0 && len(s.seqs[0]) == s.promptLen && s.fed == s.promptLen
	if !s.useCache || !fresh || n <= 1 {
		return ContinueIDs(s.NextGreedy, first, n)
	}
	prompts := s.prompts()
	maxNew := s.maxLen - s.promptLen + 1
	if err := s.append(first); err != nil {
		return nil, err
	}
	logits, err := s.pass(true)
	if err != nil {
		return nil, err
	}
	var picks, tops []*ts.Tensor // each step's argmax and maximum, [b, 1]
	var pairs []float64          // row r: n−1 argmaxes, then their maxima
	torchx.NoGrad(func() {
		s.stepOnDevice(logits, n-1, true, func(_ int, logits *ts.Tensor) *ts.Tensor {
			am, amCol, topCol := argmaxColumns(logits)
			picks, tops = append(picks, amCol), append(tops, topCol)
			return am
		})
		pairs = readColumns(append(picks, tops...))
	})
	b, m := len(first), n-1
	out := make([][]int32, b)
	for r := range out {
		row := pairs[r*2*m : (r+1)*2*m]
		out[r] = append(make([]int32, 0, n), first[r])
		for j := 0; j < m; j++ {
			if math.IsNaN(row[m+j]) {
				return s.greedyAgain(prompts, maxNew, n)
			}
			out[r] = append(out[r], int32(row[j]))
		}
	}
	// The cache holds every token but the last, as after the step loop.
	for r := range out {
		for _, t := range out[r][1 : n-1] {
			s.seqs[r] = append(s.seqs[r], int64(t))
		}
	}
	s.fed = len(s.seqs[0])
	return out, nil
}

// stepOnDevice is the token loop of a decoding whose choices stay on the
// device (ContinueGreedy, ContinueSampled, ContinueBeams): choose takes
// step j's logits [rows, V] (taking ownership of nothing, keeping only
// what it reads back later) and returns the tokens it chose, [rows, 1]
// int64; each step's but the last are fed through the cache to give the
// next step's logits, with graphed by the steps' captured CUDA graphs
// where the cache can have them (graph.go; greedy's rows stay in place,
// where beam search reorders them). It takes ownership of logits, and
// runs n steps under the caller's NoGrad.
func (s *Stepper) stepOnDevice(logits *ts.Tensor, n int, graphed bool, choose func(step int, logits *ts.Tensor) *ts.Tensor) {
	for step := 0; ; step++ {
		tok := choose(step, logits)
		logits.MustDrop()
		if step == n-1 {
			tok.MustDrop()
			return
		}
		logits = s.cache.forwardToken(tok, graphed).MustSelect(1, 0, true)
		tok.MustDrop()
	}
}

// greedyAgain decodes the prompts greedily the step-by-step way, in a new
// cache: ContinueGreedy's answer to a NaN maximum.
func (s *Stepper) greedyAgain(prompts [][]int32, maxNew, n int) ([][]int32, error) {
	first, err := s.StartGreedy(prompts, maxNew)
	if err != nil {
		return nil, err
	}
	return ContinueIDs(s.NextGreedy, first, n)
}

// prompts are the rows' prompts, without their left padding.
func (s *Stepper) prompts() [][]int32 {
	out := make([][]int32, len(s.seqs))
	for i, row := range s.seqs {
		for _, id := range row[s.starts[i]:s.promptLen] {
			out[i] = append(out[i], int32(id))
		}
	}
	return out
}

// append adds tokens[i] to row i; without the cache it starts a new one,
// so that the next pass runs every position again.
func (s *Stepper) append(tokens []int32) error {
	if len(tokens) != len(s.seqs) {
		return fmt.Errorf("decode: %d tokens for %d rows", len(tokens), len(s.seqs))
	}
	for i, t := range tokens {
		s.seqs[i] = append(s.seqs[i], int64(t))
	}
	if !s.useCache {
		return s.newCache()
	}
	return nil
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

// Close ends a decoding and frees what Start allocated, except a cache
// holding token steps captured as CUDA graphs (graph.go): that stays for
// the stepper's next batch of the same shape, where the steps replay
// instead of being captured again, until Release or a batch of another
// shape frees it.
func (s *Stepper) Close() {
	s.dropPending()
	if s.cache != nil && s.cache.capturedSteps() == 0 {
		s.cache.Drop()
		s.cache = nil
	}
}

// Release frees everything the stepper holds, captured token steps too.
func (s *Stepper) Release() {
	s.dropPending()
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

// ContextError is a decoding asked for more positions than the model
// has: the longest prompt and the new tokens, of which the last is never
// fed back.
type ContextError struct{ Longest, New, Context int }

func (e *ContextError) Error() string {
	return fmt.Sprintf("prompt of %d tokens + %d generated need %d positions, the model's context has %d", e.Longest, e.New, e.Longest+e.New-1, e.Context)
}

// MostNew is the most new tokens the longest prompt leaves room for.
func (e *ContextError) MostNew() int { return e.Context - e.Longest + 1 }

// Generate greedily continues each prompt by n tokens (ties go to the
// lowest id, as torch.argmax).
func Generate(g *model.GPT, prompts [][]int32, n int, opt GenOptions) ([][]int32, error) {
	if len(prompts) == 0 || n <= 0 {
		return make([][]int32, len(prompts)), nil
	}
	s := NewStepper(g, opt.UseCache)
	defer s.Release()
	first, err := s.StartGreedy(prompts, n)
	if err != nil {
		return nil, fmt.Errorf("greedy decoding: %w", err)
	}
	out, err := s.ContinueGreedy(first, n)
	if err != nil {
		return nil, fmt.Errorf("greedy decoding: %w", err)
	}
	return out, nil
}

// Continue is memo's one token loop over logits: it extends every row of
// a decoding by n tokens in lockstep, pick choosing row r's token from its
// logits. The first token comes from logits (the rows' next-token logits
// after Start, Reorder or a speculative resync); each later one from next
// (Stepper.Next) fed the tokens just chosen. The speculative draft and
// extract's sampling and many-guess attacks decode through it; greedy
// decoding, which needs no logits on the host, through ContinueIDs.
//
// pick is called once for each row at each step, for several rows at once
// (pickRows), so it may read and write only row r's own state (its
// generator, its sums): the tokens then do not depend on the order in
// which rows are picked.
func Continue(next func(tokens []int32) ([][]float32, error), logits [][]float32, n int, pick func(r int, logits []float32) int32) ([][]int32, error) {
	if n <= 0 || len(logits) == 0 {
		return make([][]int32, len(logits)), nil
	}
	return ContinueIDs(func(toks []int32) ([]int32, error) {
		logits, err := next(toks)
		if err != nil {
			return nil, err
		}
		if len(logits) != len(toks) {
			return nil, fmt.Errorf("decode: %d rows of logits for %d rows", len(logits), len(toks))
		}
		return pickRows(logits, pick), nil
	}, pickRows(logits, pick), n)
}

// pickRows is pick's token for every row of logits. The rows are picked
// by up to GOMAXPROCS goroutines at once, each taking the next row not yet
// taken: sampling a row orders and sums its whole vocabulary on the host
// (extract's candidates), about 1.5 ms a row at 32,000 tokens, which at
// batch 256 was 0.4 s a step on one core while the model's step on a GPU
// takes milliseconds.
func pickRows(logits [][]float32, pick func(r int, logits []float32) int32) []int32 {
	toks := make([]int32, len(logits))
	parallel.For(len(logits), func() func(int) {
		return func(r int) { toks[r] = pick(r, logits[r]) }
	})
	return toks
}

// ContinueIDs is memo's one token loop: it extends every row by n tokens
// in lockstep, first being each row's first token and next (Stepper.
// NextGreedy, or Continue's pick over Stepper.Next) returning each row's
// token after the ones fed.
func ContinueIDs(next func(tokens []int32) ([]int32, error), first []int32, n int) ([][]int32, error) {
	out := make([][]int32, len(first))
	if n <= 0 || len(first) == 0 {
		return out, nil
	}
	toks := first
	for step := 0; ; step++ {
		for r, t := range toks {
			out[r] = append(out[r], t)
		}
		if step == n-1 {
			return out, nil
		}
		var err error
		if toks, err = next(toks); err != nil {
			return nil, err
		}
		if len(toks) != len(out) {
			return nil, fmt.Errorf("decode: %d tokens for %d rows", len(toks), len(out))
		}
	}
}

// Greedy is Continue's greedy choice: Argmax.
func Greedy(_ int, logits []float32) int32 { return Argmax(logits) }

// Argmax is the index of the largest logit, the lowest among equals; a
// NaN ranks below every number (all NaN: 0). A NaN at index 0 was kept,
// since nothing compares above it, so the answer hung on where it sat.
func Argmax(logits []float32) int32 {
	best := 0
	for i, v := range logits {
		if v > logits[best] || (logits[best] != logits[best] && v == v) {
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
