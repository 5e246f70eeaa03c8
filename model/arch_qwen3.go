package model

// Qwen3: Qwen2's layout without the q/k/v biases (attention_bias, off by
// default) and with an RMSNorm over each head's queries and keys before
// the rotary embedding.
func init() {
	r := llamaRecipe
	r.QKNorm = QKNormHead
	register(&Arch{
		Name: "qwen3", ModelTypes: []string{"qwen3"}, Class: "Qwen3ForCausalLM",
		Recipe: r, Names: llamaNames,
		Validate: wholeRotary,
		FromHF: func(h *hfReader) (Config, error) {
			c, err := fromHFLlamaLike(h, 1e-6, []string{"linear"})
			if err != nil {
				return c, err
			}
			if c.Bias, err = h.boolean("attention_bias", false); err != nil {
				return c, err
			}
			return c, qwenWindows(h, &c)
		},
		ToHF: func(c Config, out map[string]any, form HFForm) {
			toHFLlamaLike(c, out, form)
			out["attention_bias"] = c.Bias
			writeQwenWindows(c, out)
		},
	})
}
