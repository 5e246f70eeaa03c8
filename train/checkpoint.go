package train

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
)

// Checkpoint layout, under runDir/checkpoints/:
//
//	step-NNNNNN/model.safetensors      weights, Hugging Face Llama names
//	step-NNNNNN/optimizer.safetensors  AdamW moments: <name>.exp_avg, <name>.exp_avg_sq
//	step-NNNNNN/model.json             Hugging Face config.json fields + memo's model config
//	step-NNNNNN/state.json             step, data position, seeds, sha256 of the three files
//	latest                             name of the newest complete checkpoint
//
// A checkpoint is written into a temporary directory (.tmp-step-NNNNNN-*)
// and renamed into place, so a kill at any moment leaves either the whole
// checkpoint or none; the temporary directory a kill leaves behind is
// removed when the run starts again.
const (
	checkpointsDir = "checkpoints"
	latestFile     = "latest"
	modelFile      = "model.safetensors"
	optimizerFile  = "optimizer.safetensors"
	modelJSONFile  = "model.json"
	stateFile      = "state.json"
)

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
	// ElapsedS is the training wall time so far.
	ElapsedS float64 `json:"elapsed_s"`
	// SHA256 maps each file of the checkpoint to its digest.
	SHA256 map[string]string `json:"sha256"`
}

// ModelJSON is model.json: a Hugging Face LlamaConfig (config.json) plus
// memo's own model config, so the directory loads in transformers once
// model.json is copied to config.json.
type ModelJSON struct {
	Architectures     []string     `json:"architectures"`
	ModelType         string       `json:"model_type"`
	VocabSize         int          `json:"vocab_size"`
	HiddenSize        int          `json:"hidden_size"`
	IntermediateSize  int          `json:"intermediate_size"`
	NumHiddenLayers   int          `json:"num_hidden_layers"`
	NumAttentionHeads int          `json:"num_attention_heads"`
	NumKeyValueHeads  int          `json:"num_key_value_heads"`
	MaxPositionEmbed  int          `json:"max_position_embeddings"`
	RMSNormEps        float64      `json:"rms_norm_eps"`
	RopeTheta         float64      `json:"rope_theta"`
	HiddenAct         string       `json:"hidden_act"`
	TieWordEmbeddings bool         `json:"tie_word_embeddings"`
	AttentionBias     bool         `json:"attention_bias"`
	TorchDType        string       `json:"torch_dtype"`
	Memo              model.Config `json:"memo"`
}

func modelJSON(c model.Config) ModelJSON {
	return ModelJSON{
		Architectures: []string{"LlamaForCausalLM"}, ModelType: "llama",
		VocabSize: c.Vocab, HiddenSize: c.Dim, IntermediateSize: c.FFN, NumHiddenLayers: c.Layers,
		NumAttentionHeads: c.Heads, NumKeyValueHeads: c.Heads, MaxPositionEmbed: c.Context,
		RMSNormEps: 1e-5, RopeTheta: 10000, HiddenAct: "silu", TieWordEmbeddings: !c.Untied,
		TorchDType: "float32", Memo: c,
	}
}

func stepName(step int) string { return fmt.Sprintf("step-%06d", step) }

// saveCheckpoint writes a complete checkpoint of step and points latest at it.
func saveCheckpoint(runDir string, g *model.GPT, opt *adamW, st State, keep int) (string, error) {
	root := filepath.Join(runDir, checkpointsDir)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	name := stepName(st.Step)
	tmp, err := os.MkdirTemp(root, ".tmp-"+name+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // a no-op after the rename
	meta := map[string]string{"format": "pt", "producer": "memo"}
	if err := writeSafetensors(filepath.Join(tmp, modelFile), modelTensors(g), meta); err != nil {
		return "", err
	}
	if err := writeSafetensors(filepath.Join(tmp, optimizerFile), opt.state(), meta); err != nil {
		return "", err
	}
	if err := writeJSON(filepath.Join(tmp, modelJSONFile), modelJSON(g.Config())); err != nil {
		return "", err
	}
	st.SHA256 = map[string]string{}
	for _, f := range []string{modelFile, optimizerFile, modelJSONFile} {
		sum, err := fileSHA256(filepath.Join(tmp, f))
		if err != nil {
			return "", err
		}
		st.SHA256[f] = sum
	}
	if err := writeJSON(filepath.Join(tmp, stateFile), st); err != nil {
		return "", err
	}
	final := filepath.Join(root, name)
	if err := os.RemoveAll(final); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", err
	}
	if err := atomicfile.WriteFileSync(filepath.Join(root, latestFile), []byte(name+"\n")); err != nil {
		return "", err
	}
	syncDir(root)
	if keep > 0 {
		pruneCheckpoints(root, keep)
	}
	return final, nil
}

// pruneCheckpoints removes all but the newest keep complete checkpoints.
func pruneCheckpoints(root string, keep int) {
	names := stepDirs(root)
	for i := 0; i < len(names)-keep; i++ {
		os.RemoveAll(filepath.Join(root, names[i]))
	}
}

// stepDirs lists step-NNNNNN directories, oldest first.
func stepDirs(root string) []string {
	ents, _ := os.ReadDir(root)
	var names []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), "step-") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// verifyCheckpoint checks that dir is a complete checkpoint: state.json
// parses and every file's digest matches it.
func verifyCheckpoint(dir string) (State, error) {
	var st State
	raw, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return st, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("checkpoint %s: %s is corrupt: %w", dir, stateFile, err)
	}
	for _, f := range []string{modelFile, optimizerFile, modelJSONFile} {
		want, ok := st.SHA256[f]
		if !ok {
			return st, fmt.Errorf("checkpoint %s: %s records no sha256 for %s", dir, stateFile, f)
		}
		got, err := fileSHA256(filepath.Join(dir, f))
		if err != nil {
			return st, fmt.Errorf("checkpoint %s: %w", dir, err)
		}
		if got != want {
			return st, fmt.Errorf("checkpoint %s: %s has sha256 %s, %s recorded %s (truncated or corrupt)", dir, f, got[:12], stateFile, want[:12])
		}
	}
	return st, nil
}

// latestGood returns the newest checkpoint under runDir that verifies, the
// one latest names first; refused ones are logged with the reason. It
// returns "" when there is no checkpoint at all, and a *refusedError
// naming each one when there are some but none verifies.
func latestGood(runDir string) (string, State, error) {
	root := filepath.Join(runDir, checkpointsDir)
	var order []string
	if b, err := os.ReadFile(filepath.Join(root, latestFile)); err == nil {
		order = append(order, strings.TrimSpace(string(b)))
	}
	dirs := stepDirs(root)
	for i := len(dirs) - 1; i >= 0; i-- {
		order = append(order, dirs[i])
	}
	seen := map[string]bool{}
	var refused []error
	for _, name := range order {
		if seen[name] || name == "" {
			continue
		}
		seen[name] = true
		dir := filepath.Join(root, name)
		st, err := verifyCheckpoint(dir)
		if err != nil {
			slog.Warn("checkpoint refused; trying an older one", "checkpoint", dir, "reason", err)
			refused = append(refused, err)
			continue
		}
		return dir, st, nil
	}
	if len(refused) > 0 {
		return "", State{}, &refusedError{root: root, reasons: refused}
	}
	return "", State{}, nil
}

// refusedError is latestGood's answer when checkpoints exist but every one
// is truncated, corrupt or incomplete.
type refusedError struct {
	root    string
	reasons []error // one per checkpoint, each naming its directory and file
}

func (e *refusedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: no usable checkpoint, all %d refused:", e.root, len(e.reasons))
	for _, r := range e.reasons {
		b.WriteString("\n  ")
		b.WriteString(r.Error())
	}
	return b.String()
}

// resumePoint is latestGood for resuming a run in runDir: when every
// checkpoint there is refused it fails rather than start afresh over them,
// and says how to start afresh deliberately.
func resumePoint(runDir string) (string, State, error) {
	dir, st, err := latestGood(runDir)
	if err != nil {
		return "", State{}, fmt.Errorf("cannot resume: %w\nrepair or move the checkpoints away, or set train.no_resume = true to start this run afresh (overwriting them)", err)
	}
	return dir, st, nil
}

// threadLayout is the workers × libtorch threads a run with train.threads
// = threads computes with (see newWorkers); call it on the loop's thread.
func threadLayout(threads int) (workers, perWorker int) {
	switch {
	case threads > 1:
		return threads, 1
	case threads == 1:
		return 1, 1
	}
	return 1, torchx.Threads()
}

// warnThreadChange warns when a run resumes from dir with another thread
// layout than the checkpoint was written with: the run goes on, but its
// result is no longer bit-identical to an uninterrupted run's.
func warnThreadChange(dir string, st State, threads int) {
	workers, perWorker := threadLayout(threads)
	switch {
	case st.Workers == 0:
		slog.Warn("checkpoint records no thread count: cannot check that this resume keeps the run bit-identical (it does only with the same count)",
			"checkpoint", dir)
	case st.Workers != workers || st.Threads != perWorker:
		slog.Warn(fmt.Sprintf("RESUMING WITH A DIFFERENT THREAD COUNT: the checkpoint was written by %d worker(s) × %d libtorch thread(s), this run uses %d × %d (train.threads = %d). "+
			"Training continues, but the result will not be bit-identical to an uninterrupted run: determinism holds only for the same thread count.",
			st.Workers, st.Threads, workers, perWorker, threads),
			"checkpoint", dir)
	}
}

// Names of what a kill mid-write leaves in checkpoints/: saveCheckpoint's
// temporary directory (and atomicfile's temporary copy of latest, which
// atomicfile.IsTemp recognizes).
var staleTempDir = regexp.MustCompile(`^\.tmp-step-[0-9]{6,}-[0-9]+$`)

// removeStaleTemps deletes, from runDir's checkpoints/, the temporary
// directories and files an interrupted checkpoint write left: only names
// this package creates, never a step-NNNNNN directory nor whatever latest
// names. Call it when a run starts, before any checkpoint is written: a
// write in flight would look stale too. Failures are logged, not fatal.
func removeStaleTemps(runDir string) []string {
	root := filepath.Join(runDir, checkpointsDir)
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	latest := ""
	if b, err := os.ReadFile(filepath.Join(root, latestFile)); err == nil {
		latest = strings.TrimSpace(string(b))
	}
	var removed []string
	for _, e := range ents {
		name := e.Name()
		ours := e.IsDir() && staleTempDir.MatchString(name) || e.Type().IsRegular() && atomicfile.IsTemp(name, latestFile)
		if !ours || name == latest {
			continue
		}
		path := filepath.Join(root, name)
		if err := os.RemoveAll(path); err != nil {
			slog.Warn("cannot remove the leftover of an interrupted checkpoint write", "path", path, "err", err)
			continue
		}
		removed = append(removed, path)
	}
	if len(removed) > 0 {
		slog.Info("removed the leftovers of an interrupted checkpoint write", "paths", removed)
	}
	return removed
}

// ResolveCheckpoint turns a checkpoint directory, a checkpoints/ directory
// or a run directory into the newest good checkpoint directory.
func ResolveCheckpoint(path string) (string, error) {
	if _, err := os.Stat(filepath.Join(path, stateFile)); err == nil {
		if _, err := verifyCheckpoint(path); err != nil {
			return "", err
		}
		return path, nil
	}
	runDir := path
	if filepath.Base(path) == checkpointsDir {
		runDir = filepath.Dir(path)
	}
	dir, _, err := latestGood(runDir)
	if err != nil {
		return "", err
	}
	if dir == "" {
		return "", fmt.Errorf("%s: no complete checkpoint (want a step-NNNNNN directory, a checkpoints/ directory or a run directory)", path)
	}
	return dir, nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return atomicfile.WriteFileSync(path, append(b, '\n'))
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
