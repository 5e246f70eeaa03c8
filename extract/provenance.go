package extract

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/train"
	"github.com/pelletier/go-toml/v2"
)

// Keys of completions.arrow's schema metadata. eval reads them to record,
// in summary.json, which model was attacked, how it was trained and how it
// was attacked, wherever the completions file was written.
const (
	// MetaExtract is the attack's Config as JSON.
	MetaExtract = "memo.extract"
	// MetaCheckpoint is the checkpoint directory attacked (absolute path).
	MetaCheckpoint = "memo.checkpoint"
	// MetaRun is the run directory the checkpoint belongs to, when it has one.
	MetaRun = "memo.run"
	// MetaStep is the checkpoint's optimizer step (decimal).
	MetaStep = "memo.step"
	// MetaModelSHA256 is the sha256 of the checkpoint's model.safetensors.
	MetaModelSHA256 = "memo.model_sha256"
	// MetaModel is the model's resolved config (model.Config) as JSON.
	MetaModel = "memo.model"
	// MetaGoldfish is the loss the checkpoint was trained with (Goldfish as
	// JSON), from the [goldfish] table of its run's config.toml. Absent
	// for a checkpoint outside a run directory: unknown, not "none".
	MetaGoldfish = "memo.goldfish"
)

// Goldfish is the goldfish-loss record of MetaGoldfish: loss.Config with
// JSON names, plus Enabled (false for the standard loss).
type Goldfish struct {
	Enabled   bool    `json:"enabled"`
	Strategy  string  `json:"strategy"`
	K         int     `json:"k"`
	H         int     `json:"h"`
	Start     int     `json:"start"`
	Seed      int64   `json:"seed"`
	ExemptIDs []int32 `json:"exempt_ids"`
}

func goldfishRecord(c loss.Config) Goldfish {
	ex := c.ExemptIDs
	if ex == nil {
		ex = []int32{}
	}
	return Goldfish{Enabled: c.Enabled(), Strategy: c.Strategy, K: c.K, H: c.H, Start: c.Start, Seed: c.Seed, ExemptIDs: ex}
}

// checkpointRunDir is the run directory of a checkpoint laid out as
// RUN/checkpoints/step-N, or "" for a checkpoint kept elsewhere.
func checkpointRunDir(ckpt string) string {
	parent := filepath.Dir(filepath.Clean(ckpt))
	if filepath.Base(parent) != "checkpoints" {
		return ""
	}
	return filepath.Dir(parent)
}

// RunGoldfish reads the goldfish settings of a run from the [goldfish]
// table of runDir/config.toml (keys left out keep loss.DefaultConfig, as
// for a spec). ok is false when the run has no config.toml.
func RunGoldfish(runDir string) (g loss.Config, ok bool, err error) {
	path := filepath.Join(runDir, "config.toml")
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return loss.Config{}, false, nil
	}
	if err != nil {
		return loss.Config{}, false, fmt.Errorf("read goldfish settings: %w", err)
	}
	conf := struct {
		Goldfish loss.Config `toml:"goldfish"`
	}{Goldfish: loss.DefaultConfig()}
	if err := toml.Unmarshal(b, &conf); err != nil {
		return loss.Config{}, false, fmt.Errorf("read goldfish settings of %s: %w", path, err)
	}
	return conf.Goldfish, true, nil
}

// provenance is the schema metadata naming the model attacked: its
// checkpoint, run, step, weights digest, architecture and training loss.
func provenance(ckpt string, mc model.Config) (map[string]string, error) {
	abs, err := filepath.Abs(ckpt)
	if err != nil {
		return nil, fmt.Errorf("provenance of %s: %w", ckpt, err)
	}
	mj, err := json.Marshal(mc)
	if err != nil {
		return nil, fmt.Errorf("provenance of %s: %w", ckpt, err)
	}
	meta := map[string]string{MetaCheckpoint: abs, MetaModel: string(mj)}
	if raw, err := os.ReadFile(filepath.Join(ckpt, "state.json")); err == nil {
		var st train.State
		if err := json.Unmarshal(raw, &st); err != nil {
			return nil, fmt.Errorf("provenance of %s: state.json: %w", ckpt, err)
		}
		meta[MetaStep] = fmt.Sprint(st.Step)
		if h := st.SHA256["model.safetensors"]; h != "" {
			meta[MetaModelSHA256] = h
		}
	}
	runDir := checkpointRunDir(abs)
	if runDir == "" {
		return meta, nil
	}
	meta[MetaRun] = runDir
	g, ok, err := RunGoldfish(runDir)
	if err != nil {
		return nil, fmt.Errorf("provenance of %s: %w", ckpt, err)
	}
	if !ok {
		return meta, nil
	}
	gj, err := json.Marshal(goldfishRecord(g))
	if err != nil {
		return nil, fmt.Errorf("provenance of %s: %w", ckpt, err)
	}
	meta[MetaGoldfish] = string(gj)
	return meta, nil
}
