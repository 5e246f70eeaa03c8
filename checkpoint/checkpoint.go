package checkpoint

import (
	"encoding/json"
	"fmt"
	"github.com/memo-research/memo/internal/filehash"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/model"
)

// Names of the layout (see the package documentation).
const (
	DirName       = "checkpoints"
	LatestFile    = "latest"
	ModelFile     = "model.safetensors"
	OptimizerFile = "optimizer.safetensors"
	ModelJSONFile = "model.json"
	StateFile     = "state.json"
)

// digested are the files whose sha256 state.json records and Verify checks.
var digested = []string{ModelFile, OptimizerFile, ModelJSONFile}

// digestedFiles are digested, or loraDigested for a LoRA run's checkpoint.
func digestedFiles(st State) []string {
	if st.LoRABase != nil {
		return loraDigested
	}
	return digested
}

// StepName is the directory name of the checkpoint of step.
func StepName(step int) string { return fmt.Sprintf("step-%06d", step) }

// RunDir is the run directory of a checkpoint laid out as
// RUN/checkpoints/step-N, or "" for a checkpoint kept elsewhere.
func RunDir(ckpt string) string {
	parent := filepath.Dir(filepath.Clean(ckpt))
	if filepath.Base(parent) != DirName {
		return ""
	}
	return filepath.Dir(parent)
}

// State is state.json: what, beside the weights and moments, a resumed run
// needs to continue exactly.
type State struct {
	// Step is the number of optimizer steps taken.
	Step int `json:"step"`
	// TotalSteps is the run's planned length (the schedule depends on it).
	TotalSteps int `json:"total_steps"`
	// DataPosition counts the training rows consumed so far, over all
	// processes; epoch e of the stream is TrainRows(block, StreamSeed+e).
	DataPosition int64 `json:"data_position"`
	// RowsPerEpoch is the length of one pass over the training stream.
	RowsPerEpoch int `json:"rows_per_epoch"`
	// Block is the row length the run trains on.
	Block int `json:"block"`
	// StreamSeed seeds the stream order. The loop draws no other random
	// numbers: the stream and the goldfish masks are functions of their seeds
	// and positions, so these seeds are the whole RNG state.
	StreamSeed int64 `json:"stream_seed"`
	// ModelSeed seeded the initial weights.
	ModelSeed int64 `json:"model_seed"`
	// WorldSize is the number of processes that trained.
	WorldSize int `json:"world_size"`
	// Workers is the number of model replicas each process trained with
	// (train.threads when > 1, else 1), and Threads libtorch's intra-op
	// thread count in each. Results are bit-identical only for the same
	// layout: a resume with another one is warned about. 0: not recorded
	// (a checkpoint older than these fields).
	Workers int `json:"workers"`
	Threads int `json:"threads"`
	// Layouts, set only when a resume changed Workers × Threads, lists
	// every layout the run trained under, each from the step it took
	// over at: the record of a run that is bit-identical to none trained
	// with one layout (manifest.json keeps only the last launch's).
	Layouts []ThreadLayout `json:"layouts,omitempty"`
	// ElapsedS is the training wall time so far.
	ElapsedS float64 `json:"elapsed_s"`
	// Dataset is the digest of the dataset the run trains on
	// (data.Dataset.Digest); "" in a checkpoint older than the field or
	// of a source that names none.
	Dataset string `json:"dataset,omitempty"`
	// LoRABase is set in a LoRA run's checkpoint, which holds the adapters
	// (PEFT's files) instead of model.safetensors: the frozen weights they
	// add to (lora.go).
	LoRABase *LoRABase `json:"lora_base,omitempty"`
	// DP is a DP-SGD run's privacy report and accountant (train.DPReport),
	// absent for any other run, so their state.json is unchanged.
	DP json.RawMessage `json:"dp,omitempty"`
	// SHA256 maps each file of the checkpoint to its digest.
	SHA256 map[string]string `json:"sha256"`
}

// ThreadLayout is the thread layout training ran under from step
// FromStep on (State.Layouts).
type ThreadLayout struct {
	FromStep int `json:"from_step"`
	Workers  int `json:"workers"`
	Threads  int `json:"threads"`
}

// NewModelJSON is model.json of a model with config c: the Hugging Face
// config.json of its architecture (model.Config.HFConfig: LlamaForCausalLM,
// or GPTNeoXForCausalLM for an imported NeoX model) plus memo's own model
// config under "memo", so the directory loads in transformers once
// model.json is copied to config.json, and memo reads back exactly the
// config it trained.
func NewModelJSON(c model.Config) map[string]any {
	mj := c.HFConfig()
	mj["memo"] = c
	return mj
}

// ReadConfig reads the model config recorded in dir's model.json, resolved
// (presets filled in) and validated.
func ReadConfig(dir string) (model.Config, error) {
	path := filepath.Join(dir, ModelJSONFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		return model.Config{}, err
	}
	var mj struct {
		Memo model.Config `json:"memo"`
	}
	if err := json.Unmarshal(raw, &mj); err != nil {
		return model.Config{}, fmt.Errorf("%s: %w", path, err)
	}
	cfg, err := mj.Memo.Resolve()
	if err != nil {
		return model.Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Save writes a complete checkpoint of st.Step under runDir/checkpoints:
// g's weights, the optimizer tensors given (train's AdamW moments) as
// optimizer.safetensors, model.json, and state.json with st and each
// file's sha256; then it points latest at it and, when keep > 0, removes
// all but the newest keep checkpoints. It returns the checkpoint directory.
func Save(runDir string, g *model.GPT, optimizer []Named, st State, keep int) (string, error) {
	return save(runDir, g.Config(), []tensorFile{{ModelFile, ModelTensors(g)}, {OptimizerFile, optimizer}}, nil, st, keep)
}

// tensorFile is a safetensors file of a checkpoint and what it holds.
type tensorFile struct {
	name    string
	tensors []Named
}

// save writes a checkpoint of model cfg holding files (and whatever extra
// writes into the temporary directory), digests each file digestedFiles
// names for st, and points latest at it (Save).
func save(runDir string, cfg model.Config, files []tensorFile, extra func(tmp string) error, st State, keep int) (string, error) {
	root := filepath.Join(runDir, DirName)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	name := StepName(st.Step)
	tmp, err := atomicfile.MkdirTemp(root, ".tmp-"+name+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // a no-op after the rename
	meta := map[string]string{"format": "pt", "producer": "memo"}
	st.SHA256 = map[string]string{}
	// The large files are digested as they are written.
	for _, f := range files {
		sum, err := writeTensors(filepath.Join(tmp, f.name), f.tensors, meta, "checkpoint "+name+" "+f.name)
		if err != nil {
			return "", err
		}
		st.SHA256[f.name] = sum
	}
	if err := writeJSON(filepath.Join(tmp, ModelJSONFile), NewModelJSON(cfg)); err != nil {
		return "", err
	}
	if extra != nil {
		if err := extra(tmp); err != nil {
			return "", err
		}
	}
	for _, f := range digestedFiles(st) {
		if st.SHA256[f] != "" {
			continue
		}
		sum, err := filehash.SHA256(filepath.Join(tmp, f))
		if err != nil {
			return "", err
		}
		st.SHA256[f] = sum
	}
	if err := writeJSON(filepath.Join(tmp, StateFile), st); err != nil {
		return "", err
	}
	final := filepath.Join(root, name)
	if err := os.RemoveAll(final); err != nil {
		return "", err
	}
	if err := atomicfile.RenameDir(tmp, final); err != nil {
		return "", err
	}
	if err := atomicfile.WriteFileSync(filepath.Join(root, LatestFile), []byte(name+"\n")); err != nil {
		return "", err
	}
	syncDir(root)
	if keep > 0 {
		prune(root, keep)
	}
	return final, nil
}

// prune removes all but the newest keep complete checkpoints.
func prune(root string, keep int) {
	names := stepDirs(root)
	for i := 0; i < len(names)-keep; i++ {
		os.RemoveAll(filepath.Join(root, names[i]))
	}
}

// stepDirs lists step-NNNNNN directories, oldest first. The steps are
// zero-padded to six digits and longer past them, so they sort by length,
// then name: sorted as strings, step-1000000 came before step-999000, and
// prune removed every checkpoint a run wrote past step 999,999, the final
// one too.
func stepDirs(root string) []string {
	ents, _ := os.ReadDir(root)
	var names []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), "step-") {
			names = append(names, e.Name())
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if len(names[i]) != len(names[j]) {
			return len(names[i]) < len(names[j])
		}
		return names[i] < names[j]
	})
	return names
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return atomicfile.WriteFileSync(path, append(b, '\n'))
}

// syncDir makes renames in dir durable where the file system allows it.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
