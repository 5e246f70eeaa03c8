package model

// OLMo (v1): Llama's layout with LayerNorm that has no parameters (eps
// 1e-5) and optionally queries, keys and values clamped to ±clip_qkv.
func init() {
	r := llamaRecipe
	r.Norm = NormLayerPlain
	register(&Arch{
		Name: "olmo", ModelTypes: []string{"olmo"}, Class: "OlmoForCausalLM",
		Recipe: r, Names: llamaNames,
		Validate: wholeRotary,
		FromHF: func(h *hfReader) (Config, error) {
			var c Config
			if err := llamaSizes(h, &c); err != nil {
				return c, err
			}
			if err := h.activation("hidden_act", "silu", "silu"); err != nil {
				return c, err
			}
			c.NormEps = 1e-5 // OlmoLayerNorm's, not configurable
			var err error
			if c.QKVClip, err = h.num("clip_qkv", 0); err != nil {
				return c, err
			}
			if c.Bias, err = h.boolean("attention_bias", false); err != nil {
				return c, err
			}
			if err := h.tied(&c, false); err != nil {
				return c, err
			}
			return c, h.rope(&c, ropeOptions{theta: 10000, scaling: []string{"linear"}})
		},
		ToHF: func(c Config, out map[string]any, form HFForm) {
			writeLlamaSizes(c, out)
			out["hidden_act"] = "silu"
			out["attention_bias"] = c.Bias
			out["clip_qkv"] = nil
			if c.QKVClip > 0 {
				out["clip_qkv"] = c.QKVClip
			}
			writeRope(c, out, form, false)
		},
	})
}
