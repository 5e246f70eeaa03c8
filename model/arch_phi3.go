package model

// Phi-3: Llama's blocks with q|k|v in one projection (qkv_proj) and gate|up
// in another (gate_up_proj, gate rows first), optional partial rotary and
// an optional sliding window on every layer.
func init() {
	r := llamaRecipe
	r.QKV, r.MLP = QKVFused, MLPGatedFused
	n := llamaNames
	n.Q, n.K, n.V, n.QKV = "", "", "", "self_attn.qkv_proj"
	n.Gate, n.Up, n.GateUp = "", "", "mlp.gate_up_proj"
	register(&Arch{
		Name: "phi3", ModelTypes: []string{"phi3"}, Class: "Phi3ForCausalLM",
		Recipe: r, Names: n,
		FromHF: func(h *hfReader) (Config, error) {
			var c Config
			if err := llamaSizes(h, &c); err != nil {
				return c, err
			}
			if err := h.activation("hidden_act", "silu", "silu"); err != nil {
				return c, err
			}
			var err error
			if c.NormEps, err = h.positive("rms_norm_eps", 1e-5); err != nil {
				return c, err
			}
			if err := h.tied(&c, false); err != nil {
				return c, err
			}
			// Phi-3's projections never have biases in transformers, which
			// Phi-3-mini-4k-instruct and Phi-4 say as false.
			if err := h.refuse("attention_bias", "transformers' Phi-3 projections have no biases", "false"); err != nil {
				return c, err
			}
			if err := h.rope(&c, ropeOptions{theta: 10000, partial: true, scaling: []string{"linear"}}); err != nil {
				return c, err
			}
			// Only longrope reads it, which memo refuses above.
			h.set("original_max_position_embeddings")
			c.SlidingWindow, err = h.integer("sliding_window", 0)
			return c, err
		},
		ToHF: func(c Config, out map[string]any, form HFForm) {
			writeLlamaSizes(c, out)
			out["hidden_act"] = "silu"
			out["rms_norm_eps"] = c.NormEps
			out["original_max_position_embeddings"] = c.Context
			out["sliding_window"] = nil
			if c.SlidingWindow > 0 {
				out["sliding_window"] = c.SlidingWindow
			}
			writeRope(c, out, form, true)
		},
	})
}
