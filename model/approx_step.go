package model

import "fmt"

// NewApproxStepper decodes with g (through the KV cache) under the
// approximations of a and measures them (ApproxStats); with a exact its
// tokens and logits are NewStepper(g, true)'s.
func NewApproxStepper(g *GPT, a Approx) (*Stepper, error) {
	if err := a.Check(g.cfg); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	return &Stepper{g: g, useCache: true, approx: &a}, nil
}

// ApproxStats returns each row's measurements of the last Start and the
// steps after it (nil when decoding exactly).
func (s *Stepper) ApproxStats() []ApproxStats {
	if s.st == nil {
		return nil
	}
	return s.st.stats()
}
