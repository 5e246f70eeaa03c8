package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchDecodeCLI runs `memo bench decode --json` on a tiny model in each
// decoding mode and checks the JSON it prints describes what was asked.
func TestBenchDecodeCLI(t *testing.T) {
	exe := buildMemo(t)
	tiny := []string{"bench", "decode", "--preset", "tiny", "--vocab", "64", "--prefix", "8", "--suffix", "3",
		"--batch", "2", "--threads", "1", "--reps", "1", "--json"}
	tests := []struct {
		name     string
		extra    []string
		wantRows int
	}{
		{"greedy", nil, 2},
		{"sample", []string{"--decoding", "sample", "--samples", "3"}, 6},
		{"beam", []string{"--decoding", "beam", "--beams", "2"}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := execMemo(t, exe, t.TempDir(), append(append([]string(nil), tiny...), tt.extra...)...)
			if r.code != 0 {
				t.Fatalf("exit code %d; stderr %s", r.code, r.stderr)
			}
			var got struct {
				Decoding   string   `json:"decoding"`
				Rows       int      `json:"rows"`
				Suffix     int      `json:"suffix"`
				Threads    int      `json:"threads"`
				TokensPerS *float64 `json:"tokens_per_s"`
				PrefillS   *float64 `json:"prefill_s"`
				DecodeS    *float64 `json:"decode_s"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("stdout is not one JSON object: %v\n%s", err, r.stdout)
			}
			if got.TokensPerS == nil || got.PrefillS == nil || got.DecodeS == nil {
				t.Fatalf("missing tokens_per_s, prefill_s or decode_s in %s", r.stdout)
			}
			if *got.TokensPerS <= 0 || *got.PrefillS <= 0 || *got.DecodeS <= 0 {
				t.Errorf("tokens_per_s %v, prefill_s %v, decode_s %v: want all > 0", *got.TokensPerS, *got.PrefillS, *got.DecodeS)
			}
			if want := tt.name; got.Decoding != want || got.Rows != tt.wantRows || got.Suffix != 3 || got.Threads != 1 {
				t.Errorf("decoding %q, rows %d, suffix %d, threads %d; want %q, %d, 3, 1",
					got.Decoding, got.Rows, got.Suffix, got.Threads, want, tt.wantRows)
			}
		})
	}
}

// TestBenchDecodeBadInput checks that bad flags are usage errors.
func TestBenchDecodeBadInput(t *testing.T) {
	exe := buildMemo(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--decoding", "nucleus"}, `--decoding "nucleus": must be one of greedy, sample, beam`},
		{[]string{"--suffix", "0"}, "--suffix 0: must be >= 1"},
		{[]string{"--beams", "65"}, "--beams 65: must be between 1 and 64"},
		{[]string{"--preset", "huge-ish"}, "bench decode:"},
	}
	for _, tt := range tests {
		r := execMemo(t, exe, t.TempDir(), append([]string{"bench", "decode", "--preset", "tiny"}, tt.args...)...)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit code %d, stderr %q; want 2 and one line containing %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
}

// --model decodes with trained weights: the Hugging Face golden's
// parameter count (112,960, as its safetensors hold) and its directory come
// back; a model too short for the prompt, a --preset beside --model and a
// directory that holds no model are one line and exit 2.
func TestBenchDecodeModelDir(t *testing.T) {
	exe := buildMemo(t)
	dir, err := filepath.Abs("../../testdata/hf/llama-gqa-tied")
	if err != nil {
		t.Fatal(err)
	}
	r := execMemo(t, exe, t.TempDir(), "bench", "decode", "--model", dir, "--prefix", "8", "--suffix", "3",
		"--batch", "2", "--threads", "1", "--reps", "1", "--approximation", "kv8", "--json")
	if r.code != 0 {
		t.Fatalf("exit code %d; stderr %s", r.code, r.stderr)
	}
	var got struct {
		ModelDir string  `json:"model_dir"`
		Params   int64   `json:"params"`
		Vocab    int     `json:"vocab"`
		KVBytes  float64 `json:"kv_bytes_per_token"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if got.ModelDir != dir || got.Params != 112960 || got.Vocab != 320 || got.KVBytes <= 0 {
		t.Errorf("got %+v; want model_dir %s, 112960 params, vocab 320, KV bytes measured", got, dir)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", dir, "--prefix", "250", "--suffix", "50"}, "holds 256 positions; --prefix 250 + --suffix 50 need 300"},
		{[]string{"--model", dir, "--preset", "tiny"}, "leave --preset and --vocab unset"},
		{[]string{"--model", t.TempDir()}, "not a Hugging Face directory"},
	} {
		r := execMemo(t, exe, t.TempDir(), append([]string{"bench", "decode", "--reps", "1"}, tt.args...)...)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit code %d, stderr %q; want 2 and one line containing %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1000", 1000, true}, {"23K", 23_000, true}, {"1m", 1_000_000, true}, {"10G", 10_000_000_000, true},
		{"", 0, false}, {"G", 0, false}, {"1.5G", 0, false}, {"1T", 0, false}, {"K1", 0, false},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("parseSize(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestBenchCorpusBadSize: a size that is not one is one line, exit 2.
func TestBenchCorpusBadSize(t *testing.T) {
	exe := buildMemo(t)
	dir := t.TempDir()
	r := execMemo(t, exe, dir, "bench", "corpus", "--bytes", "lots", "--out", filepath.Join(dir, "c.jsonl"))
	if r.code != 2 || !strings.Contains(r.stderr, `--bytes "lots"`) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("exit %d, stderr %q; want 2 and one line naming --bytes", r.code, r.stderr)
	}
}
