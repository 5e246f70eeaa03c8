package model

import (
	"encoding/json"
	"fmt"
)

// GPT-NeoX (Pythia): LayerNorm with bias, one fused q|k|v projection laid
// out head by head, rotary on the first rotary_pct of each head, an
// exact-GELU MLP, biases everywhere, and by default the parallel residual
// x + attn(ln1(x)) + mlp(ln2(x)).
func init() {
	register(&Arch{
		Name: "gpt_neox", ModelTypes: []string{"gpt_neox"}, Class: "GPTNeoXForCausalLM",
		Recipe: Recipe{Norm: NormLayer, PreNorm: true, QKV: QKVPerHead, MLP: MLPPlain, Act: ActGELU,
			OutBias: BiasAlways, MLPBias: true},
		Names: Names{
			Embed: "gpt_neox.embed_in", FinalNorm: "gpt_neox.final_layer_norm", Head: "embed_out",
			Layer:    "gpt_neox.layers.%d.",
			AttnNorm: "input_layernorm", QKV: "attention.query_key_value", Out: "attention.dense",
			MLPNorm: "post_attention_layernorm", Up: "mlp.dense_h_to_4h", Down: "mlp.dense_4h_to_h",
		},
		Defaults: func(c *Config) { c.Bias = true },
		Validate: func(c Config) error {
			if c.KVHeads != c.Heads {
				return fmt.Errorf("model.kv_heads = %d: gpt_neox has one key/value head per query head (%d)", c.KVHeads, c.Heads)
			}
			return nil
		},
		FromHF: func(h *hfReader) (Config, error) {
			var c Config
			err := h.ints(map[string]*int{"vocab_size": &c.Vocab, "hidden_size": &c.Dim, "intermediate_size": &c.FFN,
				"num_hidden_layers": &c.Layers, "num_attention_heads": &c.Heads, "max_position_embeddings": &c.Context},
				map[string]int{"max_position_embeddings": 2048})
			if err != nil {
				return c, err
			}
			if err := h.activation("hidden_act", "gelu", "gelu"); err != nil {
				return c, err
			}
			// transformers 4 spells the rotary keys rotary_pct and
			// rotary_emb_base; 5 puts them in rope_parameters.
			pct, err := h.positive("rotary_pct", 0.25) // GPTNeoXConfig's default
			if err != nil {
				return c, err
			}
			base, err := h.positive("rotary_emb_base", 10000)
			if err != nil {
				return c, err
			}
			if err := h.rope(&c, ropeOptions{theta: base, partial: true, scaling: []string{"linear"}}); err != nil {
				return c, err
			}
			if !h.set("partial_rotary_factor") && !hasRopeKey(h, "partial_rotary_factor") {
				c.RotaryPct = pct
			}
			if c.NormEps, err = h.positive("layer_norm_eps", 1e-5); err != nil {
				return c, err
			}
			if c.ParallelResidual, err = h.boolean("use_parallel_residual", true); err != nil {
				return c, err
			}
			if err := h.refuse("attention_bias", "memo's gpt_neox attention always has biases", "true"); err != nil {
				return c, err
			}
			return c, h.tied(&c, false)
		},
		ToHF: func(c Config, out map[string]any, form HFForm) {
			for k, v := range map[string]int{"vocab_size": c.Vocab, "hidden_size": c.Dim, "intermediate_size": c.FFN,
				"num_hidden_layers": c.Layers, "num_attention_heads": c.Heads, "max_position_embeddings": c.Context} {
				out[k] = v
			}
			out["hidden_act"] = "gelu"
			out["layer_norm_eps"] = c.NormEps
			out["use_parallel_residual"] = c.ParallelResidual
			out["attention_bias"] = true
			if form == HFForm4 {
				out["rotary_pct"] = c.RotaryPct
				out["rotary_emb_base"] = c.RopeTheta
				if c.RopeScaling != "" {
					writeRope(c, out, form, false)
					delete(out, "rope_theta")
				}
				return
			}
			writeRope(c, out, form, true)
		},
	})
}

// hasRopeKey reports whether rope_parameters holds key.
func hasRopeKey(h *hfReader, key string) bool {
	msg, ok := h.raw["rope_parameters"]
	if !ok {
		return false
	}
	var rp map[string]json.RawMessage
	if json.Unmarshal(msg, &rp) != nil {
		return false
	}
	_, ok = rp[key]
	return ok
}
