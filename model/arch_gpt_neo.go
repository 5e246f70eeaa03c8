package model

import (
	"encoding/json"
	"fmt"
	"strings"
)

// GPT-Neo, the model of the extraction benchmarks (Carlini et al. 2022):
// GPT-2's blocks with separate q/k/v projections without biases,
// attention scores not scaled by 1/sqrt(head_dim), and local layers that
// attend only their window_size most recent positions.
func init() {
	n := gpt2Names
	n.QKV, n.Q, n.K, n.V, n.Out = "", "attn.attention.q_proj", "attn.attention.k_proj", "attn.attention.v_proj", "attn.attention.out_proj"
	register(&Arch{
		Name: "gpt_neo", ModelTypes: []string{"gpt_neo"}, Class: "GPTNeoForCausalLM",
		Recipe: Recipe{Norm: NormLayer, PreNorm: true, QKV: QKVSeparate, MLP: MLPPlain, Act: ActGELUTanh,
			Positions: PosLearned, Unscaled: true, OutBias: BiasAlways, MLPBias: true},
		Names:    n,
		Validate: learnedPositions,
		FromHF: func(h *hfReader) (Config, error) {
			var c Config
			err := h.ints(map[string]*int{"vocab_size": &c.Vocab, "hidden_size": &c.Dim, "intermediate_size": &c.FFN,
				"num_layers": &c.Layers, "num_heads": &c.Heads, "max_position_embeddings": &c.Context},
				map[string]int{"intermediate_size": 0, "max_position_embeddings": 2048})
			if err != nil {
				return c, err
			}
			if err := h.activation("activation_function", "gelu_new", "gelu_new", "gelu_pytorch_tanh"); err != nil {
				return c, err
			}
			if c.NormEps, err = h.positive("layer_norm_epsilon", 1e-5); err != nil {
				return c, err
			}
			// attention_layers is attention_types written out per layer.
			if err := h.layerTypes(&c, "attention_layers"); err != nil {
				return c, err
			}
			if err := neoAttentionTypes(h, &c); err != nil {
				return c, err
			}
			if !h.set("attention_layers") && !h.set("attention_types") {
				// transformers' default, [[["global", "local"], 12]], which
				// it refuses for any depth but 24; memo made every layer
				// local.
				if c.Layers != 24 {
					return c, fmt.Errorf("config.json names neither attention_types nor attention_layers: transformers' default alternates global and local over 24 layers, and this model has %d", c.Layers)
				}
				kinds := make([]string, c.Layers)
				for i := range kinds {
					kinds[i] = []string{"full", "sliding"}[i%2]
				}
				c.LayerTypes = strings.Join(kinds, ",")
			}
			if c.SlidingWindow, err = h.integer("window_size", 256); err != nil {
				return c, err
			}
			return c, h.tied(&c, true)
		},
		ToHF: func(c Config, out map[string]any, _ HFForm) {
			for k, v := range map[string]int{"vocab_size": c.Vocab, "hidden_size": c.Dim, "intermediate_size": c.FFN,
				"num_layers": c.Layers, "num_heads": c.Heads, "max_position_embeddings": c.Context, "window_size": c.SlidingWindow} {
				out[k] = v
			}
			out["activation_function"] = "gelu_new"
			out["layer_norm_epsilon"] = c.NormEps
			writeLayerTypes(c, out, "attention_layers", "global", "local")
			types := out["attention_layers"].([]string)
			pairs := make([]any, len(types))
			for i, t := range types {
				pairs[i] = []any{[]string{t}, 1}
			}
			out["attention_types"] = pairs
		},
	})
}

// neoAttentionTypes expands attention_types, [[["global", "local"], 12]],
// into c.LayerTypes when attention_layers did not give them.
func neoAttentionTypes(h *hfReader, c *Config) error {
	if !h.set("attention_types") || c.LayerTypes != "" {
		return nil
	}
	var groups [][2]json.RawMessage
	bad := fmt.Errorf("config.json attention_types = %s: want [[[kinds...], repeats], ...]", h.text("attention_types"))
	if err := json.Unmarshal(h.raw["attention_types"], &groups); err != nil {
		return bad
	}
	var types []string
	for gi, g := range groups {
		var kinds []string
		var n int
		if json.Unmarshal(g[0], &kinds) != nil || json.Unmarshal(g[1], &n) != nil || n < 0 {
			return bad
		}
		// Bound the total before expanding: each group's repeat count is
		// small, but many groups of long lists would add up to billions.
		if n > maxHFLayers || len(types)+n*len(kinds) > maxHFLayers {
			return fmt.Errorf("config.json attention_types: group %d takes the layers past %d, the most memo reads", gi, maxHFLayers)
		}
		for i := 0; i < n; i++ {
			for _, k := range kinds {
				switch k {
				case "global":
					types = append(types, "full")
				case "local":
					types = append(types, "sliding")
				default:
					return fmt.Errorf("config.json attention_types: kind %q; want global or local", k)
				}
			}
		}
	}
	c.LayerTypes = strings.Join(types, ",")
	return nil
}
