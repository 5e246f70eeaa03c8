package model

// Mistral: Llama's blocks, every layer attending its sliding_window most
// recent positions when the window is set.
func init() {
	register(&Arch{
		Name: "mistral", ModelTypes: []string{"mistral"}, Class: "MistralForCausalLM",
		Recipe: llamaRecipe, Names: llamaNames,
		Validate: wholeRotary,
		FromHF: func(h *hfReader) (Config, error) {
			c, err := fromHFLlamaLike(h, 1e-6, nil)
			if err != nil {
				return c, err
			}
			c.SlidingWindow, err = h.integer("sliding_window", absentDefault(h, "sliding_window", 4096))
			return c, err
		},
		ToHF: func(c Config, out map[string]any, form HFForm) {
			toHFLlamaLike(c, out, form)
			out["sliding_window"] = nil
			if c.SlidingWindow > 0 {
				out["sliding_window"] = c.SlidingWindow
			}
		},
	})
}
