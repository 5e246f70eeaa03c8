package model

import (
	"encoding/json"
	"fmt"
)

// Gemma 3 (text): Gemma 2's blocks with an RMSNorm (gain 1+w) over each
// head's queries and keys, no soft-capping by default, five sliding layers
// to each full one, and a rotary base of its own for the sliding layers
// (rope_local_base_freq; rope scaling applies to the full layers only).
func init() {
	r := gemmaRecipe
	r.QKNorm = QKNormHead
	register(&Arch{
		Name: "gemma3_text", ModelTypes: []string{"gemma3_text"}, Class: "Gemma3ForCausalLM",
		Recipe: r, Names: gemmaNames,
		Validate: wholeRotary,
		FromHF: func(h *hfReader) (Config, error) {
			c, err := fromHFGemma(h, 6)
			if err != nil {
				return c, err
			}
			if c.AttnSoftcap, err = h.optional("attn_logit_softcapping", 0); err != nil {
				return c, err
			}
			if c.FinalSoftcap, err = h.optional("final_logit_softcapping", 0); err != nil {
				return c, err
			}
			if c.LocalRopeTheta, err = h.positive("rope_local_base_freq", 10000); err != nil {
				return c, err
			}
			return c, gemma3Rope(h, &c)
		},
		ToHF: func(c Config, out map[string]any, form HFForm) {
			toHFGemma(c, out)
			if form == HFForm4 {
				writeRope(c, out, form, false)
				out["rope_local_base_freq"] = c.LocalRopeTheta
				return
			}
			global := map[string]any{}
			writeRope(c, global, form, false)
			out["rope_parameters"] = map[string]any{
				"full_attention":    global["rope_parameters"],
				"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": c.LocalRopeTheta},
			}
		},
	})
}

// gemma3Rope reads rope_parameters keyed by layer type (transformers 5)
// or the flat keys of transformers 4.
func gemma3Rope(h *hfReader, c *Config) error {
	o := ropeOptions{theta: 1e6, scaling: []string{"linear"}}
	if !h.set("rope_parameters") {
		return h.rope(c, o)
	}
	var byType map[string]map[string]any
	if err := json.Unmarshal(h.raw["rope_parameters"], &byType); err != nil {
		return h.rope(c, o) // a flat object
	}
	c.RopeTheta = o.theta
	if h.set("rope_theta") || h.set("rope_scaling") {
		return fmt.Errorf("config.json: rope_theta or rope_scaling beside rope_parameters by layer type; want one of the two forms")
	}
	for kind, p := range byType {
		switch kind {
		case "full_attention":
			if err := ropeParams(c, "rope_parameters.full_attention", p, o); err != nil {
				return err
			}
		case "sliding_attention":
			local := Config{RopeTheta: c.LocalRopeTheta}
			if err := ropeParams(&local, "rope_parameters.sliding_attention", p, ropeOptions{}); err != nil {
				return err
			}
			c.LocalRopeTheta = local.RopeTheta
		default:
			return fmt.Errorf("config.json rope_parameters.%s: want full_attention and sliding_attention", kind)
		}
	}
	return nil
}
