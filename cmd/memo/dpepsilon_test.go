package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDPEpsilon runs `memo dp-epsilon` on Opacus's own test case
// (opacus/tests/accountants_test.py:104: q = 0.04, σ = 1.5, 2250 steps,
// δ = 1e-5 → ε = 7.32911117143) and its noise search (:146, ε = 8 → σ ≈
// 1.416), and on each kind of bad value: one memo: line, exit 2.
func TestDPEpsilon(t *testing.T) {
	exe := buildMemo(t)
	dir := t.TempDir()
	r := execMemo(t, exe, dir, "dp-epsilon", "--sample-rate", "0.04", "--noise", "1.5", "--steps", "2250", "--delta", "1e-5", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var got struct {
		Epsilon float64  `json:"epsilon"`
		Noise   *float64 `json:"noise_multiplier"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%q: %v", r.stdout, err)
	}
	if math.Abs(got.Epsilon-7.32911117143) > 5e-8 || got.Noise != nil {
		t.Errorf("got %s, want epsilon 7.32911117143 and no noise_multiplier", r.stdout)
	}

	r = execMemo(t, exe, dir, "dp-epsilon", "--sample-rate", "0.04", "--target-epsilon", "8", "--steps", "2250", "--delta", "1e-5", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%q: %v", r.stdout, err)
	}
	if got.Noise == nil || math.Abs(*got.Noise-1.416) >= 5e-5 || got.Epsilon > 8 || got.Epsilon < 7.92 {
		t.Errorf("got %s, want noise_multiplier 1.416 and epsilon within 1 %% below 8", r.stdout)
	}

	base := []string{"dp-epsilon"}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"negative noise", []string{"--steps", "100", "--sample-rate", "0.01", "--noise=-1", "--delta", "1e-5"}, "--noise -1"},
		{"q zero", []string{"--steps", "100", "--sample-rate", "0", "--noise", "1", "--delta", "1e-5"}, "--sample-rate 0"},
		{"q above one", []string{"--steps", "100", "--sample-rate", "1.5", "--noise", "1", "--delta", "1e-5"}, "--sample-rate 1.5"},
		{"delta one", []string{"--steps", "100", "--sample-rate", "0.01", "--noise", "1", "--delta", "1"}, "--delta 1"},
		{"delta zero", []string{"--steps", "100", "--sample-rate", "0.01", "--noise", "1", "--delta", "0"}, "--delta 0"},
		{"steps zero", []string{"--sample-rate", "0.01", "--noise", "1", "--delta", "1e-5", "--steps", "0"}, "--steps 0"},
		{"unreachable", []string{"--steps", "100", "--sample-rate", "0.01", "--target-epsilon", "0.05", "--delta", "1e-5"}, "reaches it"},
		{"both", []string{"--steps", "100", "--sample-rate", "0.01", "--noise", "1", "--target-epsilon", "1", "--delta", "1e-5"}, "exactly one"},
		{"no delta", []string{"--steps", "100", "--sample-rate", "0.01", "--noise", "1"}, "--delta is required"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := execMemo(t, exe, dir, append(append([]string{}, base...), c.args...)...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != 2 || len(lines) != 1 || !strings.HasPrefix(lines[0], "memo: ") || !strings.Contains(lines[0], c.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and one memo: line containing %q", r.code, r.stderr, c.want)
			}
		})
	}
}

// TestMitigationSpecsRefused: memo config refuses [train.dp] and
// [train.lora] values that cannot work (LoRA under ZeRO sharding too),
// alone and together, each with one memo: line, exit 2, and no run
// directory.
func TestMitigationSpecsRefused(t *testing.T) {
	exe := buildMemo(t)
	dir := t.TempDir()
	const head = "name = \"x\"\n[data]\nsources = [\"opticks\"]\ntokenizer = \"bpe:300\"\ntargets = 20\n"
	for _, c := range []struct {
		name, spec, cmd, want string
	}{
		{"negative sigma", "[train.dp]\nenabled = true\nnoise_multiplier = -0.5\n", "config", "train.dp.noise_multiplier = -0.5: must be >= 0"},
		{"zero C", "[train.dp]\nenabled = true\nnoise_multiplier = 1\nmax_grad_norm = 0\n", "config", "train.dp.max_grad_norm = 0: must be > 0"},
		{"q above one", "[train.dp]\nenabled = true\nsample_rate = 2\n", "config", "train.dp.sample_rate = 2: must be in [0, 1]"},
		{"delta at least 1/N", "[train.dp]\nenabled = true\nnoise_multiplier = 1\ndelta = 0.1\n", "config", "train.dp.delta = 0.1: must be below 1/N"},
		{"unreachable epsilon", "[train.dp]\nenabled = true\ntarget_epsilon = 0.01\n", "config", "no noise multiplier up to 1e+06 reaches it"},
		{"target the family lacks", "[train.lora]\nenabled = true\ntargets = [\"query_key_value\"]\n", "config", "model.arch llama has no such linear layer"},
		{"rank zero", "[train.lora]\nenabled = true\nrank = 0\n", "config", "train.lora.rank = 0: must be >= 1 (PEFT's r); for the model without adapters set train.lora.enabled = false"},
		{"base precision", "[train.lora]\nenabled = true\nbase_precision = \"fp16\"\n", "config", "train.lora.base_precision = \"fp16\": want \"fp32\" or \"bf16\""},
		{"rank above a side", "[train.lora]\nenabled = true\nrank = 5000\n", "config", "train.lora.rank = 5000: larger than"},
		{"dp with lora, rank above a side", "[train.dp]\nenabled = true\nnoise_multiplier = 1\n[train.lora]\nenabled = true\nrank = 5000\n", "config", "train.lora.rank = 5000: larger than"},
		{"lora with zero", "[train]\nshard = \"gradients\"\n[train.lora]\nenabled = true\n", "config", "train.lora with train.shard other than none"},
		{"dp with a sharded state", "[train]\nshard = \"full\"\n[train.dp]\nenabled = true\nnoise_multiplier = 1\n", "config", "DP-SGD needs train.shard"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.NewReplacer(" ", "-", "/", "-").Replace(c.name)+".toml")
			if err := os.WriteFile(file, []byte(head+c.spec), 0o644); err != nil {
				t.Fatal(err)
			}
			r := execMemo(t, exe, dir, c.cmd, file)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != 2 || len(lines) != 1 || !strings.HasPrefix(lines[0], "memo: ") || !strings.Contains(lines[0], c.want) {
				t.Errorf("memo %s: exit %d, stderr %q; want exit 2 and one memo: line containing %q", c.cmd, r.code, r.stderr, c.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "runs", "x")); err == nil {
				t.Errorf("memo %s made a run directory", c.cmd)
			}
		})
	}
}
