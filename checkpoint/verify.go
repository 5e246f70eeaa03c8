package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/filehash"
	"github.com/memo-research/memo/internal/safetensors"
)

// Verify checks that dir is a complete checkpoint: state.json parses and
// every file's digest matches it. Resuming needs it.
func Verify(dir string) (State, error) { return verify(dir, true) }

// VerifyWeights is Verify of what a model is loaded from alone: every file
// but the optimizer's moments, which inference, export and the attacks
// never read. A user who deleted them to save disk (twice the model's
// size) could not export or score the model, and every such command
// hashed them.
func VerifyWeights(dir string) (State, error) { return verify(dir, false) }

// ReadState is dir's state.json, unverified: what a checkpoint says of
// itself (step, digests, DP and LoRA records). A missing file's error
// wraps fs.ErrNotExist: a Hugging Face directory has none.
func ReadState(dir string) (State, error) {
	var st State
	raw, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		return st, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("checkpoint %s: %s is corrupt: %w", dir, StateFile, err)
	}
	return st, nil
}

func verify(dir string, optimizer bool) (State, error) {
	st, err := ReadState(dir)
	if err != nil {
		return st, err
	}
	for _, f := range digestedFiles(st) {
		if f == OptimizerFile && !optimizer {
			continue
		}
		want, ok := st.SHA256[f]
		if !ok {
			return st, fmt.Errorf("checkpoint %s: %s records no sha256 for %s", dir, StateFile, f)
		}
		got, err := filehash.SHA256(filepath.Join(dir, f))
		if err != nil {
			return st, fmt.Errorf("checkpoint %s: %w", dir, err)
		}
		if got != want {
			// %.12q: a recorded digest can be anything a damaged state.json holds.
			return st, fmt.Errorf("checkpoint %s: %s has sha256 %s, %s recorded %.12q (truncated or corrupt)", dir, f, got[:12], StateFile, want)
		}
	}
	return st, nil
}

// LatestGood returns the newest checkpoint under runDir that verifies, the
// one latest names first; refused ones are logged with the reason. It
// returns "" when there is no checkpoint at all, and an error naming each
// one when there are some but none verifies.
func LatestGood(runDir string) (string, State, error) {
	root := filepath.Join(runDir, DirName)
	var order []string
	var refused []error
	if name, err := latestName(root); err != nil {
		slog.Warn("checkpoint refused; trying an older one", "reason", err)
		refused = append(refused, err)
	} else if name != "" {
		order = append(order, name)
	}
	dirs := stepDirs(root)
	for i := len(dirs) - 1; i >= 0; i-- {
		order = append(order, dirs[i])
	}
	seen := map[string]bool{}
	for _, name := range order {
		if seen[name] || name == "" {
			continue
		}
		seen[name] = true
		dir := filepath.Join(root, name)
		st, err := Verify(dir)
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

// refusedError is LatestGood's answer when checkpoints exist but every one
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

// ResumePoint is LatestGood for resuming a run in runDir: when every
// checkpoint there is refused it fails rather than start afresh over them,
// and says how to start afresh deliberately.
func ResumePoint(runDir string) (string, State, error) {
	dir, st, err := LatestGood(runDir)
	if err != nil {
		return "", State{}, fmt.Errorf("cannot resume: %w\nrepair or move the checkpoints away, or set train.no_resume = true to start this run afresh (overwriting them)", err)
	}
	return dir, st, nil
}

// DiscardAfter removes the step directories of runDir's checkpoints past
// step, which a run starting at step does not continue: those an older
// trajectory left (train.no_resume starts afresh, "overwriting them") or
// the damaged ones a resume fell back past. Left in place, the next save's
// pruning counted them among the newest and removed the good checkpoints
// instead, and a later command found a checkpoint of another trajectory.
// checkpoints/latest goes too when it names one of them.
func DiscardAfter(runDir string, step int) ([]string, error) {
	root := filepath.Join(runDir, DirName)
	latest, _ := latestName(root)
	var removed []string
	for _, name := range stepDirs(root) {
		n, err := strconv.Atoi(strings.TrimPrefix(name, "step-"))
		if err != nil || n <= step {
			continue
		}
		if err := os.RemoveAll(filepath.Join(root, name)); err != nil {
			return removed, fmt.Errorf("remove checkpoint %s past step %d: %w", filepath.Join(root, name), step, err)
		}
		removed = append(removed, name)
		if name == latest {
			if err := os.Remove(filepath.Join(root, LatestFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return removed, err
			}
		}
	}
	syncDir(root)
	return removed, nil
}

// ErrNoCheckpoint is Resolve's error for a path that holds no checkpoint
// at all, as opposed to a damaged one: a command that also takes other
// kinds of model directory names them in its error only then.
var ErrNoCheckpoint = errors.New("no complete checkpoint")

// MarkLatest makes dir's checkpoints/latest name dir, a step directory,
// when it does not already (a latest deleted by hand): a run resumed at
// its final checkpoint saves nothing more, and left it missing, so that
// its train stage's outputs read as changed after every run.
func MarkLatest(dir string) error {
	root, name := filepath.Split(filepath.Clean(dir))
	p := filepath.Join(root, LatestFile)
	if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) == name {
		return nil
	}
	if err := atomicfile.WriteFileSync(p, []byte(name+"\n")); err != nil {
		return fmt.Errorf("mark %s the latest checkpoint: %w", dir, err)
	}
	return nil
}

// Resolve turns a checkpoint directory, a checkpoints/ directory or a run
// directory into a checkpoint directory: the one named, else the run's
// newest (the one checkpoints/latest names, else the highest step). A
// damaged checkpoint is an error naming it, never a quiet fall-back to an
// older step: the run's outputs describe its newest, and a user who wants
// an older one names its step directory (the error says which verifies).
// Errors are bad input.
func Resolve(path string) (string, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return "", badinput.Errorf("%s: %w: it does not exist (want a step-NNNNNN directory, a checkpoints/ directory or a run directory)", path, ErrNoCheckpoint)
	}
	if _, err := os.Stat(filepath.Join(path, StateFile)); err == nil {
		if _, err := VerifyWeights(path); err != nil {
			return "", badinput.Wrap(err)
		}
		return path, nil
	}
	runDir := path
	if filepath.Base(filepath.Clean(path)) == DirName {
		runDir = filepath.Dir(filepath.Clean(path))
	}
	newest, err := Newest(runDir)
	if err != nil {
		return "", badinput.Wrap(err)
	}
	if newest == "" {
		for _, bin := range []string{"pytorch_model.bin", "pytorch_model.bin.index.json"} {
			if _, err := os.Stat(filepath.Join(path, bin)); err == nil {
				// A Hugging Face directory without model.safetensors.
				return "", badinput.Errorf("%s: holds %s, PyTorch pickle weights, which memo does not read (a pickle runs code when loaded); convert them to model.safetensors (transformers: save_pretrained(dir, safe_serialization=True))", path, bin)
			}
		}
		if _, err := os.Stat(filepath.Join(path, ModelJSONFile)); err == nil {
			// memo's own checkpoint layout, less the file that vouches
			// for its weights: a copy or a write cut short.
			return "", badinput.Errorf("%s: a memo checkpoint (it has %s) without its %s, which records the weights' sha256: copy the whole step directory, or name another step", path, ModelJSONFile, StateFile)
		}
		if m, _ := filepath.Glob(filepath.Join(path, "*.safetensors")); len(m) > 0 {
			// Weights without the config.json a Hugging Face directory has.
			return "", badinput.Errorf("%s: holds %s but no config.json: a Hugging Face model directory needs its config.json beside the weights", path, filepath.Base(m[0]))
		}
		if _, err := os.Stat(filepath.Join(path, HFConfigFile)); err == nil {
			// A Hugging Face directory whose weights are missing (a
			// download that stopped after config.json).
			return "", badinput.Errorf("%s: has a config.json but no %s or %s: a Hugging Face model directory without its weights", path, ModelFile, safetensors.IndexFile)
		}
		return "", badinput.Errorf("%s: %w (want a step-NNNNNN directory, a checkpoints/ directory or a run directory)", path, ErrNoCheckpoint)
	}
	if _, err := VerifyWeights(newest); err != nil {
		return "", badinput.Errorf("%w; it is the newest checkpoint: repair it, or name an older step directory to use that one%s", err, olderGood(runDir, newest))
	}
	return newest, nil
}

// Newest is the checkpoint a run's outputs describe, verified or not: the
// directory checkpoints/latest names, else the highest step directory; ""
// when the run has none. latest naming anything but a directory beside it
// (a path, "..") is an error.
func Newest(runDir string) (string, error) {
	root := filepath.Join(runDir, DirName)
	if name, err := latestName(root); err != nil || name != "" {
		if err != nil {
			return "", err
		}
		return filepath.Join(root, name), nil
	}
	dirs := stepDirs(root)
	if len(dirs) == 0 {
		return "", nil
	}
	return filepath.Join(root, dirs[len(dirs)-1]), nil // in step order
}

// latestName is the directory name root/latest holds ("" without the
// file). latest names a directory beside it; anything else (a path, "..")
// would load a checkpoint from outside the run, and is an error.
func latestName(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, LatestFile))
	if err != nil {
		return "", nil
	}
	name := strings.TrimSpace(string(b))
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return "", fmt.Errorf("%s names %q, not a checkpoint directory of %s", filepath.Join(root, LatestFile), name, root)
	}
	return name, nil
}

// olderGood names, for Resolve's refusal, the newest step directory other
// than newest that verifies ("" when none does).
func olderGood(runDir, newest string) string {
	dirs := stepDirs(filepath.Join(runDir, DirName))
	sort.Slice(dirs, func(i, j int) bool {
		return len(dirs[i]) > len(dirs[j]) || len(dirs[i]) == len(dirs[j]) && dirs[i] > dirs[j]
	})
	for _, d := range dirs {
		dir := filepath.Join(runDir, DirName, d)
		if filepath.Clean(dir) == filepath.Clean(newest) {
			continue
		}
		if _, err := VerifyWeights(dir); err == nil {
			return " (" + dir + " verifies)"
		}
	}
	return ""
}

// Names of what a kill mid-write leaves in checkpoints/: Save's temporary
// directory (and atomicfile's temporary copy of latest, which
// atomicfile.IsTemp recognizes).
var staleTempDir = regexp.MustCompile(`^\.tmp-step-[0-9]{6,}-[0-9]+$`)

// RemoveStaleTemps deletes, from runDir's checkpoints/, the temporary
// directories and files an interrupted checkpoint write left: only names
// Save creates, never a step-NNNNNN directory nor whatever latest names.
// Call it when a run starts, before any checkpoint is written: a write in
// flight would look stale too. Failures are logged, not fatal. It returns
// the paths removed.
func RemoveStaleTemps(runDir string) []string {
	root := filepath.Join(runDir, DirName)
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	latest := ""
	if b, err := os.ReadFile(filepath.Join(root, LatestFile)); err == nil {
		latest = strings.TrimSpace(string(b))
	}
	var removed []string
	for _, e := range ents {
		name := e.Name()
		ours := e.IsDir() && staleTempDir.MatchString(name) || e.Type().IsRegular() && atomicfile.IsTemp(name, LatestFile)
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
