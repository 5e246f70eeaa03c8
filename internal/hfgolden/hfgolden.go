// Package hfgolden reads the Hugging Face reference checkpoints of
// testdata/hf (see its README): for each, expected.json holds values a
// PyTorch implementation of Hugging Face's modeling code computed on the
// stored weights. The checkpoint and CLI tests both read them through here.
package hfgolden

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Names are the reference checkpoints, one directory each under testdata/hf.
var Names = []string{"llama-gqa-tied", "llama3-mqa-scaled-bf16", "neox-pythia-style-fp16"}

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
	// Tolerance holds logits_abs and nll_abs, the allowed absolute errors.
	Tolerance map[string]float64 `json:"tolerance"`
}

// LogitsTol and NLLTol are the case's tolerances.
func (c Case) LogitsTol() float64 { return c.Tolerance["logits_abs"] }
func (c Case) NLLTol() float64    { return c.Tolerance["nll_abs"] }

// Dir is the absolute directory of reference checkpoint name, given the
// repository root as a path from the calling test's package directory.
func Dir(root, name string) (string, error) {
	return filepath.Abs(filepath.Join(root, "testdata", "hf", name))
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
