// Package provenance is the contract between extract, which records in
// completions.arrow's schema metadata which model was attacked, how it was
// trained and how it was attacked, and eval, which copies that record into
// summary.json wherever the completions file was written. It lives apart
// from both because extract's tests import eval.
package provenance

import "github.com/memo-research/memo/loss"

// Keys of completions.arrow's schema metadata.
const (
	// Extract is the attack's extract.Config as JSON.
	Extract = "memo.extract"
	// Checkpoint is the checkpoint directory attacked (absolute path).
	Checkpoint = "memo.checkpoint"
	// Run is the run directory the checkpoint belongs to, when it has one.
	Run = "memo.run"
	// Step is the checkpoint's optimizer step (decimal).
	Step = "memo.step"
	// ModelSHA256 is the sha256 of the checkpoint's model.safetensors.
	ModelSHA256 = "memo.model_sha256"
	// Model is the model's resolved config (model.Config) as JSON.
	Model = "memo.model"
	// Params is the model's parameter count (model.Config.Params, decimal),
	// so that pure-Go readers (eval, plots) never recompute it.
	Params = "memo.params"
	// Goldfish is the loss the checkpoint was trained with (a Goldfish
	// record as JSON), from the [goldfish] table of its run's config.toml.
	// Absent for a checkpoint outside a run directory: unknown, not "none".
	Goldfish = "memo.goldfish"
	// Approx names the inference approximation of an approximate attack
	// (extract's approxName, e.g. "loki-r8-k0.25"); absent for exact ones.
	Approx = "memo.approx"
)

// GoldfishRecord is the record under the Goldfish key: loss.Config with
// JSON names, plus Enabled (false for the standard loss).
type GoldfishRecord struct {
	Enabled   bool    `json:"enabled"`
	Strategy  string  `json:"strategy"`
	K         int     `json:"k"`
	H         int     `json:"h"`
	Start     int     `json:"start"`
	Seed      int64   `json:"seed"`
	ExemptIDs []int32 `json:"exempt_ids"`
}

// GoldfishOf is the record of c; ExemptIDs is never null in the JSON.
func GoldfishOf(c loss.Config) GoldfishRecord {
	ex := c.ExemptIDs
	if ex == nil {
		ex = []int32{}
	}
	return GoldfishRecord{Enabled: c.Enabled(), Strategy: c.Strategy, K: c.K, H: c.H, Start: c.Start, Seed: c.Seed, ExemptIDs: ex}
}
