package checkpoint

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/hfgolden"
	"github.com/memo-research/memo/model"
)

// TestHubConfigsLoad: keys that popular checkpoints' config.json files
// carry and transformers ignores (or holds at the value memo computes)
// load, and the model still matches its golden: Qwen2.5's use_mrope,
// Gemma 2's hidden_act beside hidden_activation, Phi-3-mini and Phi-4's
// attention_bias, SmolLM's is_llama_config and rope_interleaved. Each was
// refused (exit 2) as a key memo did not know. The values that would
// change the computation are still refused.
func TestHubConfigsLoad(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	goldens := goldenDirs(t)
	for _, tc := range []struct {
		golden string
		add    map[string]any
		bad    string // a refusal naming this, or "" to load and match
	}{
		{"qwen2-tied-bf16", map[string]any{"use_mrope": false}, ""},
		{"qwen2-tied-bf16", map[string]any{"use_mrope": true}, "use_mrope"},
		{"gemma2-softcap-f32", map[string]any{"hidden_act": "gelu_pytorch_tanh"}, ""},
		{"phi3-f32", map[string]any{"attention_bias": false}, ""},
		{"phi3-f32", map[string]any{"attention_bias": true}, "attention_bias"},
		{"llama-gqa-tied-f32", map[string]any{"is_llama_config": true, "rope_interleaved": false}, ""},
		{"llama-gqa-tied-f32", map[string]any{"rope_interleaved": true}, "rope_interleaved"},
	} {
		src, ok := goldens["transformers5/"+tc.golden]
		if !ok {
			t.Fatalf("no golden %s", tc.golden)
		}
		dir := copyGolden(t, src, tc.add, nil)
		g, _, err := LoadHF(dir, "cpu")
		if tc.bad != "" {
			if err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%s with %v: %v, want a refusal naming %s", tc.golden, tc.add, err, tc.bad)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s with %v: %v", tc.golden, tc.add, err)
			continue
		}
		want, err := hfgolden.Read(src)
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, g, want)
	}
}

// TestGPT2HubNames: openai-community/gpt2's files name their tensors
// without the base model's prefix (wte.weight, h.0.attn.c_attn.weight) and
// carry the causal-mask buffers h.N.attn.bias and h.N.attn.masked_bias;
// transformers loads them, and memo refused them. The golden, so renamed
// and with the buffers added, loads and matches.
func TestGPT2HubNames(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	src, ok := goldenDirs(t)["transformers5/gpt2-f32"]
	if !ok {
		t.Fatal("no golden gpt2-f32")
	}
	dir := copyGolden(t, src, nil, func(name string) string { return strings.TrimPrefix(name, "transformer.") })
	g, _, err := LoadHF(dir, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	want, err := hfgolden.Read(src)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, g, want)
}

// copyGolden copies a golden directory, adding keys to its config.json
// and, with rename, renaming the tensors of model.safetensors and adding
// GPT-2's two mask buffers per layer.
func copyGolden(t *testing.T, src string, add map[string]any, rename func(string) string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"config.json", "generation_config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case f == "config.json" && add != nil:
			var cfg map[string]any
			if err := json.Unmarshal(b, &cfg); err != nil {
				t.Fatal(err)
			}
			for k, v := range add {
				cfg[k] = v
			}
			if b, err = json.Marshal(cfg); err != nil {
				t.Fatal(err)
			}
		case f == "model.safetensors" && rename != nil:
			b = renameTensors(t, b, rename)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// renameTensors rewrites a safetensors file's header with each tensor
// renamed, and appends a [1,1,2,2] attn.bias and a scalar
// attn.masked_bias for each layer the names show, as GPT-2's files have.
func renameTensors(t *testing.T, file []byte, rename func(string) string) []byte {
	t.Helper()
	n := binary.LittleEndian.Uint64(file[:8])
	var header map[string]json.RawMessage
	if err := json.Unmarshal(file[8:8+n], &header); err != nil {
		t.Fatal(err)
	}
	data := append([]byte(nil), file[8+n:]...)
	out := map[string]any{}
	layers := map[string]bool{}
	for name, v := range header {
		if name == "__metadata__" {
			out[name] = v
			continue
		}
		renamed := rename(name)
		out[renamed] = v
		if parts := strings.SplitN(renamed, ".", 3); parts[0] == "h" {
			layers[parts[1]] = true
		}
	}
	for layer := range layers {
		for _, buf := range []struct {
			name  string
			shape []int
			n     int
		}{{"attn.bias", []int{1, 1, 2, 2}, 4}, {"attn.masked_bias", []int{}, 1}} {
			begin := len(data)
			data = append(data, make([]byte, 4*buf.n)...)
			out["h."+layer+"."+buf.name] = map[string]any{"dtype": "F32", "shape": buf.shape, "data_offsets": []int{begin, len(data)}}
		}
	}
	h, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	res := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(res, h...), data...)
}

// TestGoldensExportable: every reference checkpoint's config, as memo
// reads it, exports in both config.json forms (CheckExportable refuses
// only what a family's file cannot say).
func TestGoldensExportable(t *testing.T) {
	for name, dir := range goldenDirs(t) {
		b, err := os.ReadFile(filepath.Join(dir, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		c, err := model.FromHF(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, form := range []model.HFForm{model.HFForm4, model.HFForm5} {
			if err := c.CheckExportable(form); err != nil {
				t.Errorf("%s (form %d): %v", name, form, err)
			}
		}
	}
}

// TestPickleWeightsNamed: a Hugging Face directory with only
// pytorch_model.bin is told why it does not load, not that it lacks a
// step-NNNNNN directory.
func TestPickleWeightsNamed(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"config.json", "pytorch_model.bin"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Resolve(dir); err == nil || !strings.Contains(err.Error(), "pytorch_model.bin") || !strings.Contains(err.Error(), "safetensors") {
		t.Errorf("Resolve: %v, want the pickle weights named", err)
	}
}
