package model

// OLMo 2: RMSNorm after each branch instead of before it
// (x + norm(attn(x))), and RMSNorm over the whole query and key
// projections (all heads at once) before the rotary embedding.
func init() {
	register(&Arch{
		Name: "olmo2", ModelTypes: []string{"olmo2"}, Class: "Olmo2ForCausalLM",
		Recipe: Recipe{Norm: NormRMS, PostNorm: true, QKV: QKVSeparate, QKNorm: QKNormFull, MLP: MLPGated, Act: ActSiLU},
		Names: Names{
			Embed: "model.embed_tokens", FinalNorm: "model.norm", Head: "lm_head",
			Layer: "model.layers.%d.",
			Q:     "self_attn.q_proj", K: "self_attn.k_proj", V: "self_attn.v_proj",
			QNorm: "self_attn.q_norm", KNorm: "self_attn.k_norm", Out: "self_attn.o_proj",
			AttnPostNorm: "post_attention_layernorm",
			Gate:         "mlp.gate_proj", Up: "mlp.up_proj", Down: "mlp.down_proj",
			MLPPostNorm: "post_feedforward_layernorm",
		},
		Validate: wholeRotary,
		FromHF: func(h *hfReader) (Config, error) {
			c, err := fromHFLlamaLike(h, 1e-5, []string{"linear"})
			if err != nil {
				return c, err
			}
			c.Bias, err = h.boolean("attention_bias", false)
			return c, err
		},
		ToHF: func(c Config, out map[string]any, form HFForm) {
			toHFLlamaLike(c, out, form)
			out["attention_bias"] = c.Bias
		},
	})
}
