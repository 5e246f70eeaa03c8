package engine

import (
	"fmt"
	"math"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// WindowScore is what one teacher-forced pass tells about a window, per
// position j = 0 … len(w)−2 (the position that predicts token j+1).
type WindowScore struct {
	// NLL is TokenNLL's value, bit for bit.
	NLL []float32
	// Mean and Var are the mean and the variance of log p(v) under the
	// model's own next-token distribution p (Min-K%++'s μ and σ², Zhang et
	// al. 2024): Mean = Σ_v p(v) log p(v), Var = Σ_v p(v) (log p(v) − Mean)².
	Mean, Var []float64
	// Logits are the raw next-token logits of the positions in the span
	// asked for (ScoreWindows), in order (SpanOptions.Logits).
	Logits [][]float32
	// GreedyMatch (SpanOptions.Greedy) is whether at every position of the
	// span the argmax of the logits (the lowest id among equal maxima,
	// Argmax's rule) is the window's next token: greedy decoding would
	// reproduce the span's tokens. True for an empty span.
	GreedyMatch bool
	// SampledLogProb (SpanOptions.Sample) is the sum over the span's
	// positions, in order, of the natural log of the window's next token's
	// probability among the warpers' candidates (−Inf where they drop it);
	// 0 for an empty span, NaN where the warpers' candidates at a position
	// could not be found on the device (a scaled logit not finite, or
	// top-k's ties past what was ordered: engine's warped); the caller then
	// works it from the logits.
	SampledLogProb float64
}

// SpanOptions says what ScoreWindows derives over each window's span:
// the distributions a decoding scheme would draw the window's tokens from.
type SpanOptions struct {
	// Logits copies the span's logits to the host (WindowScore.Logits).
	Logits bool
	// Greedy decides WindowScore.GreedyMatch on the model's device.
	Greedy bool
	// Sample, when not nil, computes WindowScore.SampledLogProb under
	// these warpers on the model's device.
	Sample *Warpers
}

// ScoreWindows is TokenNLL plus, from the same forward pass, each
// position's Min-K%++ statistics and what opt asks of the positions
// [spans[i][0], spans[i][1]) of window i (an empty span for none). Greedy
// and Sample read back a value a position instead of its logits (at
// 32,000 tokens, 128 KB a position in float32 from a GPU).
func ScoreWindows(g *model.GPT, windows [][]int32, spans [][2]int, opt SpanOptions) ([]WindowScore, error) {
	if len(spans) != len(windows) {
		return nil, fmt.Errorf("score windows: %d spans for %d windows", len(spans), len(windows))
	}
	for i, sp := range spans {
		if sp[0] < 0 || sp[1] < sp[0] || sp[1] > max(len(windows[i])-1, 0) {
			return nil, fmt.Errorf("score windows: window %d of %d tokens: span %v outside its %d positions", i, len(windows[i]), sp, max(len(windows[i])-1, 0))
		}
	}
	out := make([]WindowScore, len(windows))
	// The moments of every position of the batch at once. Per window they
	// were a dozen small libtorch calls per 64 positions, 2,500 a batch of
	// 64 audit windows, each a parallel region whose threads wait on one
	// another: as much time as the forward pass itself (a profile of memo
	// audit, docs/ATTACKS.md "Cost"). Each row's moments are computed the
	// same way in any chunk, so the values are the window's own, bit for
	// bit.
	all := func(logits *ts.Tensor, t int) error {
		mean, variance := logProbMoments(logits)
		for i, w := range windows {
			if n := len(w) - 1; n > 0 {
				out[i].Mean = append([]float64(nil), mean[i*t:i*t+n]...)
				out[i].Var = append([]float64(nil), variance[i*t:i*t+n]...)
			}
		}
		return spanScores(logits, t, windows, spans, opt, out)
	}
	err := teacherForced(g, windows, all, func(i int, nll []float32, logits *ts.Tensor) error {
		out[i].NLL = nll
		if sp := spans[i]; opt.Logits && logits != nil && sp[1] > sp[0] {
			rows := logits.MustNarrow(0, int64(sp[0]), int64(sp[1]-sp[0]), false)
			out[i].Logits = model.RowsOf(rows, sp[1]-sp[0])
			rows.MustDrop()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// spanScores sets out's GreedyMatch and SampledLogProb, as opt asks,
// from the batch's logits [B·T, V] (window i's position j at row i·T+j):
// the span positions' rows are taken together, and one value a row
// comes back.
func spanScores(logits *ts.Tensor, t int, windows [][]int32, spans [][2]int, opt SpanOptions, out []WindowScore) error {
	var rows, next []int64 // the span positions' rows, and the token each predicts
	for i, sp := range spans {
		out[i].GreedyMatch = opt.Greedy
		for j := sp[0]; j < sp[1]; j++ {
			rows, next = append(rows, int64(i*t+j)), append(next, int64(windows[i][j+1]))
		}
	}
	if len(rows) == 0 || !opt.Greedy && opt.Sample == nil {
		return nil
	}
	dev := logits.MustDevice()
	idx, err := model.TensorOf(rows, []int64{int64(len(rows))}, dev)
	if err != nil {
		return fmt.Errorf("score windows: %w", err)
	}
	sel := logits.MustIndexSelect(0, idx, false)
	idx.MustDrop()
	defer sel.MustDrop()
	if opt.Greedy {
		am := argmaxRows(sel)
		k := 0
		for i, sp := range spans {
			for j := sp[0]; j < sp[1]; j, k = j+1, k+1 {
				out[i].GreedyMatch = out[i].GreedyMatch && int64(am[k]) == next[k]
			}
		}
	}
	if opt.Sample != nil {
		lps, err := sampledLogProbs(sel, next, *opt.Sample)
		if err != nil {
			return err
		}
		k := 0
		for i, sp := range spans {
			for j := sp[0]; j < sp[1]; j, k = j+1, k+1 {
				out[i].SampledLogProb += lps[k]
			}
		}
	}
	return nil
}

// sampledLogProbs is warpedLogProbs of each row of logits [R, V] at
// next[r], in chunks of momentElems logits (its float64 temporaries are
// several [rows, V] tensors), NaN where warped's guard is not finite.
func sampledLogProbs(logits *ts.Tensor, next []int64, w Warpers) ([]float64, error) {
	size := logits.MustSize()
	n := int(size[0])
	chunk := max(1, momentElems/int(size[1]))
	out := make([]float64, 0, n)
	var ferr error
	torchx.NoGrad(func() {
		for lo := 0; lo < n; lo += chunk {
			m := min(chunk, n-lo)
			tg, err := model.TensorOf(next[lo:lo+m], []int64{int64(m), 1}, logits.MustDevice())
			if err != nil {
				ferr = fmt.Errorf("score windows: %w", err)
				return
			}
			rows := logits.MustNarrow(0, int64(lo), int64(m), false)
			lp, guard := warpedLogProbs(rows, tg, w)
			rows.MustDrop()
			tg.MustDrop()
			vals := readColumns([]*ts.Tensor{lp, guard}) // row r: its log-probability, its guard
			for r := 0; r < m; r++ {
				v := vals[2*r]
				if g := vals[2*r+1]; math.IsNaN(g) || math.IsInf(g, 0) {
					v = math.NaN()
				}
				out = append(out, v)
			}
		}
	})
	return out, ferr
}

// momentElems bounds how many logits logProbMoments takes at a time: its
// float64 temporaries are a few [rows, V] tensors of at most this many
// elements, 25 MB each, where a batch of 2,048-token windows over a 50k
// vocabulary would need GBs; with a small vocabulary a chunk holds
// thousands of positions.
var momentElems = 64 * 50304

// logProbMoments computes, for each row of logits [n, V], the mean and
// variance of log p under p = softmax(row), in float64 on the device.
func logProbMoments(logits *ts.Tensor) (mean, variance []float64) {
	size := logits.MustSize()
	n := int(size[0])
	chunk := max(1, momentElems/int(size[1]))
	for lo := 0; lo < n; lo += chunk {
		rows := logits.MustNarrow(0, int64(lo), int64(min(chunk, n-lo)), false)
		lp := rows.MustLogSoftmax(-1, gotch.Double, true)
		p := lp.MustExp(false)
		mu := p.MustMul(lp, false).MustSumDimIntlist([]int64{-1}, true, gotch.Double, true) // [rows,1]
		d := lp.MustSub(mu, true)
		v := d.MustSquare(true).MustMul(p, true).MustSumDimIntlist([]int64{-1}, false, gotch.Double, true)
		p.MustDrop()
		mean = append(mean, mu.MustView([]int64{-1}, true).Float64Values()...)
		variance = append(variance, v.Float64Values()...)
		v.MustDrop()
	}
	return mean, variance
}

// GradNorm is ‖∇_θ L(w)‖₂ for each window: the Euclidean norm, over every
// parameter, of the gradient of the window's mean token loss (the
// membership statistic of the goldfish reference's mia.py; members, fitted
// already, have smaller gradients). One backward pass per window; each
// parameter's .grad is zero afterwards. The caller must be on one OS
// thread (libtorch's grad mode is per thread).
func GradNorm(g *model.GPT, windows [][]int32) ([]float64, error) {
	cfg := g.Config()
	vocab := cfg.Vocab
	out := make([]float64, len(windows))
	leaves := g.GradLeaves()
	for wi, w := range windows {
		if len(w) < 2 {
			out[wi] = math.NaN()
			continue
		}
		if len(w)-1 > cfg.Context {
			return nil, fmt.Errorf("window %d of %d tokens exceeds the model context %d", wi, len(w), cfg.Context)
		}
		in := make([]int64, len(w)-1)
		tg := make([]int64, len(w)-1)
		for j := range in {
			if w[j+1] < 0 || int(w[j+1]) >= vocab || w[j] < 0 || int(w[j]) >= vocab {
				return nil, fmt.Errorf("window %d token %d: outside the model's vocabulary [0, %d)", wi, j, vocab)
			}
			in[j], tg[j] = int64(w[j]), int64(w[j+1])
		}
		n, err := gradNormOne(g, in, tg, leaves)
		if err != nil {
			return nil, fmt.Errorf("gradient norm of window %d: %w", wi, err)
		}
		out[wi] = n
		torchx.Collect()
	}
	return out, nil
}

// gradNormOne is one window's norm: the gradient lands in leaves and is
// summed by the model (GradSquaredNorm).
func gradNormOne(g *model.GPT, in, tg []int64, leaves []*ts.Tensor) (float64, error) {
	ids, err := model.TensorOf(in, []int64{1, int64(len(in))}, g.Device())
	if err != nil {
		return 0, err
	}
	defer ids.MustDrop()
	targets, err := model.TensorOf(tg, []int64{int64(len(tg))}, g.Device())
	if err != nil {
		return 0, err
	}
	defer targets.MustDrop()
	logits := g.Forward(ids)
	lf := logits.MustView([]int64{int64(len(in)), -1}, true)
	defer lf.MustDrop()
	weight := ts.NewTensor()
	defer weight.MustDrop()
	loss, err := lf.CrossEntropyLoss(targets, weight, ts.ReductionMean, -100, 0, false)
	if err != nil {
		return 0, err
	}
	defer loss.MustDrop()
	// Backward into each parameter's .grad, read, then clear: gotch's
	// RunBackward passes only its first input's pointer to libtorch.
	for _, p := range leaves {
		if !p.MustRequiresGrad() {
			return 0, fmt.Errorf("parameter does not require grad: the weights were loaded frozen")
		}
		p.ZeroGrad()
	}
	if err := loss.Backward(); err != nil {
		return 0, fmt.Errorf("backward: %w", err)
	}
	sq := g.GradSquaredNorm()
	// Dropped, not zeroed: an attack's model holds no gradients beside
	// its weights between windows or after the last (the next backward
	// pass hands each leaf a new one, as adding to zeros did).
	torchx.ClearGrads(leaves)
	return math.Sqrt(sq), nil
}
