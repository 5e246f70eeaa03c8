package eval

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/provenance"
	"github.com/memo-research/memo/loss"
)

// TestDPFromCompletionsMetadata: a DP-SGD checkpoint's privacy record, as
// extract recorded it, is summary.json's "dp" (ε null when σ = 0: no
// privacy); a checkpoint without one leaves "dp" out of summary.json.
func TestDPFromCompletionsMetadata(t *testing.T) {
	for _, tc := range []struct {
		name, meta string
		wantEps    float64 // 0: no dp
		wantJSON   string
		wantErr    string
	}{
		{"dp", `{"epsilon":7.9,"delta":1e-05,"noise_multiplier":0.7,"sample_rate":0.01,"max_grad_norm":1,"steps":400,"rows":1600}`, 7.9,
			`"dp":{"delta":0.00001,"epsilon":7.9,"max_grad_norm":1,"noise_multiplier":0.7,"rows":1600,"sample_rate":0.01,"steps":400}`, ""},
		{"no noise", `{"epsilon":null,"delta":1e-05,"noise_multiplier":0,"sample_rate":0.01,"max_grad_norm":1,"steps":4,"rows":16}`, -1, `"epsilon":null`, ""},
		{"none", "", 0, "", ""},
		{"corrupt", "{eps", 0, "", "memo.dp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, compact := summaryOfMeta(t, provenance.DP, tc.meta, tc.wantErr)
			if sum == nil {
				return // refused, as wanted
			}
			switch {
			case tc.wantEps == 0:
				if sum.DP != nil || strings.Contains(compact, `"dp"`) {
					t.Errorf("no DP record given, summary has %+v", sum.DP)
				}
			case tc.wantEps < 0:
				if sum.DP == nil || sum.DP.Epsilon != nil || !strings.Contains(compact, tc.wantJSON) {
					t.Errorf("σ = 0: summary dp %+v, json %s", sum.DP, compact)
				}
			default:
				if sum.DP == nil || sum.DP.Eps() != tc.wantEps || !strings.Contains(compact, tc.wantJSON) {
					t.Errorf("summary dp %+v; summary.json lacks %s:\n%s", sum.DP, tc.wantJSON, compact)
				}
			}
		})
	}
}

// TestLoRAFromCompletionsMetadata: a LoRA checkpoint's adapter record, as
// extract recorded it, is summary.json's "lora"; a whole model leaves it
// out; a damaged record names its key.
func TestLoRAFromCompletionsMetadata(t *testing.T) {
	for _, tc := range []struct {
		name, meta, want, wantErr string
	}{
		{"lora", `{"rank":4,"alpha":8,"targets":["q_proj","v_proj"],"adapters_sha256":"adad","base_sha256":"b0b0"}`,
			`"lora":{"adapters_sha256":"adad","alpha":8,"base_sha256":"b0b0","rank":4,"targets":["q_proj","v_proj"]}`, ""},
		{"whole model", "", "", ""},
		{"corrupt", "{r", "", "memo.lora"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, compact := summaryOfMeta(t, provenance.LoRA, tc.meta, tc.wantErr)
			if sum == nil {
				return // refused, as wanted
			}
			if tc.want == "" {
				if sum.LoRA != nil || strings.Contains(compact, `"lora"`) {
					t.Errorf("no LoRA record given, summary has %+v", sum.LoRA)
				}
			} else if sum.LoRA == nil || sum.LoRA.Rank != 4 || !strings.Contains(compact, tc.want) {
				t.Errorf("summary lora %+v; summary.json lacks %s:\n%s", sum.LoRA, tc.want, compact)
			}
		})
	}
}

// summaryOfMeta scores crafted completions whose metadata holds value
// under key (nothing when value is empty) and returns the summary with
// its summary.json compacted, keys sorted; or, with wantErr set, checks
// that scoring fails naming it and returns nil.
func summaryOfMeta(t *testing.T, key, value, wantErr string) (*Summary, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "completions.arrow")
	meta := map[string]string{}
	if value != "" {
		meta[key] = value
	}
	writeTestCompletionsMeta(t, path, crafted(), meta)
	sum, err := Run(DefaultConfig(), path, loss.Config{Strategy: "none"}, dir)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err = %v, want one naming %s", err, wantErr)
		}
		return nil, ""
	}
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return sum, string(b)
}
