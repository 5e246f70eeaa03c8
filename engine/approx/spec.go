package approx

import (
	"fmt"

	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/model"
)

// SpecStats are one row's QuantSpec counts: draft tokens proposed, and
// those the target's greedy choice agreed with (before the first
// disagreement of each round).
type SpecStats struct {
	Proposed, Accepted int
}

// Speculative greedily continues each prompt by n tokens with
// self-speculative decoding (QuantSpec, Tiwari et al. 2025): each round
// the draft proposes up to gamma tokens greedily, the target runs them
// all in one forward, and every row keeps the draft tokens up to the
// first one the target would not have chosen, plus the target's own
// token there. Rows advance in lockstep by the fewest any row kept, so
// the batch stays rectangular; the target picks every token, so the
// output is the target's greedy decoding (up to the rounding of running
// several positions in one product). target decodes exactly;
// draft is typically QuantizedCopy(target, 4) with a 4-bit cache.
func Speculative(target, draft *model.GPT, draftApprox Approx, prompts [][]int32, n, gamma int) ([][]int32, []SpecStats, error) {
	out := make([][]int32, len(prompts))
	stats := make([]SpecStats, len(prompts))
	if len(prompts) == 0 || n <= 0 {
		return out, stats, nil
	}
	if gamma < 1 {
		return nil, nil, fmt.Errorf("model: speculative gamma %d: want >= 1", gamma)
	}
	ts := engine.NewStepper(target, true)
	defer ts.Release()
	ds, err := NewStepper(draft, draftApprox)
	if err != nil {
		return nil, nil, err
	}
	defer ds.Close()
	logits, err := ts.Start(prompts, n)
	if err != nil {
		return nil, nil, fmt.Errorf("model: speculative: %w", err)
	}
	if _, err := ds.Start(prompts, n); err != nil {
		return nil, nil, fmt.Errorf("model: speculative draft: %w", err)
	}
	for i, l := range logits {
		out[i] = append(out[i], engine.Argmax(l))
	}
	for len(out[0]) < n {
		g := min(gamma, n-len(out[0])-1)
		drafts, err := propose(ds, out, g)
		if err != nil {
			return nil, nil, err
		}
		ext := cloneRows(out)
		for i := range ext {
			ext[i] = append(ext[i], drafts[i]...)
		}
		// The target scores the last kept token and every draft token.
		tl, err := ts.Resync(ext)
		if err != nil {
			return nil, nil, err
		}
		if len(tl[0]) != g+1 {
			return nil, nil, fmt.Errorf("model: speculative: target scored %d positions, want %d", len(tl[0]), g+1)
		}
		keep := g
		choice := make([][]int32, len(prompts))
		for i := range prompts {
			a := 0
			for a < g {
				choice[i] = append(choice[i], engine.Argmax(tl[i][a]))
				if choice[i][a] != drafts[i][a] {
					break
				}
				a++
			}
			if a == g {
				choice[i] = append(choice[i], engine.Argmax(tl[i][g]))
			}
			stats[i].Proposed += g
			stats[i].Accepted += a
			keep = min(keep, a)
		}
		for i := range out {
			out[i] = append(out[i], drafts[i][:keep]...)
			out[i] = append(out[i], choice[i][keep])
		}
	}
	return out, stats, nil
}

// propose brings the draft's rows to the tokens kept so far (resync) and
// proposes g more greedily (nothing when g is 0).
func propose(ds *Stepper, kept [][]int32, g int) ([][]int32, error) {
	if g == 0 {
		return make([][]int32, len(kept)), nil
	}
	dl, err := ds.Resync(kept)
	if err != nil {
		return nil, err
	}
	first := make([]int32, len(dl))
	for i, l := range dl {
		first[i] = engine.Argmax(l[len(l)-1])
	}
	// The later proposals' argmax is taken on the draft's device.
	return engine.ContinueIDs(ds.NextGreedy, first, g)
}

func cloneRows(x [][]int32) [][]int32 {
	out := make([][]int32, len(x))
	for i, r := range x {
		out[i] = append(make([]int32, 0, len(r)+8), r...)
	}
	return out
}
