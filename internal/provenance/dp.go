package provenance

import (
	"encoding/json"
	"fmt"
	"math"
)

// DP is the key of a DP-SGD checkpoint's privacy record (a DPRecord as
// JSON), from its state.json; absent for a checkpoint trained without
// DP-SGD.
const DP = "memo.dp"

// DPRecord is what a DP-SGD run spent by a checkpoint: the RDP
// accountant's ε at δ after Steps steps of Poisson sampling rate
// SampleRate and noise multiplier NoiseMultiplier, each row's gradient
// clipped to MaxGradNorm, over Rows training rows. It is the one schema of
// the checkpoint's "dp" entry (which adds the accountant's history),
// completions.arrow's DP metadata, summary.json's and manifest.json's "dp"
// and the report's DP columns.
type DPRecord struct {
	// Epsilon is nil for σ = 0 (clipping without noise: ε = ∞, which JSON
	// cannot hold).
	Epsilon         *float64 `json:"epsilon"`
	Delta           float64  `json:"delta"`
	NoiseMultiplier float64  `json:"noise_multiplier"`
	SampleRate      float64  `json:"sample_rate"`
	MaxGradNorm     float64  `json:"max_grad_norm"`
	Steps           int64    `json:"steps"`
	Rows            int64    `json:"rows"`
}

// Eps is ε, +Inf when the record has none.
func (r DPRecord) Eps() float64 {
	if r.Epsilon == nil {
		return math.Inf(1)
	}
	return *r.Epsilon
}

// SetEps sets ε (+Inf: none).
func (r *DPRecord) SetEps(eps float64) {
	r.Epsilon = nil
	if !math.IsInf(eps, 1) {
		r.Epsilon = &eps
	}
}

// ParseDP reads a DPRecord from JSON that holds one (other keys, such as
// the checkpoint's accountant, are ignored); nil for empty input.
func ParseDP(raw []byte) (*DPRecord, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var r DPRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("DP-SGD record: %w", err)
	}
	return &r, nil
}
