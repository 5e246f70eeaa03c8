package model

import "fmt"

// Llama (Llama 2/3/3.1/3.2, TinyLlama, SmolLM) and memo's own decoder:
// RMSNorm before each branch, rotary attention over grouped-query heads
// with optional biases (attention_bias), a SwiGLU MLP.
var llamaNames = Names{
	Embed: "model.embed_tokens", FinalNorm: "model.norm", Head: "lm_head",
	Layer:    "model.layers.%d.",
	AttnNorm: "input_layernorm", Q: "self_attn.q_proj", K: "self_attn.k_proj", V: "self_attn.v_proj",
	QNorm: "self_attn.q_norm", KNorm: "self_attn.k_norm", Out: "self_attn.o_proj",
	MLPNorm: "post_attention_layernorm", Gate: "mlp.gate_proj", Up: "mlp.up_proj", Down: "mlp.down_proj",
}

var llamaRecipe = Recipe{Norm: NormRMS, PreNorm: true, QKV: QKVSeparate, MLP: MLPGated, Act: ActSiLU}

func init() {
	register(&Arch{
		Name: ArchLlama, ModelTypes: []string{"llama"}, Class: "LlamaForCausalLM",
		Recipe: llamaRecipe, Names: llamaNames,
		Validate: wholeRotary,
		FromHF: func(h *hfReader) (Config, error) {
			c, err := fromHFLlamaLike(h, 1e-6, []string{"llama3", "linear"})
			if err != nil {
				return c, err
			}
			if c.Bias, err = h.boolean("attention_bias", false); err != nil {
				return c, err
			}
			// SmolLM's files (nanotron's export) say how they were
			// converted: is_llama_config changes nothing, and interleaved
			// rotary pairs would, so only false is read.
			h.set("is_llama_config")
			if err := h.refuse("rope_interleaved", "memo rotates the halves of a head, as transformers' Llama does, not interleaved pairs", "false"); err != nil {
				return c, err
			}
			return c, h.refuse("mlp_bias", "memo's llama MLP has no biases", "false")
		},
		ToHF: func(c Config, out map[string]any, form HFForm) {
			toHFLlamaLike(c, out, form)
			out["attention_bias"] = c.Bias
			out["mlp_bias"] = false
		},
	})
}

// wholeRotary refuses partial rotary and the parallel residual, which
// only some families have.
func wholeRotary(c Config) error {
	switch {
	case c.RotaryPct != 1:
		return fmt.Errorf("model.rotary_pct = %g: arch %s rotates whole heads (1)", c.RotaryPct, c.Arch)
	case c.ParallelResidual:
		return fmt.Errorf("model.parallel_residual = true: arch %s has a sequential residual", c.Arch)
	}
	return nil
}

// fromHFLlamaLike reads what Llama and its descendants share: the sizes,
// rms_norm_eps, silu, untied by default, the rotary settings.
func fromHFLlamaLike(h *hfReader, eps float64, scaling []string) (Config, error) {
	var c Config
	if err := llamaSizes(h, &c); err != nil {
		return c, err
	}
	if err := h.activation("hidden_act", "silu", "silu"); err != nil {
		return c, err
	}
	var err error
	if c.NormEps, err = h.positive("rms_norm_eps", eps); err != nil {
		return c, err
	}
	if err := h.tied(&c, false); err != nil {
		return c, err
	}
	return c, h.rope(&c, ropeOptions{theta: 10000, scaling: scaling})
}

func toHFLlamaLike(c Config, out map[string]any, form HFForm) {
	writeLlamaSizes(c, out)
	out["rms_norm_eps"] = c.NormEps
	out["hidden_act"] = "silu"
	writeRope(c, out, form, false)
}
