package extract

import (
	"fmt"

	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/engine/approx"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/model"
)

// benchApprox is a decode benchmark's approximation (extract.approximation's
// syntax; "" decodes exactly without measuring).
type benchApprox struct {
	m *approxMethod // nil: exact
	// exact is the exact decoding's stepper, kept from run to run as an
	// attack keeps its stepper from batch to batch (its cache, and the
	// token steps captured on it, stay).
	exact *engine.Stepper
	// bytes and accept sum the measured runs' per-row means.
	bytes, accept float64
	runs          int
}

// newBenchApprox parses name and prepares what the method needs: Loki's
// basis calibrated on the benchmark's prompts, QuantSpec's 4-bit draft.
func newBenchApprox(name string, g *model.GPT, prompts [][]int32, decoding string) (*benchApprox, error) {
	b := &benchApprox{}
	if name == "" {
		return b, nil
	}
	cfg := DefaultConfig()
	cfg.Decoding = decoding
	if err := cfg.parseApproximation(name); err != nil {
		return nil, badinput.Errorf("bench decode: --approximation: %v", err)
	}
	if err := cfg.validateApprox(); err != nil {
		return nil, badinput.Errorf("bench decode: --approximation %q: %v", name, err)
	}
	var basis *approx.LokiBasis
	if cfg.Attention == approx.AttnLoki {
		var err error
		if basis, err = approx.CalibrateLoki(g, prompts); err != nil {
			return nil, fmt.Errorf("bench decode: %w", err)
		}
	}
	b.m = newApproxMethod(g, cfg, basis)
	return b, nil
}

// stepper is the Stepper of one run.
func (b *benchApprox) stepper(g *model.GPT) (stepper, error) {
	if b.m == nil {
		if b.exact == nil {
			b.exact = engine.NewStepper(g, true)
		}
		return b.exact, nil
	}
	return b.m.stepper(g)
}

// graphsCaptured is how many token steps the exact stepper holds as CUDA
// graphs.
func (b *benchApprox) graphsCaptured() int {
	if b.exact == nil {
		return 0
	}
	return b.exact.GraphsCaptured()
}

// close frees the exact stepper's cache and the steps captured on it.
func (b *benchApprox) close() {
	if b.exact != nil {
		b.exact.Release()
	}
}

// speculative runs QuantSpec when that is the method (ok false otherwise).
func (b *benchApprox) speculative(g *model.GPT, rows [][]int32, n int) (ok bool, err error) {
	if b.m == nil || b.m.draft == nil {
		return false, nil
	}
	_, stats, err := b.m.speculative(g, rows, n)
	if err != nil {
		return true, err
	}
	var acc float64
	for _, s := range stats {
		acc += float64(s.Accepted) / float64(max(s.Proposed, 1))
	}
	b.accept += acc / float64(len(stats))
	b.runs++
	return true, nil
}

// record adds one measured run's KV bytes per token (none for exact
// decoding, which does not measure).
func (b *benchApprox) record(lm stepper) {
	a, ok := lm.(*approx.Stepper)
	if !ok {
		return
	}
	st := a.Stats()
	if len(st) == 0 {
		return
	}
	var sum float64
	for _, s := range st {
		sum += s.KVBytes
	}
	b.bytes += sum / float64(len(st))
	b.runs++
}

func (b *benchApprox) mean(sum float64) float64 {
	if b.runs == 0 {
		return 0
	}
	return sum / float64(b.runs)
}
