// Package hfgolden reads the Hugging Face reference checkpoints of
// testdata/hf and testdata/hf-transformers (see their READMEs): for each,
// expected.json holds values Hugging Face's modeling code (or, for
// testdata/hf, a PyTorch implementation of it) computed on the stored
// weights. The checkpoint and CLI tests read them through here.
package hfgolden

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

//go:generate go run ./gennames -root ../.. -out names_generated.go

// Names (testdata/hf) and TransformersNames (testdata/hf-transformers,
// the checkpoints transformers 5.17 wrote itself with save_pretrained) are
// generated from those directories: a new golden is its directory and
// `go generate ./internal/hfgolden/` (TestNamesGenerated keeps them current).

// Case is one expected.json.
type Case struct {
	// IDs are two rows of token ids.
	IDs [][]int32 `json:"ids"`
	// LogitsLast and LogitsPos5 are the logits of each row at its last
	// position and at position 5.
	LogitsLast [][]float64 `json:"logits_last"`
	LogitsPos5 [][]float64 `json:"logits_pos5"`
	// NLL is the per-token negative log-likelihood of IDs[:, 1:].
	NLL [][]float64 `json:"nll"`
	// GreedyContinuations are the greedy tokens after each GreedyPrompts row.
	GreedyPrompts       [][]int32 `json:"greedy_prompts"`
	GreedyContinuations [][]int32 `json:"greedy_continuations"`
	// Tolerance holds the allowed absolute errors: logits_abs and nll_abs
	// (testdata/hf), or logits and nll (testdata/hf-transformers).
	Tolerance map[string]float64 `json:"tolerance"`
}

// LogitsTol and NLLTol are the case's tolerances.
func (c Case) LogitsTol() float64 { return c.Tolerance["logits_abs"] + c.Tolerance["logits"] }
func (c Case) NLLTol() float64    { return c.Tolerance["nll_abs"] + c.Tolerance["nll"] }

// Dir is the absolute directory of reference checkpoint name, given the
// repository root as a path from the calling test's package directory.
func Dir(root, name string) (string, error) {
	return filepath.Abs(filepath.Join(root, "testdata", "hf", name))
}

// TransformersDir is the absolute directory of a TransformersNames checkpoint.
func TransformersDir(root, name string) (string, error) {
	return filepath.Abs(filepath.Join(root, "testdata", "hf-transformers", name))
}

// All lists every reference checkpoint by a test name: testdata/hf's
// (root is the repository root), and each transformers-written one in its
// own (transformers 5) config form and in transformers 4's, made under tmp.
// The Gemma 2 checkpoint's expected values come from transformers' default
// (SDPA) attention, which drops Gemma 2's attention soft-capping (its
// eager path and Google's reference apply it; memo does): it is listed
// with the cap off, as config.json's null turns it off, and the final
// logit cap kept.
func All(root, tmp string) (map[string]string, error) {
	dirs := map[string]string{}
	for _, name := range Names {
		dir, err := Dir(root, name)
		if err != nil {
			return nil, err
		}
		dirs[name] = dir
	}
	for _, name := range TransformersNames {
		dir, err := TransformersDir(root, name)
		if err != nil {
			return nil, err
		}
		if name == "gemma2-softcap-f32" {
			if dir, err = WithConfig(dir, tmp, "attn_logit_softcapping", nil); err != nil {
				return nil, err
			}
		}
		dirs["transformers5/"+name] = dir
		if dirs["transformers4/"+name], err = AsForm4(dir, tmp); err != nil {
			return nil, err
		}
	}
	return dirs, nil
}

// AsForm4 makes dir's checkpoint, whose config.json is in transformers 5's
// form, into transformers 4's form in a new directory under tmp: the same
// weights (linked) with the config keys renamed as the checkpoints'
// README says (dtype → torch_dtype; rope_parameters → rope_theta, plus
// rope_scaling when its type is not default, partial_rotary_factor at the
// top; GPT-NeoX: rotary_pct and rotary_emb_base; Gemma 3's per-layer-type
// parameters → rope_theta and rope_local_base_freq).
func AsForm4(dir, tmp string) (string, error) {
	return rewrite(dir, tmp, "-form4", func(c map[string]any) {
		if d, ok := c["dtype"]; ok {
			delete(c, "dtype")
			c["torch_dtype"] = d
		}
		rp, ok := c["rope_parameters"].(map[string]any)
		if !ok {
			return
		}
		delete(c, "rope_parameters")
		if full, ok := rp["full_attention"].(map[string]any); ok { // Gemma 3
			if local, ok := rp["sliding_attention"].(map[string]any); ok {
				c["rope_local_base_freq"] = local["rope_theta"]
			}
			rp = full
		}
		c["rope_theta"] = rp["rope_theta"]
		delete(rp, "rope_theta")
		if p, ok := rp["partial_rotary_factor"]; ok {
			c["partial_rotary_factor"] = p
			delete(rp, "partial_rotary_factor")
		}
		if c["model_type"] == "gpt_neox" {
			c["rotary_emb_base"], c["rotary_pct"] = c["rope_theta"], c["partial_rotary_factor"]
			delete(c, "rope_theta")
			delete(c, "partial_rotary_factor")
		}
		if t, _ := rp["rope_type"].(string); t != "" && t != "default" {
			c["rope_scaling"] = rp
		}
	})
}

// WithConfig copies dir's checkpoint to a new directory under tmp (the
// weights linked) with config.json's key set to value.
func WithConfig(dir, tmp, key string, value any) (string, error) {
	return rewrite(dir, tmp, "-"+key, func(c map[string]any) { c[key] = value })
}

// rewrite links dir's files into a new directory under tmp, with
// config.json changed by edit.
func rewrite(dir, tmp, suffix string, edit func(map[string]any)) (string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return "", err
	}
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", err
	}
	edit(c)
	out := filepath.Join(tmp, filepath.Base(dir)+suffix)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.Name() == "config.json" || !strings.HasSuffix(e.Name(), ".json") && !strings.HasSuffix(e.Name(), ".safetensors") {
			continue
		}
		if err := os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(out, e.Name())); err != nil {
			return "", err
		}
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return "", err
	}
	return out, os.WriteFile(filepath.Join(out, "config.json"), b, 0o644)
}

// Read reads expected.json of the reference checkpoint in dir and checks
// that it holds what a test compares.
func Read(dir string) (Case, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		return Case{}, err
	}
	var c Case
	if err := json.Unmarshal(raw, &c); err != nil {
		return Case{}, fmt.Errorf("%s: %w", filepath.Join(dir, "expected.json"), err)
	}
	if c.LogitsTol() <= 0 || c.NLLTol() <= 0 || len(c.IDs) == 0 || len(c.GreedyPrompts) == 0 {
		return Case{}, fmt.Errorf("%s: expected.json lacks tolerances, ids or greedy prompts", dir)
	}
	return c, nil
}
