package dpaccount

import "math"

// Accountant keeps the history of a training run's noised steps, as
// Opacus's RDPAccountant does: consecutive steps with the same sampling
// rate and noise multiplier merge into one phase, so a run of a million
// identical steps is one entry. It is plain data (a slice of Phase), so a
// checkpoint stores it as JSON and a resumed run reports the ε the
// uninterrupted run would have.
type Accountant struct {
	History []Phase `json:"history"`
}

// Step records one step of sampling rate q and noise multiplier sigma.
func (a *Accountant) Step(q, sigma float64) {
	if n := len(a.History); n > 0 && a.History[n-1].SampleRate == q && a.History[n-1].Noise == sigma {
		a.History[n-1].Steps++
		return
	}
	a.History = append(a.History, Phase{SampleRate: q, Noise: sigma, Steps: 1})
}

// Steps is the number of steps recorded.
func (a *Accountant) Steps() int64 {
	var n int64
	for _, p := range a.History {
		n += p.Steps
	}
	return n
}

// Epsilon is the ε spent so far at delta (0 before any step, +Inf if a
// step had no noise), at the default orders.
func (a *Accountant) Epsilon(delta float64) (float64, error) {
	if len(a.History) == 0 {
		return 0, nil
	}
	for _, p := range a.History {
		if p.Noise == 0 {
			return math.Inf(1), nil
		}
	}
	eps, _, err := Epsilon(a.History, delta, nil)
	return eps, err
}
