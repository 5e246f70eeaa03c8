package train

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch/nn"
)

// LoadModel builds the model saved in a checkpoint (a step-NNNNNN
// directory, a checkpoints/ directory or a run directory: the newest good
// checkpoint is used) on the CPU, with its weights.
func LoadModel(checkpointDir string) (*model.GPT, *nn.VarStore, model.Config, error) {
	return LoadModelOn(checkpointDir, "cpu")
}

// LoadModelOn is LoadModel onto device, a train.device value ("cpu",
// "cuda", "cuda:N").
func LoadModelOn(checkpointDir, device string) (*model.GPT, *nn.VarStore, model.Config, error) {
	dev, err := ResolveDevice(device)
	if err != nil {
		return nil, nil, model.Config{}, err
	}
	dir, err := ResolveCheckpoint(checkpointDir)
	if err != nil {
		return nil, nil, model.Config{}, err
	}
	cfg, err := readModelJSON(dir)
	if err != nil {
		return nil, nil, model.Config{}, err
	}
	vs := nn.NewVarStore(dev)
	g, err := model.New(vs.Root(), cfg)
	if err != nil {
		return nil, nil, model.Config{}, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	if err := loadWeights(g, dir); err != nil {
		return nil, nil, model.Config{}, err
	}
	return g, vs, g.Config(), nil
}

func readModelJSON(dir string) (model.Config, error) {
	path := filepath.Join(dir, modelJSONFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		return model.Config{}, err
	}
	var mj ModelJSON
	if err := json.Unmarshal(raw, &mj); err != nil {
		return model.Config{}, fmt.Errorf("%s: %w", path, err)
	}
	cfg, err := mj.Memo.Resolve()
	if err != nil {
		return model.Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// loadWeights copies model.safetensors of dir into g's parameters; every
// parameter must be there with its shape.
func loadWeights(g *model.GPT, dir string) error {
	return loadInto(filepath.Join(dir, modelFile), modelTensors(g))
}

// loadOptimizer restores the AdamW moments and step count.
func loadOptimizer(opt *adamW, dir string, step int) error {
	if err := loadInto(filepath.Join(dir, optimizerFile), opt.state()); err != nil {
		return err
	}
	opt.step = step
	return nil
}

// loadInto copies the tensors of the safetensors file at path into dst by
// name; every one must be there with its shape.
func loadInto(path string, dst []namedTensor) error {
	tensors, _, err := readSafetensors(path)
	if err != nil {
		return err
	}
	for _, nt := range dst {
		t, ok := tensors[nt.Name]
		if !ok {
			return fmt.Errorf("%s: tensor %s is missing", path, nt.Name)
		}
		if err := copyInto(nt.Tensor, nt.Name, t); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}
