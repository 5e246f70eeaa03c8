package extract

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/provenance"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
	"github.com/pelletier/go-toml/v2"
)

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

// provenanceOf is the schema metadata naming the model attacked: its
// checkpoint, run, step, weights digest, architecture and training loss.
func provenanceOf(ckpt string, mc model.Config) (map[string]string, error) {
	abs, err := filepath.Abs(ckpt)
	if err != nil {
		return nil, fmt.Errorf("provenance of %s: %w", ckpt, err)
	}
	mj, err := json.Marshal(mc)
	if err != nil {
		return nil, fmt.Errorf("provenance of %s: %w", ckpt, err)
	}
	meta := map[string]string{provenance.Checkpoint: abs, provenance.Model: string(mj), provenance.Params: fmt.Sprint(mc.Params())}
	if raw, err := os.ReadFile(filepath.Join(ckpt, checkpoint.StateFile)); err == nil {
		var st checkpoint.State
		if err := json.Unmarshal(raw, &st); err != nil {
			return nil, fmt.Errorf("provenance of %s: state.json: %w", ckpt, err)
		}
		meta[provenance.Step] = fmt.Sprint(st.Step)
		if h := st.SHA256[checkpoint.ModelFile]; h != "" {
			meta[provenance.ModelSHA256] = h
		}
	}
	runDir := checkpoint.RunDir(abs)
	if runDir == "" {
		return meta, nil
	}
	meta[provenance.Run] = runDir
	g, ok, err := RunGoldfish(runDir)
	if err != nil {
		return nil, fmt.Errorf("provenance of %s: %w", ckpt, err)
	}
	if !ok {
		return meta, nil
	}
	gj, err := json.Marshal(provenance.GoldfishOf(g))
	if err != nil {
		return nil, fmt.Errorf("provenance of %s: %w", ckpt, err)
	}
	meta[provenance.Goldfish] = string(gj)
	return meta, nil
}
