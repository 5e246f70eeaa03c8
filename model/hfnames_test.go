package model

import (
	"strings"
	"testing"
)

// TestFromHFNamesTheFilesKeys: a config.json value that memo's own checks
// refuse is named by the file's key, in each family's spelling, not by the
// spec key it maps to (the probe saw "model.heads = 3" for a file holding
// num_attention_heads).
func TestFromHFNamesTheFilesKeys(t *testing.T) {
	llama := smallLlamaHF()
	gpt2 := map[string]any{"model_type": "gpt2", "vocab_size": 320, "n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 256}
	for _, tc := range []struct {
		name      string
		base      map[string]any
		key       string
		bad       any
		want, not string
	}{
		{"llama heads", llama, "num_attention_heads", 3, "num_attention_heads = 3", "model.heads"},
		{"llama kv heads", llama, "num_key_value_heads", 3, "num_key_value_heads = 3: must be > 0 and divide num_attention_heads = 4", "model."},
		{"gpt2 heads", gpt2, "n_head", 3, "n_head = 3", "model.heads"},
		{"dtype", llama, "torch_dtype", "int8", `torch_dtype = "int8"`, "model.dtype"},
		{"llama context", llama, "max_position_embeddings", 0, "max_position_embeddings = 0: must be > 0", "model."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromHF(hfConfigWith(t, tc.base, tc.key, tc.bad))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.not) {
				t.Errorf("%s = %v: %v; want it to say %q and not %q", tc.key, tc.bad, err, tc.want, tc.not)
			}
		})
	}
}
