package extract

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/engine/approx"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/model"
)

// approxMethod is the approximation an attack or a decode benchmark
// decodes under, prepared once: the model's Approx (Loki's basis in it)
// and, for QuantSpec, the 4-bit draft and its gamma.
type approxMethod struct {
	approx approx.Approx
	draft  *model.GPT
	gamma  int
}

// newApproxMethod prepares cfg's approximation of g (basis: Loki's key
// basis, nil unless extract.attention = "loki").
func newApproxMethod(g *model.GPT, cfg Config, basis *approx.LokiBasis) *approxMethod {
	m := &approxMethod{approx: cfg.modelApprox(basis), gamma: cfg.QuantSpec.Gamma}
	if cfg.Speculative == SpecQuantSpec {
		m.draft = approx.QuantizedCopy(g, 4)
	}
	return m
}

// stepper is a Stepper decoding g under m's approximation, measuring it.
func (m *approxMethod) stepper(g *model.GPT) (*approx.Stepper, error) {
	return approx.NewStepper(g, m.approx)
}

// speculative is QuantSpec's greedy decoding of the prompts by n tokens:
// m's draft with a 4-bit cache proposes, g verifies.
func (m *approxMethod) speculative(g *model.GPT, prompts [][]int32, n int) ([][]int32, []approx.SpecStats, error) {
	return approx.Speculative(g, m.draft, approx.Approx{KVBits: 4}, prompts, n, m.gamma)
}

// approxAll decodes every attacked prompt under cfg's approximation,
// then exactly (the same decoding and seeds), and returns the
// approximate guesses with each prompt's runfiles.CompletionApprox (nil
// for prompts not attacked), its best guess compared with exact
// decoding's. basis is Loki's key basis (nil unless extract.attention =
// "loki").
func approxAll(ctx context.Context, g *model.GPT, cfg Config, prompts []Prompt, basis *approx.LokiBasis) ([][]Guess, []*runfiles.CompletionApprox, error) {
	exactCfg := cfg
	exactCfg.KVBits, exactCfg.Attention, exactCfg.Speculative = 16, approx.AttnExact, SpecNone
	exact, _, err := decodeAll(ctx, g, exactCfg, prompts, true, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("exact decoding: %w", err)
	}
	gs, ms, err := decodeAll(ctx, g, cfg, prompts, true, newApproxMethod(g, cfg, basis))
	if err != nil {
		return nil, nil, err
	}
	for i, a := range ms {
		if a != nil {
			a.ExactAgree = agreeing(gs[i][0].IDs, exact[i][0].IDs)
		}
	}
	return gs, ms, nil
}

// agreeing counts the leading tokens a and b share.
func agreeing(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// generateFor decodes every attacked prompt's guesses exactly
// (decodeAll), or through approxAll when cfg approximates or names
// extract.approximation, even "exact", so that a sweep's exact point is
// measured like the others (ms is then every row's metrics, nil for rows
// not attacked).
func generateFor(ctx context.Context, g *model.GPT, cfg Config, ckpt string, ds *data.Dataset, prompts []Prompt, window int) (gs [][]Guess, ms []*runfiles.CompletionApprox, err error) {
	if !cfg.approximate() && cfg.Approximation == "" {
		return decodeAll(ctx, g, cfg, prompts, true, nil)
	}
	var basis *approx.LokiBasis
	if cfg.Attention == approx.AttnLoki {
		if err := cfg.CheckHeadDim(g.Config().HeadDim); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		// Checked first: the basis is calibrated and saved beside the
		// checkpoint, work a bad rank would waste.
		if basis, err = lokiBasis(g, ckpt, ds, cfg, window); err != nil {
			return nil, nil, err
		}
	}
	slog.Info("extract: approximate decoding", "method", cfg.approxName())
	return approxAll(ctx, g, cfg, prompts, basis)
}
