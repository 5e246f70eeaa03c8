package extract

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"time"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
)

// approxAll is generateAll under cfg's approximation: it decodes every
// attacked prompt approximately, then exactly (the same decoding and
// seeds), and returns the approximate generations with each row's
// runfiles.CompletionApprox (nil for prompts not attacked). basis is Loki's key basis
// (nil unless extract.attention = "loki").
func approxAll(ctx context.Context, g *model.GPT, cfg Config, prompts []Prompt, basis *model.LokiBasis) ([][]int32, []*runfiles.CompletionApprox, error) {
	exactCfg := cfg
	exactCfg.KVBits, exactCfg.Attention, exactCfg.Speculative = 16, model.AttnExact, SpecNone
	exact, err := generateAll(ctx, g, exactCfg, prompts, true)
	if err != nil {
		return nil, nil, fmt.Errorf("exact decoding: %w", err)
	}
	var todo []int
	for i, p := range prompts {
		if p.Status == StatusOK {
			todo = append(todo, i)
		}
	}
	order := byLength(len(todo), func(i int) int { return len(prompts[todo[i]].Prefix) })
	width := 1
	if cfg.Decoding == DecodeBeam {
		width = cfg.Beams
	}
	batch := max(1, cfg.BatchSize/width)
	var draft *model.GPT
	if cfg.Speculative == SpecQuantSpec {
		draft = g.QuantizedCopy(4)
	}
	gen := make([][]int32, len(prompts))
	metrics := make([]*runfiles.CompletionApprox, len(prompts))
	dec := decoder{cfg: cfg}
	start, last := time.Now(), time.Now()
	for lo := 0; lo < len(order); lo += batch {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		var idx []int
		n := 0
		for _, o := range order[lo:min(lo+batch, len(order))] {
			idx = append(idx, todo[o])
			n = max(n, len(prompts[todo[o]].Suffix))
		}
		pre := make([][]int32, len(idx))
		rngs := make([]*rand.Rand, len(idx))
		for k, i := range idx {
			pre[k] = prompts[i].Prefix
			rngs[k] = sampleRNG(cfg.Seed, prompts[i].Doc.ID)
		}
		out, ms, err := decodeApprox(g, draft, cfg, dec, basis, pre, n, rngs)
		if err != nil {
			return nil, nil, err
		}
		for k, i := range idx {
			gen[i] = out[k][:len(prompts[i].Suffix)]
			ms[k].ExactAgree = agreeing(gen[i], exact[i])
			metrics[i] = &ms[k]
		}
		torchx.Collect()
		torchx.ReleaseFreeMemory()
		if time.Since(last) > 10*time.Second {
			slog.Info("extract: approximate decoding", "done", lo+len(idx), "of", len(order), "elapsed", time.Since(start).Round(time.Second).String())
			last = time.Now()
		}
	}
	return gen, metrics, nil
}

// decodeApprox decodes one batch under cfg's approximation.
func decodeApprox(g, draft *model.GPT, cfg Config, dec decoder, basis *model.LokiBasis, pre [][]int32, n int, rngs []*rand.Rand) ([][]int32, []runfiles.CompletionApprox, error) {
	ms := make([]runfiles.CompletionApprox, len(pre))
	if cfg.Speculative == SpecQuantSpec {
		out, stats, err := model.Speculative(g, draft, model.Approx{KVBits: 4}, pre, n, cfg.QuantSpec.Gamma)
		if err != nil {
			return nil, nil, err
		}
		for k, s := range stats {
			ms[k] = runfiles.CompletionApprox{AttnMassKept: 1, KVBytesPerToken: math.NaN(), SpecAccept: math.NaN()}
			if s.Proposed > 0 {
				ms[k].SpecAccept = float64(s.Accepted) / float64(s.Proposed)
			}
		}
		return out, ms, nil
	}
	lm, err := model.NewApproxStepper(g, cfg.modelApprox(basis))
	if err != nil {
		return nil, nil, err
	}
	var out [][]int32
	width := 1
	if cfg.Decoding == DecodeBeam {
		width = cfg.Beams
		out, err = dec.beamSearch(lm, pre, n, width)
	} else {
		out, err = dec.generate(lm, pre, n, rngs)
	}
	if err != nil {
		return nil, nil, err
	}
	stats := lm.ApproxStats()
	for k := range ms {
		ms[k] = runfiles.CompletionApprox{AttnMassKept: 1, KVBytesPerToken: math.NaN(), SpecAccept: math.NaN()}
		// A beam search's first beam of each prompt is its best (beamSearch).
		if s := stats[k*width]; s.Steps > 0 {
			ms[k].AttnMassKept, ms[k].KVBytesPerToken = s.MassKept, s.KVBytes
		}
	}
	return out, ms, nil
}

// agreeing counts the leading tokens a and b share.
func agreeing(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// generateFor is generateAll, or approxAll when cfg approximates or
// names extract.approximation, even "exact", so that a sweep's exact
// point is measured like the others (ms is then every row's metrics, nil
// for rows not attacked).
func generateFor(ctx context.Context, g *model.GPT, cfg Config, ckpt string, ds *data.Dataset, prompts []Prompt, window int) (gen [][]int32, ms []*runfiles.CompletionApprox, err error) {
	if !cfg.approximate() && cfg.Approximation == "" {
		gen, err = generateAll(ctx, g, cfg, prompts, true)
		return gen, nil, err
	}
	var basis *model.LokiBasis
	if cfg.Attention == model.AttnLoki {
		if basis, err = lokiBasis(g, ckpt, ds, cfg, window); err != nil {
			return nil, nil, err
		}
		if hd := g.Config().HeadDim; cfg.Loki.Rank > hd {
			return nil, nil, fmt.Errorf("%w: extract.loki.rank = %d: must be at most the model's head dimension %d", ErrConfig, cfg.Loki.Rank, hd)
		}
	}
	slog.Info("extract: approximate decoding", "method", cfg.approxName())
	return approxAll(ctx, g, cfg, prompts, basis)
}
