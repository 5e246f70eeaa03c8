package extract

import (
	"encoding/json"
	"testing"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/provenance"
)

// A DP-SGD checkpoint's privacy record goes into completions.arrow's
// metadata without the accountant's history; other checkpoints add no key.
func TestDPProvenance(t *testing.T) {
	meta := map[string]string{}
	if err := dpProvenance(meta, checkpoint.State{}); err != nil || len(meta) != 0 {
		t.Fatalf("checkpoint without DP-SGD: meta %v, err %v", meta, err)
	}
	st := checkpoint.State{DP: json.RawMessage(`{"epsilon":2.5,"delta":1e-05,"noise_multiplier":1.1,"sample_rate":0.02,"max_grad_norm":1,"steps":48,"rows":384,"accountant":{"history":[{"sample_rate":0.02,"noise":1.1,"steps":48}]}}`)}
	if err := dpProvenance(meta, st); err != nil {
		t.Fatal(err)
	}
	r, err := provenance.ParseDP([]byte(meta[provenance.DP]))
	if err != nil || r == nil || r.Eps() != 2.5 || r.Steps != 48 || r.Rows != 384 || r.NoiseMultiplier != 1.1 {
		t.Fatalf("recorded %q: %+v, %v", meta[provenance.DP], r, err)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(meta[provenance.DP]), &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["accountant"]; ok {
		t.Errorf("the accountant's history leaked into the metadata: %s", meta[provenance.DP])
	}
	if err := dpProvenance(meta, checkpoint.State{DP: json.RawMessage(`{eps`)}); err == nil {
		t.Error("a corrupt dp entry gave no error")
	}
}
