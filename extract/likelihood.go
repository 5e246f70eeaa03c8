package extract

import (
	"context"
	"fmt"
	"math"
	"runtime"

	"github.com/memo-research/memo/data"
)

// WindowLikelihood is a model's log-likelihood of one document's attack
// window: the sum and the mean of log p(token | earlier tokens) over the
// NTokens predicted tokens (the window less its first token). Mean is NaN
// for a window of one token.
type WindowLikelihood struct {
	Sum, Mean float64
	NTokens   int
}

// WindowLikelihoods loads the model of checkpointDir (as Run does: a run
// directory, checkpoints/ or a checkpoint) and returns each document's
// WindowLikelihood over the same window Run's membership losses take: the
// document's first AttackWindow tokens. These are the signals of the
// calibrated attacks, for the attacked model and its reference models
// alike. cfg gives the device, precision and batch size; the checkpoint
// must share ds's tokenizer.
func WindowLikelihoods(ctx context.Context, cfg Config, checkpointDir string, ds *data.Dataset, docs []data.Doc, label string) ([]WindowLikelihood, error) {
	cfg, err := cfg.Resolved()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g, ckpt, err := loadModel(checkpointDir, cfg.Device, cfg.Precision)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	defer g.Release()
	if err := sameTokenizer(ds, ckpt); err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	mc := g.Config()
	window, err := attackWindow(ckpt, mc.Context)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	prompts := BuildPrompts(cfg, docs, window)
	for _, p := range prompts {
		for _, id := range p.Window {
			if int(id) >= mc.Vocab {
				return nil, fmt.Errorf("%s: token %d of document %d is outside the vocabulary of %d of %s: a different tokenizer", label, id, p.Doc.ID, mc.Vocab, ckpt)
			}
		}
	}
	batch := cfg.BatchSize
	if batch == 0 {
		avail, maxBatch := batchMemory(g.Device())
		batch = AutoBatch(mc, g.WeightBytes(), window, avail, maxBatch)
	}
	losses, err := windowLosses(ctx, g, prompts, batch, label)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	out := make([]WindowLikelihood, len(losses))
	for i, ls := range losses {
		var s float64
		for _, l := range ls {
			s -= float64(l)
		}
		out[i] = WindowLikelihood{Sum: s, Mean: math.NaN(), NTokens: len(ls)}
		if len(ls) > 0 {
			out[i].Mean = s / float64(len(ls))
		}
	}
	return out, nil
}
