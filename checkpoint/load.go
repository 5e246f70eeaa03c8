package checkpoint

import (
	"fmt"
	"github.com/memo-research/memo/internal/memlimit"
	"path/filepath"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/precision"
	"github.com/sugarme/gotch/nn"
)

// Load builds the model saved in a checkpoint on device (a train.device
// value: "cpu", "cuda", "cuda:N"), with its weights. path is a
// step-NNNNNN directory, a checkpoints/ directory or a run directory; the
// newest good checkpoint is used, and its directory is returned.
func Load(path, device string) (*model.GPT, *nn.VarStore, string, error) {
	return load(path, device, "")
}

// load is Load, or with precision set for inference (see buildForLoad).
func load(path, device, prec string) (*model.GPT, *nn.VarStore, string, error) {
	dev, err := torchx.ResolveDevice(device)
	if err != nil {
		return nil, nil, "", err
	}
	dir, err := Resolve(path)
	if err != nil {
		return nil, nil, "", err
	}
	cfg, err := ReadConfig(dir)
	if err != nil {
		return nil, nil, "", err
	}
	if err := memlimit.CheckOn(filepath.Join(dir, ModelJSONFile), cfg, bytesPerWeight(prec), dev); err != nil {
		return nil, nil, "", err
	}
	vs := nn.NewVarStore(dev)
	if st, ok := ReadLoRAState(dir); ok {
		g, err := loadLoRA(vs, dir, cfg, st)
		if err == nil {
			err = precision.Set(g, prec, false)
		}
		return g, vs, dir, err
	}
	// Every parameter is overwritten from the file (LoadWeights fails on a
	// missing one), so drawing random initial weights would be wasted time.
	g, err := buildForLoad(vs.Root(), cfg, prec)
	if err != nil {
		return nil, nil, "", fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	if err := LoadWeights(g, dir); err != nil {
		return nil, nil, "", err
	}
	if err := precision.Set(g, prec, false); err != nil {
		return nil, nil, "", fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	return g, vs, dir, nil
}

// LoadWeights copies dir's model.safetensors into g's parameters; every
// parameter must be there with its shape.
func LoadWeights(g *model.GPT, dir string) error {
	return ReadInto(filepath.Join(dir, ModelFile), ModelTensors(g))
}
