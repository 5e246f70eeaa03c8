package extract

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
)

// byLength orders the indexes of items by length (stable), so that a batch
// holds prompts of similar length and wastes little on padding.
func byLength(n int, length func(i int) int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return length(idx[a]) < length(idx[b]) })
	return idx
}

// generateAll decodes a continuation as long as its suffix for every
// attacked prompt; the result is indexed like prompts (nil when not
// attacked). The collector runs between batches, when no libtorch call is
// in flight.
func generateAll(ctx context.Context, g *model.GPT, cfg Config, prompts []Prompt, useCache bool) ([][]int32, error) {
	var todo []int
	for i, p := range prompts {
		if p.Status == StatusOK {
			todo = append(todo, i)
		}
	}
	order := byLength(len(todo), func(i int) int { return len(prompts[todo[i]].Prefix) })
	batch := cfg.BatchSize
	if cfg.Decoding == DecodeBeam {
		batch = max(1, cfg.BatchSize/cfg.Beams)
	}
	out := make([][]int32, len(prompts))
	dec := decoder{cfg: cfg}
	start, done, last := time.Now(), 0, time.Now()
	for lo := 0; lo < len(order); lo += batch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var idx []int
		for _, o := range order[lo:min(lo+batch, len(order))] {
			idx = append(idx, todo[o])
		}
		// Equal-length suffixes in every mode; the batch decodes the longest.
		n := 0
		pre := make([][]int32, len(idx))
		rngs := make([]*rand.Rand, len(idx))
		for k, i := range idx {
			pre[k] = prompts[i].Prefix
			n = max(n, len(prompts[i].Suffix))
			rngs[k] = sampleRNG(cfg.Seed, prompts[i].Doc.ID)
		}
		lm := model.NewStepper(g, useCache)
		var gen [][]int32
		var err error
		if cfg.Decoding == DecodeBeam {
			gen, err = dec.beamSearch(lm, pre, n, cfg.Beams)
		} else {
			gen, err = dec.generate(lm, pre, n, rngs)
		}
		if err != nil {
			return nil, err
		}
		for k, i := range idx {
			out[i] = gen[k][:len(prompts[i].Suffix)]
		}
		torchx.Collect()
		done += len(idx)
		if time.Since(last) > 10*time.Second {
			slog.Info("extract: generating", "done", done, "of", len(order), "elapsed", time.Since(start).Round(time.Second).String())
			last = time.Now()
		}
	}
	return out, nil
}

// windowLosses computes every prompt's per-token losses over its window.
func windowLosses(ctx context.Context, g *model.GPT, prompts []Prompt, batch int) ([][]float32, error) {
	order := byLength(len(prompts), func(i int) int { return len(prompts[i].Window) })
	out := make([][]float32, len(prompts))
	for lo := 0; lo < len(order); lo += batch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		idx := order[lo:min(lo+batch, len(order))]
		ws := make([][]int32, len(idx))
		for k, i := range idx {
			ws[k] = prompts[i].Window
		}
		ls, err := g.TokenNLL(ws)
		if err != nil {
			return nil, err
		}
		for k, i := range idx {
			out[i] = ls[k]
		}
		torchx.Collect()
	}
	return out, nil
}
