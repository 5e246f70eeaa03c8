package extract

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/provenance"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
)

// provenanceOf is the schema metadata naming the model attacked: its
// checkpoint, run, step, weights digest, architecture and training loss
// (trained, nil when unknown).
func provenanceOf(ckpt string, mc model.Config, trained *loss.Config) (map[string]string, error) {
	abs, err := filepath.Abs(ckpt)
	if err != nil {
		return nil, fmt.Errorf("provenance of %s: %w", ckpt, err)
	}
	mj, err := json.Marshal(mc)
	if err != nil {
		return nil, fmt.Errorf("provenance of %s: %w", ckpt, err)
	}
	meta := map[string]string{provenance.Checkpoint: abs, provenance.Model: string(mj), provenance.Params: fmt.Sprint(mc.Params())}
	st, err := checkpoint.ReadState(ckpt)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("provenance of %s: %w", ckpt, err)
	}
	if err == nil {
		meta[provenance.Step] = fmt.Sprint(st.Step)
		if h := st.SHA256[checkpoint.ModelFile]; h != "" {
			meta[provenance.ModelSHA256] = h
		}
		if err := dpProvenance(meta, st); err != nil {
			return nil, fmt.Errorf("provenance of %s: %w", ckpt, err)
		}
		if err := loraProvenance(meta, ckpt, st); err != nil {
			return nil, fmt.Errorf("provenance of %s: %w", ckpt, err)
		}
	}
	if runDir := checkpoint.RunDir(abs); runDir != "" {
		meta[provenance.Run] = runDir
	}
	if trained == nil {
		return meta, nil
	}
	gj, err := json.Marshal(provenance.GoldfishOf(*trained))
	if err != nil {
		return nil, fmt.Errorf("provenance of %s: %w", ckpt, err)
	}
	meta[provenance.Goldfish] = string(gj)
	return meta, nil
}

// dpProvenance records a DP-SGD checkpoint's privacy record (its ε, δ, σ,
// q, C and steps) under provenance.DP; nothing for any other checkpoint.
func dpProvenance(meta map[string]string, st checkpoint.State) error {
	r, err := provenance.ParseDP(st.DP)
	if err != nil || r == nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	meta[provenance.DP] = string(b)
	return nil
}

// loraProvenance records a LoRA checkpoint's adapters and base under
// provenance.LoRA; nothing for a checkpoint of a whole model.
func loraProvenance(meta map[string]string, ckpt string, st checkpoint.State) error {
	b := st.LoRABase
	if b == nil {
		return nil
	}
	opt, err := checkpoint.ReadAdapterConfig(ckpt)
	if err != nil {
		return err
	}
	r := provenance.LoRARecord{Rank: opt.Rank, Alpha: opt.Alpha, Targets: opt.Targets,
		AdaptersSHA256: st.SHA256[checkpoint.PEFTWeightsFile], BaseSource: b.Source, BaseSHA256: b.SHA256, BasePrecision: b.Precision}
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	meta[provenance.LoRA] = string(raw)
	return nil
}
