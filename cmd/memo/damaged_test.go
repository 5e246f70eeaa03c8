package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/precision"
	"github.com/sugarme/gotch"
)

// rewriteCheckpoint damages the weights of the memo checkpoint in dir —
// edit changes the safetensors header and the data — and records the new
// file's sha256 in state.json, so that the checkpoint verifies and only
// loading can find what is wrong: a header that lies with a consistent
// digest.
func rewriteCheckpoint(t *testing.T, dir string, edit func(header map[string]map[string]any, data []byte) []byte) {
	t.Helper()
	p := filepath.Join(dir, "model.safetensors")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	header, start := safetensorsHeader(t, b)
	data := edit(header, append([]byte(nil), b[start:]...))
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(append(out, h...), data...)
	writeTestFileBytes(t, p, out)
	sum := sha256.Sum256(out)
	editJSONFile(t, filepath.Join(dir, "state.json"), func(state map[string]any) {
		state["sha256"].(map[string]any)["model.safetensors"] = hex.EncodeToString(sum[:])
	})
}

// mustRead is the file at path as a string.
func mustRead(t *testing.T, path string) string {
	t.Helper()
	s, err := readString(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// firstTensor is the name of a float tensor of rank 2 in header, by name
// order, so that every damage hits the same one.
func firstTensor(t *testing.T, header map[string]map[string]any) string {
	t.Helper()
	best := ""
	for k, v := range header {
		if k == "__metadata__" {
			continue
		}
		if s, _ := v["shape"].([]any); len(s) == 2 && s[0] != s[1] && (best == "" || k < best) {
			best = k
		}
	}
	if best == "" {
		t.Fatal("no rank-2 tensor in the checkpoint")
	}
	return best
}

// TestDamagedCheckpointExitCodes (issue 43, cases 5 and 6): a checkpoint
// that verifies but whose weights lie — a NaN, a header whose offsets run
// past the file, a tensor of the wrong shape or dtype, a missing tensor —
// is one memo: line and exit 2 from export (which writes nothing) and
// extract, as from score and generate; every file stays as it was.
func TestDamagedCheckpointExitCodes(t *testing.T) {
	exe := buildMemo(t)
	dir := trainedRun(t)
	ckpt := "checkpoints/step-000006"
	writeJSONFile(t, filepath.Join(dir, "ids.json"), [][]int32{{1, 2, 3}})
	damages := []struct {
		name string
		edit func(t *testing.T, h map[string]map[string]any, data []byte) []byte
		want string
	}{
		{"NaN weight", func(t *testing.T, h map[string]map[string]any, data []byte) []byte {
			putFirstF32(t, h, data, firstTensor(t, h), float32(math.NaN()))
			return data
		}, "NaN"},
		{"offsets past the end", func(t *testing.T, h map[string]map[string]any, data []byte) []byte {
			k := firstTensor(t, h)
			o := h[k]["data_offsets"].([]any)
			h[k]["data_offsets"] = []any{o[0], float64(len(data) + 4096)}
			return data
		}, "model.safetensors"},
		{"wrong shape", func(t *testing.T, h map[string]map[string]any, data []byte) []byte {
			k := firstTensor(t, h)
			s := h[k]["shape"].([]any)
			h[k]["shape"] = []any{s[1], s[0]} // the same bytes, transposed
			return data
		}, "shape"},
		{"wrong dtype", func(t *testing.T, h map[string]map[string]any, data []byte) []byte {
			h[firstTensor(t, h)]["dtype"] = "I32" // the same width
			return data
		}, "I32"},
		{"missing tensor", func(t *testing.T, h map[string]map[string]any, data []byte) []byte {
			k := firstTensor(t, h)
			h[k+".renamed"] = h[k]
			delete(h, k)
			return data
		}, "missing"},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			run := filepath.Join(dir, "runs", "tiny")
			rewriteCheckpoint(t, filepath.Join(run, ckpt), func(h map[string]map[string]any, data []byte) []byte {
				return d.edit(t, h, data)
			})
			before := treeSums(t, dir)
			memo := memoIn(t, exe, dir)
			for _, args := range [][]string{
				{"export", "runs/tiny", "exported"},
				{"extract", "--out", "new.completions.arrow", "runs/tiny"},
				{"score", "--model", "runs/tiny/" + ckpt, "--ids-json", "ids.json"},
			} {
				r := memo(args...)
				if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "memo: ") || !strings.Contains(r.stderr, d.want) {
					t.Errorf("%s: exit %d, stderr %q; want 2 and one memo: line naming %q", strings.Join(args, " "), r.code, r.stderr, d.want)
				}
				sameTree(t, dir, before)
			}
			// The next damage starts from the trained weights.
			copyDir(t, filepath.Join(tinyDir, "runs", "tiny", ckpt), filepath.Join(run, ckpt))
		})
	}
}

// TestDamagedModelNamedAsDamaged: a memo checkpoint whose weights no
// longer match state.json's sha256, given as --model, is refused for
// that, not as "not a Hugging Face directory nor a memo checkpoint".
func TestDamagedModelNamedAsDamaged(t *testing.T) {
	exe := buildMemo(t)
	dir := trainedRun(t)
	weights := filepath.Join(dir, "runs", "tiny", "checkpoints", "step-000006", "model.safetensors")
	good, err := os.ReadFile(weights)
	if err != nil {
		t.Fatal(err)
	}
	defer os.WriteFile(weights, good, 0o644)
	bad := append([]byte(nil), good...)
	bad[len(bad)-1] ^= 0xff
	if err := os.WriteFile(weights, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	memo := memoIn(t, exe, dir)
	for _, args := range [][]string{
		{"extract", "--model", "runs/tiny", "--data", "runs/tiny", "--out", "x.completions.arrow"},
		{"bench", "decode", "--model", "runs/tiny", "--prefix", "8", "--suffix", "3"},
	} {
		r := memo(args...)
		if r.code != 2 || strings.Contains(r.stderr, "not a Hugging Face directory") || !strings.Contains(r.stderr, "truncated or corrupt") {
			t.Errorf("%s: exit %d, stderr %q; want 2 naming the damage", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if r := memo("extract", "--model", t.TempDir(), "--data", "runs/tiny"); r.code != 2 || !strings.Contains(r.stderr, "not a Hugging Face directory") {
		t.Errorf("extract --model of an empty directory: exit %d, stderr %q; want 2 naming both kinds", r.code, r.stderr)
	}
}

// TestHFZeroValuesRefused (issue 43, case 7): a Hugging Face config.json
// value that memo would otherwise take for "unset" and replace by its
// default (rope_theta 0 computed as 10000) is one memo: line, exit 2,
// naming the key, from every command that loads it.
func TestHFZeroValuesRefused(t *testing.T) {
	exe, src, work := hfDamageWork(t)
	for _, tc := range []struct {
		key  string
		set  func(c map[string]any)
		want string
	}{
		{"rope_theta", func(c map[string]any) { c["rope_theta"] = 0 }, "config.json rope_theta = 0: must be a positive number"},
		{"negative rope_theta", func(c map[string]any) { c["rope_theta"] = -10000 }, "config.json rope_theta = -10000: must be a positive number"},
		{"rms_norm_eps", func(c map[string]any) { c["rms_norm_eps"] = 0 }, "config.json rms_norm_eps = 0: must be a positive number"},
		{"rope_scaling factor", func(c map[string]any) {
			c["rope_scaling"] = map[string]any{"rope_type": "linear", "factor": 0}
		}, "config.json rope_scaling.factor = 0: must be a positive number"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			dir := filepath.Join(work, strings.ReplaceAll(tc.key, " ", "-"))
			copyDir(t, src, dir)
			editJSONFile(t, filepath.Join(dir, "config.json"), tc.set)
			before := treeSums(t, work)
			for _, cmd := range []string{"score", "generate"} {
				wantOneLine(t, execMemo(t, exe, work, cmd, "--model", dir, "--ids-json", "ids.json"), tc.want)
			}
			sameTree(t, work, before)
		})
	}
}

// TestDatasetAndDeviceExitCodes (issue 43, case 5): a truncated docs.arrow
// or tokens.arrow, and a device or precision this machine lacks, are one
// memo: line and exit 2 from extract and data inspect, as from config,
// run and score; nothing is written.
func TestDatasetAndDeviceExitCodes(t *testing.T) {
	exe := buildMemo(t)
	dir := trainedRun(t)
	_, cudaErr := torchx.ResolveDevice("cuda")
	fp16Err := precision.Check(precision.FP16, false, gotch.CPU)
	for _, f := range []string{"docs.arrow", "tokens.arrow"} {
		run := filepath.Join(dir, "runs", strings.TrimSuffix(f, ".arrow"))
		copyTree(t, filepath.Join(dir, "runs", "tiny"), run)
		p := filepath.Join(run, "data", f)
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, st.Size()/2); err != nil {
			t.Fatal(err)
		}
	}
	before := treeSums(t, dir)
	memo := memoIn(t, exe, dir)
	for _, tc := range []struct {
		name string
		args []string
		want string
		skip bool
	}{
		{"extract, truncated docs.arrow", []string{"extract", "--out", "x.completions.arrow", "runs/docs"}, "docs.arrow", false},
		{"extract, truncated tokens.arrow", []string{"extract", "--out", "x.completions.arrow", "runs/tokens"}, "tokens.arrow", false},
		{"data inspect, truncated docs.arrow", []string{"data", "inspect", "runs/docs"}, "docs.arrow", false},
		{"data inspect, truncated tokens.arrow", []string{"data", "inspect", "runs/tokens"}, "tokens.arrow", false},
		{"extract --device cuda without CUDA", []string{"extract", "--device", "cuda", "--out", "x.completions.arrow", "runs/tiny"}, "CUDA is not available", cudaErr == nil},
		{"extract --precision fp16 without float16", []string{"extract", "--precision", "fp16", "--out", "x.completions.arrow", "runs/tiny"}, "precision fp16 on cpu", fp16Err == nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip {
				t.Skip("this machine has it")
			}
			wantOneLine(t, memo(tc.args...), tc.want)
			sameTree(t, dir, before)
		})
	}
}
