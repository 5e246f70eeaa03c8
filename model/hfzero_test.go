package model

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestFromHFRefusesZeroDefaults: a number Resolve would take for "unset"
// and replace by a default (a zero rope base, norm epsilon or rotary
// fraction, or any rope-scaling number) is refused naming the key, in
// each family that reads it; the same config with the number positive
// reads.
func TestFromHFRefusesZeroDefaults(t *testing.T) {
	llama := smallLlamaHF()
	neox := map[string]any{"model_type": "gpt_neox", "vocab_size": 320, "hidden_size": 64, "intermediate_size": 256,
		"num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 256}
	for _, tc := range []struct {
		name string
		base map[string]any
		key  string
		bad  any
		good any
	}{
		{"llama rope_theta", llama, "rope_theta", 0, 500000},
		{"llama rms_norm_eps", llama, "rms_norm_eps", 0, 1e-6},
		{"llama negative rope_theta", llama, "rope_theta", -1, 10000},
		{"llama rope_scaling factor", llama, "rope_scaling", map[string]any{"rope_type": "linear", "factor": 0}, map[string]any{"rope_type": "linear", "factor": 2}},
		{"neox rotary_pct", neox, "rotary_pct", 0, 0.5},
		{"neox rotary_emb_base", neox, "rotary_emb_base", 0, 10000},
		{"neox layer_norm_eps", neox, "layer_norm_eps", 0, 1e-5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := FromHF(hfConfigWith(t, tc.base, tc.key, tc.bad)); err == nil || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), "positive") {
				t.Errorf("%s = %v: err %v; want a refusal naming the key", tc.key, tc.bad, err)
			}
			if _, err := FromHF(hfConfigWith(t, tc.base, tc.key, tc.good)); err != nil {
				t.Errorf("%s = %v: %v", tc.key, tc.good, err)
			}
		})
	}
}

// smallLlamaHF is a small Llama's config.json keys.
func smallLlamaHF() map[string]any {
	return map[string]any{"model_type": "llama", "vocab_size": 320, "hidden_size": 64, "intermediate_size": 176,
		"num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 256}
}

// hfConfigWith is base as config.json with key set to v.
func hfConfigWith(t *testing.T, base map[string]any, key string, v any) []byte {
	t.Helper()
	c := map[string]any{}
	for k, x := range base {
		c[k] = x
	}
	c[key] = v
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFromHFBoundsLayers: a small config.json naming an absurd layer count
// (a few hundred bytes, 2^40 layers, or GPT-Neo's attention_types
// repeating long groups) is refused naming the key and the limit before
// any per-layer list is built: the cases below allocated terabytes (a
// fatal out of memory) or 7.5 GiB and a 262 MB error before. A count at
// the limit still reads, and is refused quickly when something else is
// wrong.
func TestFromHFBoundsLayers(t *testing.T) {
	huge := 1 << 40
	sizes := `"vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_attention_heads":1,"num_key_value_heads":1,"head_dim":8,"max_position_embeddings":8`
	neo := func(groups string) string {
		return `{"model_type":"gpt_neo","vocab_size":8,"hidden_size":8,"num_layers":4,"num_heads":1,"max_position_embeddings":8,"attention_types":` + groups + `}`
	}
	long := `[[` + strings.Repeat(`"global",`, 199) + `"global"],65536]`
	for _, tc := range []struct {
		name, json string
		want       []string // nil: reads
	}{
		{"gemma2", fmt.Sprintf(`{"model_type":"gemma2",%s,"num_hidden_layers":%d,"sliding_window":4}`, sizes, huge),
			[]string{"config.json num_hidden_layers = 1099511627776", "at most 65536 layers"}},
		{"gemma3", fmt.Sprintf(`{"model_type":"gemma3_text",%s,"num_hidden_layers":%d,"sliding_window":4}`, sizes, huge),
			[]string{"config.json num_hidden_layers = 1099511627776", "at most 65536 layers"}},
		{"qwen2", fmt.Sprintf(`{"model_type":"qwen2",%s,"num_hidden_layers":%d,"use_sliding_window":true,"sliding_window":4}`, sizes, huge),
			[]string{"config.json num_hidden_layers = 1099511627776", "at most 65536 layers"}},
		{"gpt2", `{"model_type":"gpt2","vocab_size":8,"n_embd":8,"n_layer":65537,"n_head":1,"n_positions":8}`,
			[]string{"config.json n_layer = 65537", "at most 65536 layers"}},
		{"gpt_neo num_layers", `{"model_type":"gpt_neo","vocab_size":8,"hidden_size":8,"num_layers":1099511627776,"num_heads":1}`,
			[]string{"config.json num_layers = 1099511627776", "at most 65536 layers"}},
		{"gpt_neo attention_types", neo(`[` + strings.Repeat(long+",", 3) + long + `]`),
			[]string{"config.json attention_types: group 0", "past 65536"}},
		{"gpt_neo attention_types many groups", neo(`[` + strings.Repeat(`[["global","local"],32768],`, 1) + `[["local"],1]]`),
			[]string{"config.json attention_types: group 1", "past 65536"}},
		{"gpt_neo attention_types count", neo(`[[["global","local"],30000]]`),
			[]string{`layer_types = "full,sliding,full,sliding,full,sliding,full,sliding"... (60000 entries): 60000 entries for 4 layers`}},
		// A malformed value, as the file indents it, is quoted on one
		// line and cut: the neo case printed 60 lines before.
		{"gpt_neo attention_types malformed", neo("[\n" + strings.Repeat("  [\"global\", 2],\n", 30) + "  [\"local\", 2]\n]"),
			[]string{`config.json attention_types = [["global",2],["global",2],`, `...: want [[[kinds...], repeats], ...]`}},
		{"llama rope_theta object", `{"model_type":"llama","vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":1,"rope_theta": {
    "base": 10000,
    "scale": 1
  }}`, []string{`config.json rope_theta = {"base":10000,"scale":1}: want a number`}},
		// A refusal at the limit names the file's key by writing the
		// config back (hfNames), which read layer_types once per layer:
		// more than 5 minutes before, milliseconds now.
		{"qwen2 at the limit, bad heads", fmt.Sprintf(`{"model_type":"qwen2",%s,"num_hidden_layers":65536,"use_sliding_window":true,"sliding_window":4,"max_window_layers":2}`,
			strings.NewReplacer(`"num_attention_heads":1`, `"num_attention_heads":3`, `"head_dim":8`, `"head_dim":0`).Replace(sizes)),
			[]string{"config.json: num_attention_heads = 3: must be > 0 and divide hidden_size = 8"}},
		{"qwen2 at the limit", fmt.Sprintf(`{"model_type":"qwen2",%s,"num_hidden_layers":65536,"use_sliding_window":true,"sliding_window":4}`, sizes), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := FromHF([]byte(tc.json))
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
				t.Errorf("allocated %d MiB", grew>>20)
			}
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("read; want an error saying %q", tc.want)
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			if len(msg) > 400 || strings.Contains(msg, "\n") {
				t.Errorf("error of %d bytes, want one short line: %.400q", len(msg), msg)
			}
		})
	}
}

// TestFromHFTransformersDefaults: a key config.json leaves out takes
// transformers' default, not memo's: Mistral's and Qwen2's sliding_window
// is 4096 when absent (null is no window), Qwen2's max_window_layers 28,
// and GPT-Neo without attention_types alternates global and local over
// 24 layers, the only depth transformers accepts it for.
func TestFromHFTransformersDefaults(t *testing.T) {
	with := func(base map[string]any, kv ...any) map[string]any {
		c := map[string]any{}
		for k, v := range base {
			c[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			c[kv[i].(string)] = kv[i+1]
		}
		return c
	}
	read := func(c map[string]any) (Config, error) {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		return FromHF(b)
	}
	mistral := with(smallLlamaHF(), "model_type", "mistral")
	for _, tc := range []struct {
		name   string
		config map[string]any
		window int
		types  string
	}{
		{"mistral, window absent", mistral, 4096, ""},
		{"mistral, window null", with(mistral, "sliding_window", nil), 0, ""},
		{"mistral, window 8", with(mistral, "sliding_window", 8), 8, ""},
		{"qwen2, sliding, window and layers absent", with(smallLlamaHF(), "model_type", "qwen2", "use_sliding_window", true, "num_hidden_layers", 30),
			4096, strings.Repeat("full,", 28) + "sliding,sliding"},
	} {
		c, err := read(tc.config)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if c.SlidingWindow != tc.window || c.LayerTypes != tc.types {
			t.Errorf("%s: window %d, layer types %q; want %d, %q", tc.name, c.SlidingWindow, c.LayerTypes, tc.window, tc.types)
		}
	}
	neo := map[string]any{"model_type": "gpt_neo", "vocab_size": 320, "hidden_size": 64, "num_heads": 4, "max_position_embeddings": 256}
	if _, err := read(with(neo, "num_layers", 2)); err == nil || !strings.Contains(err.Error(), "attention_types") {
		t.Errorf("gpt_neo of 2 layers without attention_types: %v, want a refusal naming it", err)
	}
	c, err := read(with(neo, "num_layers", 24))
	if want := strings.Repeat("full,sliding,", 11) + "full,sliding"; err != nil || c.LayerTypes != want {
		t.Errorf("gpt_neo of 24 layers without attention_types: %q, %v; want global and local alternating", c.LayerTypes, err)
	}
}

// TestCheckExportable: a setting the family's config.json has no key for
// is refused at export, naming it (a llama exported with a sliding window
// became a plain Llama, and its NLLs moved); what the family says exports.
func TestCheckExportable(t *testing.T) {
	for _, tc := range []struct {
		name string
		over func(*Config)
		bad  string
	}{
		{"llama as memo trains it", func(*Config) {}, ""},
		{"llama with a sliding window", func(c *Config) { c.SlidingWindow = 4 }, "model.sliding_window = 4"},
		{"llama with a final softcap", func(c *Config) { c.FinalSoftcap = 1 }, "model.final_softcap"},
		{"mistral with a window", func(c *Config) { c.Arch, c.SlidingWindow = "mistral", 8 }, ""},
		{"mistral with biases", func(c *Config) { c.Arch, c.Bias = "mistral", true }, "model.bias = true"},
		{"gemma2 with softcaps", func(c *Config) { c.Arch, c.AttnSoftcap, c.FinalSoftcap = "gemma2", 50, 30 }, ""},
	} {
		c := Config{Preset: "nano", Vocab: 320}
		tc.over(&c)
		r, err := c.Resolve()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, form := range []HFForm{HFForm4, HFForm5} {
			err := r.CheckExportable(form)
			if tc.bad == "" && err != nil || tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)) {
				t.Errorf("%s (form %d): %v, want %q", tc.name, form, err, tc.bad)
			}
		}
	}
}
