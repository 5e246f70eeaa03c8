package approx

import (
	"fmt"

	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/model"
)

// Stepper is an engine.Stepper decoding under an approximation, which it
// measures (Stats).
type Stepper struct {
	*engine.Stepper
	st *state // the current cache's
}

// NewStepper decodes with g (through the KV cache) under the
// approximations of a and measures them; with a exact its tokens are
// engine.NewStepper(g, true)'s (and its logits too, but for the
// decode-step kernel exact decoding takes and measured attention does
// not: torchx.SetKernels).
func NewStepper(g *model.GPT, a Approx) (*Stepper, error) {
	if err := a.Check(g.Config()); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	s := &Stepper{}
	s.Stepper = engine.NewStepperUnder(g, func(rows int) engine.Approximation {
		s.st = newState(a, g, rows)
		return s.st
	})
	return s, nil
}

// Stats returns each row's measurements of the last Start and the steps
// after it.
func (s *Stepper) Stats() []Stats {
	if s.st == nil {
		return nil
	}
	return s.st.stats()
}
