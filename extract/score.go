package extract

import (
	"context"
	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/eval"
	"math"
	"sort"

	"github.com/memo-research/memo/internal/parallel"
	"github.com/memo-research/memo/internal/progress"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
)

// windowScore is what the scoring pass computes over one document's attack window.
type windowScore struct {
	losses   []float32 // per-token NLL over the window (TokenNLL's values)
	minKPP   float64   // Min-K%++ (NaN for a window of one token)
	pExtract float64   // log probability the decoding scheme reproduces the suffix (NaN when undefined)
}

// suffixSpan is the positions of the window whose next-token
// distributions draw the suffix: position j predicts token j+1, so the
// suffix tokens Prefix..Prefix+Suffix−1 come from positions
// len(Prefix)−1 … len(Prefix)+len(Suffix)−2. ok is false when the prompt
// was not attacked or its prefix and suffix are not the window's start.
func suffixSpan(p Prompt) (span [2]int, ok bool) {
	n, s := len(p.Prefix), len(p.Suffix)
	if p.Status != StatusOK || n < 1 || s < 1 || n+s > len(p.Window) {
		return [2]int{}, false
	}
	return [2]int{n - 1, n + s - 1}, true
}

// scoreAll runs one teacher-forced pass over every prompt's window and
// derives its token losses, its Min-K%++ score (fraction cfg.MinKFraction)
// and its probabilistic-extraction log probability under cfg's decoding.
func scoreAll(ctx context.Context, g *model.GPT, cfg Config, prompts []Prompt) ([]windowScore, error) {
	order := byLength(len(prompts), func(i int) int { return len(prompts[i].Window) })
	out := make([]windowScore, len(prompts))
	dec := decoder{cfg: cfg}
	opt := dec.spanOptions(g.Device())
	bar := progress.New("extract: scoring", len(prompts))
	defer bar.Done()
	for lo := 0; lo < len(order); lo += cfg.BatchSize {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		idx := order[lo:min(lo+cfg.BatchSize, len(order))]
		ws := make([][]int32, len(idx))
		spans := make([][2]int, len(idx))
		for k, i := range idx {
			ws[k] = prompts[i].Window
			if sp, ok := suffixSpan(prompts[i]); ok && cfg.Decoding != DecodeBeam {
				spans[k] = sp
			}
		}
		scores, err := engine.ScoreWindows(g, ws, spans, opt)
		if err != nil {
			return nil, err
		}
		batchOpt := opt
		if undecided(scores, opt) {
			// A position's largest logit was not finite, where libtorch and
			// the host order NaN differently: the batch the host's way.
			batchOpt = engine.SpanOptions{Logits: true}
			if scores, err = engine.ScoreWindows(g, ws, spans, batchOpt); err != nil {
				return nil, err
			}
		}
		// Each document's scores are its own: they are derived on every
		// core (with the logits on the host, a sampled suffix's probability
		// orders the vocabulary at each of its tokens).
		parallel.For(len(idx), func() func(int) {
			return func(k int) {
				i, s := idx[k], scores[k]
				d := windowScore{losses: s.NLL, minKPP: MinKPlusPlus(s.NLL, s.Mean, s.Var, cfg.MinKFraction), pExtract: math.NaN()}
				if _, ok := suffixSpan(prompts[i]); ok && cfg.Decoding != DecodeBeam {
					d.pExtract = dec.pExtract(s, prompts[i].Suffix, batchOpt)
				}
				out[i] = d
			}
		})
		torchx.Collect()
		torchx.ReleaseFreeMemory()
		bar.Update(lo+len(idx), "")
	}
	return out, nil
}

// spanOptions is what the scoring pass asks of each suffix's positions on
// a model on dev: with extract.decode_on on the device (auto: on a GPU),
// greedy's argmax check or sampling's probabilities there, one value a
// position read back; on the host, the positions' logits, which
// suffixLogProb reads. Both give the same p_extract (greedy's bit for
// bit; sampling's to its last bits, as the device sampler's
// log-probabilities).
func (d decoder) spanOptions(dev gotch.Device) engine.SpanOptions {
	switch {
	case d.cfg.Decoding == DecodeBeam:
		return engine.SpanOptions{}
	case !d.decodesOn(dev):
		return engine.SpanOptions{Logits: true}
	case d.cfg.Decoding == DecodeGreedy:
		return engine.SpanOptions{Greedy: true}
	}
	w := d.warpers()
	return engine.SpanOptions{Sample: &w}
}

// undecided reports whether a score computed on the device under opt
// needs the host: a sampled suffix's log-probability is NaN where the
// device could not find a position's candidates (engine.WindowScore).
func undecided(scores []engine.WindowScore, opt engine.SpanOptions) bool {
	if opt.Sample == nil {
		return false
	}
	for _, s := range scores {
		if math.IsNaN(s.SampledLogProb) {
			return true
		}
	}
	return false
}

// pExtract is suffixLogProb of s's span, from what ScoreWindows computed
// under opt.
func (d decoder) pExtract(s engine.WindowScore, suffix []int32, opt engine.SpanOptions) float64 {
	switch {
	case opt.Greedy && s.GreedyMatch:
		return 0
	case opt.Greedy:
		return math.Inf(-1)
	case opt.Sample != nil:
		return s.SampledLogProb
	}
	return d.suffixLogProb(s.Logits, suffix)
}

// suffixLogProb is the natural log of the probability that the decoding
// scheme produces suffix given the next-token logits that precede each of
// its tokens (teacher forcing: logits[t] is the distribution after the
// prefix and suffix[:t]). Sampling draws from candidates' truncated,
// renormalized distribution, so the probability is the product over t of
// suffix[t]'s probability there (0 when truncation drops it): Hayes et al.
// 2024's p of (n, p)-discoverable extraction. Greedy decoding is
// deterministic: log 1 = 0 when every true token is the argmax under
// engine.Argmax's tie rule (lowest id), else −Inf. Beam search has no such
// per-token product: NaN.
func (d decoder) suffixLogProb(logits [][]float32, suffix []int32) float64 {
	switch d.cfg.Decoding {
	case DecodeGreedy:
		for t, l := range logits {
			if engine.Argmax(l) != suffix[t] {
				return math.Inf(-1)
			}
		}
		return 0
	case DecodeSample:
		sc := scratchPool.Get().(*sampleScratch)
		defer scratchPool.Put(sc)
		var lp float64
		for t, l := range logits {
			ids, probs := d.candidatesOf(l, nil, sc)
			p := 0.0
			for j, id := range ids {
				if int32(id) == suffix[t] {
					p = probs[j]
					break
				}
			}
			lp += math.Log(p)
		}
		return lp
	}
	return math.NaN()
}

// MinKPlusPlus is the Min-K%++ score of a window (Zhang et al. 2024): at
// each position t, z_t = (log p(x_t) − μ_t) / σ_t, where log p(x_t) =
// −nll[t] and μ_t, σ_t² are the mean and variance of log p under the
// model's next-token distribution there; the score is the mean of the
// eval.MinKCount(n, frac) smallest z_t, int(n·frac) truncated but at
// least one. Higher means member. A position whose distribution has
// σ_t = 0 (all its mass on one token, or spread evenly) gives no evidence
// either way: z_t = 0. NaN for no positions.
func MinKPlusPlus(nll []float32, mean, variance []float64, frac float64) float64 {
	n := len(nll)
	if n == 0 || len(mean) != n || len(variance) != n {
		return math.NaN()
	}
	z := make([]float64, n)
	for t := range z {
		if sd := math.Sqrt(variance[t]); sd > 0 {
			z[t] = (-float64(nll[t]) - mean[t]) / sd
		}
	}
	sort.Float64s(z)
	k := eval.MinKCount(n, frac)
	var s float64
	for _, v := range z[:k] {
		s += v
	}
	return s / float64(k)
}
