package model

import (
	"slices"
	"testing"
)

// TestLoRAEveryFamily: every family memo opens has adaptable layers under
// their Hugging Face names, and on a nano model of each, adapters on all
// of them leave the logits alone (to 1e-6) while B = 0 and merge to the adapted
// model's logits (to 1e-5) once B is not.
func TestLoRAEveryFamily(t *testing.T) {
	want := map[string][]string{
		ArchLlama:  {"down_proj", "gate_proj", "k_proj", "o_proj", "q_proj", "up_proj", "v_proj"},
		"gpt2":     {"c_attn", "c_fc", "c_proj"},
		"gpt_neox": {"dense", "dense_4h_to_h", "dense_h_to_4h", "query_key_value"},
		"gpt_neo":  {"c_fc", "c_proj", "k_proj", "out_proj", "q_proj", "v_proj"},
		"phi3":     {"down_proj", "gate_up_proj", "o_proj", "qkv_proj"},
	}
	for _, arch := range Architectures() {
		t.Run(arch, func(t *testing.T) {
			c, err := Config{Arch: arch, Preset: "nano", Vocab: 97, Seed: 1}.Resolve()
			if err != nil {
				t.Fatalf("no nano %s: %v", arch, err)
			}
			names, err := LoRAModuleNames(c)
			if err != nil || len(names) == 0 {
				t.Fatalf("names %v, %v", names, err)
			}
			if w, ok := want[arch]; ok && !slices.Equal(names, w) {
				t.Errorf("names %v, want %v", names, w)
			}
			g := newTest(t, c)
			ids := loraIDs()
			defer ids.MustDrop()
			base := g.Forward(ids)
			b := base.Float64Values()
			base.MustDrop()
			l, err := NewLoRA(g, LoRAOptions{Rank: 2, Alpha: 4, Targets: names, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			out := l.Forward(ids)
			// Equal up to the last bits: W + 0 is W, but in a new tensor,
			// whose alignment may pick another BLAS kernel.
			if d, scale := loraMaxDiff(out.Float64Values(), b); d > 1e-6*max(1, scale) {
				t.Errorf("B = 0 changes the logits by %g", d)
			}
			out.MustDrop()
			randomizeB(t, l)
			un := l.Forward(ids)
			u := un.Float64Values()
			un.MustDrop()
			l.Merge()
			mg := g.Forward(ids)
			m := mg.Float64Values()
			mg.MustDrop()
			if d, scale := loraMaxDiff(m, u); d > 1e-5*max(1, scale) {
				t.Errorf("merged logits differ from unmerged by %g", d)
			}
			if d, _ := loraMaxDiff(u, b); d < 1e-4 {
				t.Errorf("the adapters barely change the logits (%g)", d)
			}
		})
	}
}
