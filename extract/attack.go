package extract

import (
	"context"
	"math/rand/v2"
	"sort"

	"github.com/memo-research/memo/internal/progress"
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
// attacked). With several guesses per prompt it is the best ranked.
func generateAll(ctx context.Context, g *model.GPT, cfg Config, prompts []Prompt, useCache bool) ([][]int32, error) {
	gs, err := generateGuesses(ctx, g, cfg, prompts, useCache)
	if err != nil {
		return nil, err
	}
	return topIDs(gs), nil
}

// generateGuesses decodes cfg.Samples continuations of every attacked
// prompt, each as long as its suffix, ranked (rankGuesses); the result is
// indexed like prompts (nil when not attacked). The collector runs between
// batches, when no libtorch call is in flight.
func generateGuesses(ctx context.Context, g *model.GPT, cfg Config, prompts []Prompt, useCache bool) ([][]Guess, error) {
	var todo []int
	for i, p := range prompts {
		if p.Status == StatusOK {
			todo = append(todo, i)
		}
	}
	order := byLength(len(todo), func(i int) int { return len(prompts[todo[i]].Prefix) })
	samples := max(cfg.Samples, 1)
	// batch_size counts the rows decoded together: beams or samples of
	// fewer prompts.
	batch := cfg.BatchSize
	switch {
	case cfg.Decoding == DecodeBeam:
		batch = max(1, cfg.BatchSize/cfg.Beams)
	case samples > 1:
		batch = max(1, cfg.BatchSize/samples)
	}
	out := make([][]Guess, len(prompts))
	dec := decoder{cfg: cfg}
	bar := progress.New("extract: generating", len(order))
	done := 0
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
		var rngs []*rand.Rand
		for k, i := range idx {
			pre[k] = prompts[i].Prefix
			n = max(n, len(prompts[i].Suffix))
			for j := 0; j < samples; j++ {
				rngs = append(rngs, guessRNG(cfg.Seed, prompts[i].Doc.ID, j))
			}
		}
		lm := model.NewStepper(g, useCache)
		var gen [][]Guess
		var err error
		if cfg.Decoding == DecodeBeam {
			gen, err = dec.beamGuesses(lm, pre, n, cfg.Beams)
		} else {
			gen, err = dec.guesses(lm, pre, n, samples, rngs)
		}
		if err != nil {
			return nil, err
		}
		for k, i := range idx {
			gs := gen[k][:samples] // beam search: its best samples beams, already ranked
			for j := range gs {
				gs[j].IDs = gs[j].IDs[:len(prompts[i].Suffix)]
			}
			rankGuesses(gs)
			out[i] = gs
		}
		torchx.Collect()
		torchx.ReleaseFreeMemory()
		done += len(idx)
		bar.Update(done, "")
	}
	bar.Done()
	return out, nil
}

// windowLosses computes every prompt's per-token losses over its window,
// reporting progress under label.
func windowLosses(ctx context.Context, g *model.GPT, prompts []Prompt, batch int, label string) ([][]float32, error) {
	order := byLength(len(prompts), func(i int) int { return len(prompts[i].Window) })
	out := make([][]float32, len(prompts))
	bar := progress.New(label, len(prompts))
	defer bar.Done()
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
		torchx.ReleaseFreeMemory()
		bar.Update(lo+len(idx), "")
	}
	return out, nil
}
