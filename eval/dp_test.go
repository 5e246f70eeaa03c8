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
			dir := t.TempDir()
			path := filepath.Join(dir, "completions.arrow")
			meta := map[string]string{}
			if tc.meta != "" {
				meta[provenance.DP] = tc.meta
			}
			writeTestCompletionsMeta(t, path, crafted(), meta)
			sum, err := Run(DefaultConfig(), path, loss.Config{Strategy: "none"}, dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			// Compacted with sorted keys, through a map.
			var compact strings.Builder
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(v)
			compact.Write(b)
			switch {
			case tc.wantEps == 0:
				if sum.DP != nil || strings.Contains(compact.String(), `"dp"`) {
					t.Errorf("no DP record given, summary has %+v", sum.DP)
				}
			case tc.wantEps < 0:
				if sum.DP == nil || sum.DP.Epsilon != nil || !strings.Contains(compact.String(), tc.wantJSON) {
					t.Errorf("σ = 0: summary dp %+v, json %s", sum.DP, compact.String())
				}
			default:
				if sum.DP == nil || sum.DP.Eps() != tc.wantEps || !strings.Contains(compact.String(), tc.wantJSON) {
					t.Errorf("summary dp %+v; summary.json lacks %s:\n%s", sum.DP, tc.wantJSON, compact.String())
				}
			}
		})
	}
}
