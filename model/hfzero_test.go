package model

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestFromHFRefusesZeroDefaults: a number Resolve would take for "unset"
// and replace by a default (a zero rope base, norm epsilon or rotary
// fraction, or any rope-scaling number) is refused naming the key, in
// each family that reads it; the same config with the number positive
// reads.
func TestFromHFRefusesZeroDefaults(t *testing.T) {
	llama := smallLlamaHF()
	neox := map[string]any{"model_type": "gpt_neox", "vocab_size": 320, "hidden_size": 64, "intermediate_size": 256,
		"num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 256}
	for _, tc := range []struct {
		name string
		base map[string]any
		key  string
		bad  any
		good any
	}{
		{"llama rope_theta", llama, "rope_theta", 0, 500000},
		{"llama rms_norm_eps", llama, "rms_norm_eps", 0, 1e-6},
		{"llama negative rope_theta", llama, "rope_theta", -1, 10000},
		{"llama rope_scaling factor", llama, "rope_scaling", map[string]any{"rope_type": "linear", "factor": 0}, map[string]any{"rope_type": "linear", "factor": 2}},
		{"neox rotary_pct", neox, "rotary_pct", 0, 0.5},
		{"neox rotary_emb_base", neox, "rotary_emb_base", 0, 10000},
		{"neox layer_norm_eps", neox, "layer_norm_eps", 0, 1e-5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := FromHF(hfConfigWith(t, tc.base, tc.key, tc.bad)); err == nil || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), "positive") {
				t.Errorf("%s = %v: err %v; want a refusal naming the key", tc.key, tc.bad, err)
			}
			if _, err := FromHF(hfConfigWith(t, tc.base, tc.key, tc.good)); err != nil {
				t.Errorf("%s = %v: %v", tc.key, tc.good, err)
			}
		})
	}
}

// smallLlamaHF is a small Llama's config.json keys.
func smallLlamaHF() map[string]any {
	return map[string]any{"model_type": "llama", "vocab_size": 320, "hidden_size": 64, "intermediate_size": 176,
		"num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 256}
}

// hfConfigWith is base as config.json with key set to v.
func hfConfigWith(t *testing.T, base map[string]any, key string, v any) []byte {
	t.Helper()
	c := map[string]any{}
	for k, x := range base {
		c[k] = x
	}
	c[key] = v
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
