package model

import "fmt"

// GPT-2 (GPT2LMHeadModel): learned position embeddings, LayerNorm with
// bias before each branch, q|k|v in one Conv1D projection (weights stored
// [in, out]), a tanh-GELU MLP, biases everywhere, the head tied to the
// embedding.
var gpt2Names = Names{
	Embed: "transformer.wte", Positions: "transformer.wpe", FinalNorm: "transformer.ln_f", Head: "lm_head",
	Layer:    "transformer.h.%d.",
	AttnNorm: "ln_1", QKV: "attn.c_attn", Out: "attn.c_proj",
	MLPNorm: "ln_2", Up: "mlp.c_fc", Down: "mlp.c_proj",
}

func init() {
	register(&Arch{
		Name: "gpt2", ModelTypes: []string{"gpt2"}, Class: "GPT2LMHeadModel",
		Recipe: Recipe{Norm: NormLayer, PreNorm: true, QKV: QKVFused, MLP: MLPPlain, Act: ActGELUTanh,
			Positions: PosLearned, Conv1D: true, OutBias: BiasAlways, MLPBias: true},
		Names:    gpt2Names,
		Defaults: func(c *Config) { c.Bias = true },
		Validate: learnedPositions,
		FromHF: func(h *hfReader) (Config, error) {
			var c Config
			err := h.ints(map[string]*int{"vocab_size": &c.Vocab, "n_embd": &c.Dim, "n_inner": &c.FFN,
				"n_layer": &c.Layers, "n_head": &c.Heads, "n_positions": &c.Context},
				map[string]int{"n_inner": 0, "n_positions": 1024})
			if err != nil {
				return c, err
			}
			h.set("n_ctx") // old configs' copy of n_positions
			if err := h.activation("activation_function", "gelu_new", "gelu_new", "gelu_pytorch_tanh"); err != nil {
				return c, err
			}
			if c.NormEps, err = h.positive("layer_norm_epsilon", 1e-5); err != nil {
				return c, err
			}
			for _, r := range []struct{ key, why, ok string }{
				{"scale_attn_weights", "memo scales attention scores by 1/sqrt(head_dim)", "true"},
				{"scale_attn_by_inverse_layer_idx", "memo does not scale attention by layer", "false"},
				{"add_cross_attention", "memo builds decoder-only models", "false"},
			} {
				if err := h.refuse(r.key, r.why, r.ok); err != nil {
					return c, err
				}
			}
			// It only changes float16 rounding: memo computes in float32.
			h.set("reorder_and_upcast_attn")
			return c, h.tied(&c, true)
		},
		ToHF: func(c Config, out map[string]any, _ HFForm) {
			for k, v := range map[string]int{"vocab_size": c.Vocab, "n_embd": c.Dim, "n_inner": c.FFN,
				"n_layer": c.Layers, "n_head": c.Heads, "n_positions": c.Context} {
				out[k] = v
			}
			out["activation_function"] = "gelu_new"
			out["layer_norm_epsilon"] = c.NormEps
			out["scale_attn_weights"] = true
			out["scale_attn_by_inverse_layer_idx"] = false
		},
	})
}

// learnedPositions refuses what only rotary families have.
func learnedPositions(c Config) error {
	if c.RopeScaling != "" || c.LocalRopeTheta != 0 || c.RotaryPct != 1 {
		return fmt.Errorf("model.rope_scaling, local_rope_theta, rotary_pct: arch %s has learned positions, no rotary embedding", c.Arch)
	}
	if c.KVHeads != c.Heads {
		return fmt.Errorf("model.kv_heads = %d: arch %s has one key/value head per query head (%d)", c.KVHeads, c.Arch, c.Heads)
	}
	return wholeRotary(c)
}
