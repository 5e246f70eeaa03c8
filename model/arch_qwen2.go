package model

// Qwen2 and Qwen2.5: Llama's blocks with biases on the q, k and v
// projections (none on the output projection), and optionally a sliding
// window on the layers from max_window_layers on.
func init() {
	r := llamaRecipe
	r.OutBias = BiasNever
	register(&Arch{
		Name: "qwen2", ModelTypes: []string{"qwen2"}, Class: "Qwen2ForCausalLM",
		Recipe: r, Names: llamaNames,
		Defaults: func(c *Config) { c.Bias = true },
		Validate: wholeRotary,
		FromHF: func(h *hfReader) (Config, error) {
			c, err := fromHFLlamaLike(h, 1e-6, []string{"linear"})
			if err != nil {
				return c, err
			}
			// Qwen2.5's files say "use_mrope": false; the multimodal
			// rotary is Qwen2-VL's, never a causal LM's.
			if err := h.refuse("use_mrope", "multimodal rotary (Qwen2-VL) is not a causal LM's", "false"); err != nil {
				return c, err
			}
			return c, qwenWindows(h, &c)
		},
		ToHF: func(c Config, out map[string]any, form HFForm) {
			toHFLlamaLike(c, out, form)
			writeQwenWindows(c, out)
		},
	})
}

// qwenWindows reads Qwen's sliding-window keys: use_sliding_window turns
// the window on for the layers that layer_types marks (transformers 5) or
// from max_window_layers on (transformers 4).
func qwenWindows(h *hfReader, c *Config) error {
	on, err := h.boolean("use_sliding_window", false)
	if err != nil {
		return err
	}
	window, err := h.integer("sliding_window", absentDefault(h, "sliding_window", 4096))
	if err != nil {
		return err
	}
	from, err := h.integer("max_window_layers", 28) // transformers' defaults
	if err != nil {
		return err
	}
	if err := h.layerTypes(c, "layer_types"); err != nil {
		return err
	}
	if !on || window == 0 {
		c.LayerTypes = "" // every layer attends the whole context
		return nil
	}
	c.SlidingWindow = window
	if c.LayerTypes == "" {
		types := make([]byte, 0, 2*c.Layers)
		for i := 0; i < c.Layers; i++ {
			if i > 0 {
				types = append(types, ',')
			}
			if i >= from {
				types = append(types, "sliding"...)
			} else {
				types = append(types, "full"...)
			}
		}
		c.LayerTypes = string(types)
	}
	return nil
}

func writeQwenWindows(c Config, out map[string]any) {
	out["use_sliding_window"] = c.SlidingWindow > 0
	out["sliding_window"] = nil
	if c.SlidingWindow > 0 {
		out["sliding_window"] = c.SlidingWindow
		writeLayerTypes(c, out, "layer_types", "full_attention", "sliding_attention")
	}
}
