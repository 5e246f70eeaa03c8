package extract

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/engine/approx"
	"github.com/memo-research/memo/internal/progress"
	"github.com/memo-research/memo/internal/runfiles"
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

// decodeAll is extract's one batching loop: it decodes cfg.Samples
// continuations of every attacked prompt, each as long as its suffix,
// ranked (rankGuesses), exactly (m nil) or under m. Both results are
// indexed like prompts (nil when not attacked); ms, each prompt's
// measurements of its best-ranked guess, is nil when m is. The collector
// runs between batches, when no libtorch call is in flight.
func decodeAll(ctx context.Context, g *model.GPT, cfg Config, prompts []Prompt, useCache bool, m *approxMethod) (gs [][]Guess, ms []*runfiles.CompletionApprox, err error) {
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
	rowsPer := 1
	switch {
	case cfg.Decoding == DecodeBeam:
		rowsPer = cfg.Beams
	case samples > 1:
		rowsPer = samples
	}
	batch := max(1, cfg.BatchSize/rowsPer)
	gs = make([][]Guess, len(prompts))
	if m != nil {
		ms = make([]*runfiles.CompletionApprox, len(prompts))
	}
	dec := decoder{cfg: cfg}
	// One exact stepper for every batch: a cache holding greedy's token
	// steps captured as CUDA graphs outlives a batch (Stepper.Close), so
	// that later batches of the same shape replay them.
	exact := engine.NewStepper(g, useCache)
	defer exact.Release()
	bar := progress.New("extract: generating", len(order))
	done := 0
	for lo := 0; lo < len(order); lo += batch {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
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
		gen, rowMs, err := dec.decodeBatch(g, m, exact, pre, n, samples, rngs)
		if err != nil {
			return nil, nil, err
		}
		for k, i := range idx {
			guesses := gen[k][:samples] // beam search: its best samples beams, already ranked
			for j := range guesses {
				guesses[j].IDs = guesses[j].IDs[:len(prompts[i].Suffix)]
			}
			rankGuesses(guesses)
			gs[i] = guesses
			if rowMs != nil {
				// Row k·rowsPer+j decoded guess j (a sample, or the beam in
				// that place: beamGuesses returns its beams in row order).
				// A one-token beam search never widens the cache past one
				// row a prompt (and panicked here reading row k·rowsPer).
				row := k*rowsPer + guesses[0].Sample
				if len(rowMs) < len(idx)*rowsPer {
					row = k
				}
				r := rowMs[row]
				ms[i] = &r
			}
		}
		torchx.Collect()
		torchx.ReleaseFreeMemory()
		done += len(idx)
		bar.Update(done, "")
	}
	bar.Done()
	return gs, ms, nil
}

// decodeBatch decodes one batch of prompts by n tokens: samples guesses
// each (rows p·samples+j drawing with rngs[p·samples+j]), or the beams of
// beam search, exactly (m nil: with exact, the attack's one stepper, with
// or without the KV cache) or under m.
// rowMs holds each decoded row's measurements when m is not nil.
func (d decoder) decodeBatch(g *model.GPT, m *approxMethod, exact *engine.Stepper, pre [][]int32, n, samples int, rngs []*rand.Rand) (gen [][]Guess, rowMs []runfiles.CompletionApprox, err error) {
	unmeasured := runfiles.CompletionApprox{AttnMassKept: 1, KVBytesPerToken: math.NaN(), SpecAccept: math.NaN()}
	if m != nil && m.draft != nil { // QuantSpec: greedy, one row per prompt
		out, stats, err := m.speculative(g, pre, n)
		if err != nil {
			return nil, nil, err
		}
		gen = make([][]Guess, len(out))
		rowMs = make([]runfiles.CompletionApprox, len(out))
		for k, s := range stats {
			gen[k] = []Guess{{IDs: out[k]}}
			rowMs[k] = unmeasured
			if s.Proposed > 0 {
				rowMs[k].SpecAccept = float64(s.Accepted) / float64(s.Proposed)
			}
		}
		return gen, rowMs, nil
	}
	var lm stepper = exact
	var measured *approx.Stepper
	if m != nil {
		if measured, err = m.stepper(g); err != nil {
			return nil, nil, err
		}
		lm = measured
	}
	if d.cfg.Decoding == DecodeBeam {
		gen, err = d.beamGuesses(lm, pre, n, d.cfg.Beams)
	} else {
		gen, err = d.guesses(lm, pre, n, samples, rngs)
	}
	if err != nil || measured == nil {
		return gen, nil, err
	}
	stats := measured.Stats()
	rowMs = make([]runfiles.CompletionApprox, len(stats))
	for r, s := range stats {
		rowMs[r] = unmeasured
		if s.Steps > 0 {
			rowMs[r].AttnMassKept, rowMs[r].KVBytesPerToken = s.MassKept, s.KVBytes
		}
	}
	return gen, rowMs, nil
}

// windowLosses computes every prompt's per-token losses over its window,
// reporting progress under label.
func windowLosses(ctx context.Context, g *model.GPT, prompts []Prompt, batch int, label string) ([][]float32, error) {
	windows := make([][]int32, len(prompts))
	for i, p := range prompts {
		windows[i] = p.Window
	}
	out := make([][]float32, len(prompts))
	err := inBatches(ctx, windows, batch, label, func(idx []int, ws [][]int32) error {
		ls, err := engine.TokenNLL(g, ws)
		if err != nil {
			return err
		}
		for k, i := range idx {
			out[i] = ls[k]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// strideLosses is windowLosses for a model whose context may be shorter
// than a window: a window of more than window tokens is scored in
// overlapping windows (StrideWindows, window/2 apart), every token once,
// with at least half a context before it; a window that fits is scored
// whole, as windowLosses scores it.
func strideLosses(ctx context.Context, g *model.GPT, prompts []Prompt, window, batch int, label string) ([][]float32, error) {
	type job struct {
		prompt int
		span   Span
	}
	var jobs []job
	var windows []Prompt
	split := 0
	for i, p := range prompts {
		spans := []Span{{Start: 0, End: len(p.Window)}}
		if len(p.Window) > window {
			if window < 2 {
				return nil, fmt.Errorf("a context of %d tokens scores no window of %d", window, len(p.Window))
			}
			spans, split = StrideWindows(len(p.Window), window, window/2), split+1
		}
		for _, sp := range spans {
			jobs = append(jobs, job{prompt: i, span: sp})
			windows = append(windows, Prompt{Window: p.Window[sp.Start:sp.End]})
		}
	}
	if split > 0 {
		slog.Info(label+": windows longer than the model's context are scored in overlapping windows", "windows", split, "context", window)
	}
	losses, err := windowLosses(ctx, g, windows, batch, label)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(prompts))
	for k, j := range jobs { // in prompt order, each prompt's windows in order
		out[j.prompt] = append(out[j.prompt], losses[k][j.span.Keep:]...)
	}
	return out, nil
}
