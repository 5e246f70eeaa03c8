package extract

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/internal/progress"
	"github.com/memo-research/memo/model"
)

// RecallPrefix is the non-member text ReCaLL conditions on: the opening
// tokens of the first control document (lowest doc_id), recorded in
// completions.arrow's metadata under MetaRecallPrefix.
type RecallPrefix struct {
	DocID int64   `json:"doc_id"`
	Title string  `json:"title"`
	IDs   []int32 `json:"ids"`
}

// MetaRecallPrefix is the completions.arrow metadata key of the ReCaLL
// prefix (a RecallPrefix as JSON); absent when ReCaLL was off.
const MetaRecallPrefix = "memo.recall_prefix"

// recallPrefix picks the ReCaLL prefix: n tokens from the start of the
// first control document long enough to give them. ok is false when the
// dataset has none.
func recallPrefix(ds *data.Dataset, n int) (RecallPrefix, bool, error) {
	docs, err := ds.Docs("control")
	if err != nil {
		return RecallPrefix{}, false, err
	}
	for _, d := range docs {
		if len(d.IDs) >= n {
			return RecallPrefix{DocID: d.ID, Title: d.Title, IDs: d.IDs[:n]}, true, nil
		}
	}
	return RecallPrefix{}, false, nil
}

func (p RecallPrefix) json() string {
	b, _ := json.Marshal(p) // ints and strings always encode
	return string(b)
}

// ReCaLL is Xie et al. 2024's relative conditional log-likelihood
// LL(x | P) / LL(x) of a document x given a non-member prefix P, from the
// per-token NLLs of the same tokens of x with and without P before them
// (the ratio of sums, as both log-likelihoods are negative it is
// positive). Members lose more likelihood when put after text they were
// not trained with: higher means member. NaN when undefined.
func ReCaLL(condNLL, nll []float32) float64 {
	if len(condNLL) == 0 || len(condNLL) != len(nll) {
		return math.NaN()
	}
	var c, u float64
	for i := range nll {
		c += float64(condNLL[i])
		u += float64(nll[i])
	}
	if u == 0 {
		return math.NaN()
	}
	return c / u
}

// recallScores computes every prompt's ReCaLL score from its window's
// losses: the window is cut to fit after the prefix within limit tokens
// (the attack window), and both log-likelihoods cover the same tokens of
// the cut, all but its first. The document that gave the prefix gets NaN:
// conditioned on its own opening, it is no non-member test.
func recallScores(ctx context.Context, g *model.GPT, prompts []Prompt, losses [][]float32, prefix RecallPrefix, limit, batch int) ([]float64, error) {
	cond := make([]Prompt, len(prompts))
	keep := make([]int, len(prompts))
	for i, p := range prompts {
		keep[i] = min(len(p.Window), limit-len(prefix.IDs))
		if keep[i] < 2 {
			continue
		}
		w := append(append(make([]int32, 0, len(prefix.IDs)+keep[i]), prefix.IDs...), p.Window[:keep[i]]...)
		cond[i] = Prompt{Window: w}
	}
	cl, err := windowLosses(ctx, g, cond, batch, "extract: ReCaLL")
	if err != nil {
		return nil, fmt.Errorf("recall: %w", err)
	}
	out := make([]float64, len(prompts))
	for i, p := range prompts {
		out[i] = math.NaN()
		if keep[i] < 2 || p.Doc.ID == prefix.DocID && p.Doc.Split == "control" {
			continue
		}
		// cl[i][j] predicts w[j+1]: x's tokens 1..keep−1 sit at w[len(P)+1 …].
		out[i] = ReCaLL(cl[i][len(prefix.IDs):], losses[i][:keep[i]-1])
	}
	return out, nil
}

// recallFor is recallScores with the configured prefix, or NaN for every
// prompt when ReCaLL is off or the dataset has no control document long
// enough (prefix is then nil).
func recallFor(ctx context.Context, g *model.GPT, cfg Config, ds *data.Dataset, prompts []Prompt, losses [][]float32, window int) ([]float64, *RecallPrefix, error) {
	nan := func() []float64 {
		out := make([]float64, len(prompts))
		for i := range out {
			out[i] = math.NaN()
		}
		return out
	}
	n := min(cfg.RecallPrefix, window/2)
	if n < 1 {
		return nan(), nil, nil
	}
	if n < cfg.RecallPrefix {
		slog.Info("extract: ReCaLL prefix cut to half the attack window", "recall_prefix", cfg.RecallPrefix, "used", n, "window", window)
	}
	prefix, ok, err := recallPrefix(ds, n)
	if err != nil {
		return nil, nil, fmt.Errorf("recall prefix: %w", err)
	}
	if !ok {
		slog.Warn("extract: no control document has extract.recall_prefix tokens; recall is NaN", "recall_prefix", n)
		return nan(), nil, nil
	}
	r, err := recallScores(ctx, g, prompts, losses, prefix, window, cfg.BatchSize)
	if err != nil {
		return nil, nil, err
	}
	return r, &prefix, nil
}

// gradNorms is model.GradNorm of every prompt's window, or NaN for all
// when extract.grad_norm is off. It needs gradients: the caller's OS
// thread must have grad mode on (Run locks the thread).
func gradNorms(ctx context.Context, g *model.GPT, cfg Config, prompts []Prompt) ([]float64, error) {
	out := make([]float64, len(prompts))
	if !cfg.GradNorm {
		for i := range out {
			out[i] = math.NaN()
		}
		return out, nil
	}
	bar := progress.New("extract: gradient norms", len(prompts))
	defer bar.Done()
	for i, p := range prompts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := engine.GradNorm(g, [][]int32{p.Window})
		if err != nil {
			return nil, fmt.Errorf("gradient norm of document %d (set extract.grad_norm = false to skip): %w", p.Doc.ID, err)
		}
		out[i] = n[0]
		bar.Update(i+1, "")
	}
	return out, nil
}
