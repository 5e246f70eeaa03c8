package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/runfiles"
)

// TestExtractScanCLI scans a trained run through the binary: the scan
// goes beside the run's own completions (scan.parquet) and says for every
// document what the run's greedy attack generated; settings that need
// generation and an --out that is not Parquet are refused, exit 2.
func TestExtractScanCLI(t *testing.T) {
	dir := trainedRun(t)
	exe := buildMemo(t)
	run := filepath.Join(dir, "runs", "tiny")
	out := memoCmd(t, exe, dir, 0, "extract", "--scan", "runs/tiny")
	scan := filepath.Join(run, "scan.parquet")
	if !strings.Contains(out, "scan: "+filepath.Join("runs", "tiny", "scan.parquet")) {
		t.Errorf("extract --scan printed %q, want the path %s", out, scan)
	}
	rows, err := runfiles.Scans.ReadParquet(scan)
	if err != nil {
		t.Fatal(err)
	}
	comps, err := eval.ReadCompletions(filepath.Join(run, "completions.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(comps) || len(rows) == 0 {
		t.Fatalf("%d scan rows, %d completions", len(rows), len(comps))
	}
	for i, c := range comps {
		m := 0
		for m < len(c.Suffix) && m < len(c.Generated) && c.Suffix[m] == c.Generated[m] {
			m++
		}
		if r := rows[i]; r.DocID != c.DocID || r.MatchedLen != m || r.ExactMatch != (m == len(c.Suffix)) {
			t.Errorf("doc %d: scan %+v, generation matched %d of %d", c.DocID, r, m, len(c.Suffix))
		}
	}
	// The same through --scan-compare, and a scan of other prompts refused.
	cmp := memoCmd(t, exe, dir, 0, "extract", "--scan", "--out", filepath.Join(dir, "again.scan.parquet"), "--scan-compare", filepath.Join(run, "completions.arrow"), "runs/tiny")
	if want := fmt.Sprintf("%d documents compared", len(comps)); !strings.Contains(cmp, want) || !strings.Contains(cmp, " 0 differ") {
		t.Errorf("--scan-compare printed %q, want %q and 0 differ", cmp, want)
	}
	if msg := memoCmd(t, exe, dir, 2, "extract", "--scan", "--suffix", "8", "--out", filepath.Join(dir, "s8.scan.parquet"), "--scan-compare", filepath.Join(run, "completions.arrow"), "runs/tiny"); !strings.Contains(msg, "not the same attack") {
		t.Errorf("--scan-compare of another attack: stderr %q", msg)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--decoding", "sample"}, "a scan decides greedy decoding's exact match"},
		{[]string{"--samples", "2", "--decoding", "beam"}, "a scan decides greedy decoding's exact match"},
		{[]string{"--out", filepath.Join(dir, "x.arrow")}, "a scan is Parquet"},
		{[]string{"--scan-compare", filepath.Join(dir, "tiny.toml")}, "--scan-compare"},
	} {
		args := append(append([]string{"extract", "--scan"}, tc.args...), "runs/tiny")
		if msg := memoCmd(t, exe, dir, 2, args...); !strings.Contains(msg, "memo: extract --scan") || !strings.Contains(msg, tc.want) {
			t.Errorf("memo %v: stderr %q, want one line saying %q", args, msg, tc.want)
		}
	}
}

// TestNotScannedAttack: completions of another model, a sampled or beam
// attack or an approximate one are not what a scan reproduces: compared,
// they read as a disagreement (exit 1) instead of as the wrong file.
func TestNotScannedAttack(t *testing.T) {
	ckpt := filepath.Join(t.TempDir(), "run", "checkpoints", "step-000020")
	if err := os.MkdirAll(ckpt, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(ckpt, "state.json"), `{"step": 20, "sha256": {"model.safetensors": "aaaabbbbccccdddd"}}`)
	for _, tc := range []struct {
		name string
		meta map[string]string
		want string // "" for the same attack
	}{
		{"same greedy attack", map[string]string{"memo.checkpoint": ckpt, "memo.model_sha256": "aaaabbbbccccdddd", "memo.extract": `{"decoding": "greedy"}`}, ""},
		{"recorded nothing", nil, ""},
		{"QuantSpec is exact", map[string]string{"memo.checkpoint": ckpt, "memo.approx": "quantspec-g4"}, ""},
		// A run directory moved or copied keeps its model (the CI's
		// copied run once read as another).
		{"the same model elsewhere", map[string]string{"memo.checkpoint": "/elsewhere/step-000020", "memo.model_sha256": "aaaabbbbccccdddd"}, ""},
		{"another model", map[string]string{"memo.checkpoint": ckpt, "memo.model_sha256": "eeeeffff00001111"}, "of another model"},
		{"sampled", map[string]string{"memo.checkpoint": ckpt, "memo.extract": `{"decoding": "sample", "samples": 8}`}, "sample attack (8 samples)"},
		{"greedy with samples", map[string]string{"memo.extract": `{"decoding": "greedy", "samples": 4}`}, "(4 samples)"},
		{"approximate", map[string]string{"memo.approx": "kv8+quantspec-g4"}, "approximate attack kv8+quantspec-g4"},
	} {
		if got := notScannedAttack(tc.meta, ckpt); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
