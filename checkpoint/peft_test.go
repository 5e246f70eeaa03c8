package checkpoint

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"

	"github.com/memo-research/memo/internal/safetensors"
	"github.com/memo-research/memo/model"
)

// TestSaveAdapterPEFTLayout: the files PEFT's from_pretrained reads, with
// its tensor names and shapes (lora_A [r, in], lora_B [out, r]; GPT-2's
// Conv1D weights [in, out] give fan_in_fan_out = true) and the values the
// adapters hold.
func TestSaveAdapterPEFTLayout(t *testing.T) {
	for _, c := range []struct {
		cfg     model.Config
		targets []string
		want    map[string][]int64 // a few names PEFT gives and their shapes
		conv1D  bool
	}{
		{model.Config{Preset: "nano", Vocab: 97, Seed: 1}, []string{"q_proj", "v_proj"}, map[string][]int64{
			"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": {4, 64},
			"base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight": {64, 4},
			"base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight": {64, 4},
		}, false},
		{model.Config{Arch: "gpt2", Preset: "nano", Vocab: 97, Seed: 1}, []string{"c_attn", "c_fc"}, map[string][]int64{
			"base_model.model.transformer.h.0.attn.c_attn.lora_A.weight": {4, 64},
			"base_model.model.transformer.h.0.attn.c_attn.lora_B.weight": {192, 4},
			"base_model.model.transformer.h.1.mlp.c_fc.lora_B.weight":    {256, 4},
		}, true},
	} {
		g, err := model.New(nn.NewVarStore(gotch.CPU).Root(), c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		l, err := model.NewLoRA(g, model.LoRAOptions{Rank: 4, Alpha: 16, Targets: c.targets, Seed: 2})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := SaveAdapter(dir, l, "base-model"); err != nil {
			t.Fatal(err)
		}
		f, err := safetensors.Open(filepath.Join(dir, PEFTWeightsFile))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(f.Names()); n != 2*len(c.targets)*g.Config().Layers {
			t.Errorf("%d tensors, want %d", n, 2*len(c.targets)*g.Config().Layers)
		}
		for name, shape := range c.want {
			info, ok := f.Info(name)
			if !ok || !slices.Equal(info.Shape, shape) || info.DType != "F32" {
				t.Errorf("%s: %+v (present %v), want F32 %v", name, info, ok, shape)
			}
		}
		for _, p := range l.Params() {
			got, err := f.Float32(p.Name)
			if err != nil {
				t.Fatal(err)
			}
			if want := p.Tensor.Float64Values(); len(got) != len(want) || float64(got[0]) != want[0] || float64(got[len(got)-1]) != want[len(want)-1] {
				t.Errorf("%s: values differ from the adapter's", p.Name)
			}
		}
		f.Close()
		b, err := os.ReadFile(filepath.Join(dir, PEFTConfigFile))
		if err != nil {
			t.Fatal(err)
		}
		var js map[string]any
		if err := json.Unmarshal(b, &js); err != nil {
			t.Fatal(err)
		}
		if js["peft_type"] != "LORA" || js["task_type"] != "CAUSAL_LM" || js["r"] != 4.0 || js["lora_alpha"] != 16.0 ||
			js["fan_in_fan_out"] != c.conv1D || js["base_model_name_or_path"] != "base-model" || js["bias"] != "none" {
			t.Errorf("adapter_config.json: %s", b)
		}
	}
}
