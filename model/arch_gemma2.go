package model

import (
	"fmt"
	"strings"
)

// Gemma 2: embeddings scaled by sqrt(dim), RMSNorm with gain 1+w both
// before and after each branch, a tanh-GELU gated MLP, attention scores
// scaled by 1/sqrt(query_pre_attn_scalar) and soft-capped, the logits
// soft-capped, and sliding-window layers alternating with full ones.
var gemmaNames = Names{
	Embed: "model.embed_tokens", FinalNorm: "model.norm", Head: "lm_head",
	Layer:    "model.layers.%d.",
	AttnNorm: "input_layernorm", Q: "self_attn.q_proj", K: "self_attn.k_proj", V: "self_attn.v_proj",
	QNorm: "self_attn.q_norm", KNorm: "self_attn.k_norm", Out: "self_attn.o_proj",
	AttnPostNorm: "post_attention_layernorm",
	MLPNorm:      "pre_feedforward_layernorm", Gate: "mlp.gate_proj", Up: "mlp.up_proj", Down: "mlp.down_proj",
	MLPPostNorm: "post_feedforward_layernorm",
}

var gemmaRecipe = Recipe{Norm: NormRMSOffset, PreNorm: true, PostNorm: true, QKV: QKVSeparate, MLP: MLPGated,
	Act: ActGELUTanh, EmbedScale: true}

func init() {
	register(&Arch{
		Name: "gemma2", ModelTypes: []string{"gemma2"}, Class: "Gemma2ForCausalLM",
		Recipe: gemmaRecipe, Names: gemmaNames,
		Validate: wholeRotary,
		FromHF: func(h *hfReader) (Config, error) {
			c, err := fromHFGemma(h, 2)
			if err != nil {
				return c, err
			}
			if c.AttnSoftcap, err = h.optional("attn_logit_softcapping", 50); err != nil {
				return c, err
			}
			if c.FinalSoftcap, err = h.optional("final_logit_softcapping", 30); err != nil {
				return c, err
			}
			return c, h.rope(&c, ropeOptions{theta: 10000, scaling: []string{"linear"}})
		},
		ToHF: func(c Config, out map[string]any, form HFForm) {
			toHFGemma(c, out)
			writeRope(c, out, form, false)
		},
	})
}

// fromHFGemma reads what Gemma 2 and 3 share; layers whose index plus one
// is not a multiple of pattern are sliding when layer_types is absent.
func fromHFGemma(h *hfReader, pattern int) (Config, error) {
	var c Config
	if err := llamaSizes(h, &c); err != nil {
		return c, err
	}
	act := "hidden_activation"
	if h.set(act) {
		// Gemma 2's files carry both; transformers reads only this one.
		h.set("hidden_act")
	} else {
		act = "hidden_act"
	}
	if err := h.activation(act, "gelu_pytorch_tanh", "gelu_pytorch_tanh", "gelu_new"); err != nil {
		return c, err
	}
	var err error
	if c.NormEps, err = h.positive("rms_norm_eps", 1e-6); err != nil {
		return c, err
	}
	if c.Bias, err = h.boolean("attention_bias", false); err != nil {
		return c, err
	}
	if c.QueryScalar, err = h.positive("query_pre_attn_scalar", 256); err != nil {
		return c, err
	}
	window, err := h.optional("sliding_window", 4096)
	if err != nil {
		return c, err
	}
	if c.SlidingWindow, err = h.integer("sliding_window", int(window)); err != nil {
		return c, err
	}
	if err := h.refuse("use_bidirectional_attention", "memo computes causal attention", "false"); err != nil {
		return c, err
	}
	h.set("cache_implementation") // how transformers caches, not what it computes
	if err := h.tied(&c, true); err != nil {
		return c, err
	}
	for _, key := range []string{"sliding_window_pattern", "_sliding_window_pattern"} {
		if pattern, err = h.integer(key, pattern); err != nil {
			return c, err
		}
	}
	if pattern < 1 {
		return c, fmt.Errorf("config.json sliding_window_pattern = %d: want >= 1", pattern)
	}
	if err := h.layerTypes(&c, "layer_types"); err != nil {
		return c, err
	}
	if c.LayerTypes == "" && c.SlidingWindow > 0 {
		types := make([]string, c.Layers)
		for i := range types {
			types[i] = "sliding"
			if (i+1)%pattern == 0 {
				types[i] = "full"
			}
		}
		c.LayerTypes = strings.Join(types, ",")
	}
	return c, nil
}

func toHFGemma(c Config, out map[string]any) {
	writeLlamaSizes(c, out)
	out["hidden_activation"] = "gelu_pytorch_tanh"
	out["rms_norm_eps"] = c.NormEps
	out["attention_bias"] = c.Bias
	out["query_pre_attn_scalar"] = c.QueryScalar
	if c.QueryScalar == 0 {
		// memo's 0 is head_dim; transformers' default is 256.
		out["query_pre_attn_scalar"] = c.HeadDim
	}
	out["sliding_window"] = c.SlidingWindow
	out["attn_logit_softcapping"] = nilIfZero(c.AttnSoftcap)
	out["final_logit_softcapping"] = nilIfZero(c.FinalSoftcap)
	writeLayerTypes(c, out, "layer_types", "full_attention", "sliding_attention")
}

func nilIfZero(v float64) any {
	if v == 0 {
		return nil
	}
	return v
}
