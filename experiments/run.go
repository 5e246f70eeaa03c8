package experiments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/dist"
	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/rankenv"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/internal/runlock"
	"github.com/memo-research/memo/internal/torchx"
)

// Stages are the stages of a run, in order.
var Stages = []string{"data", "train", "references", "extract", "eval", "plots"}

// modelStages are the stages that run models, each with the manifest's
// Machine.Devices key of the device it runs them on: on the CPU, where
// OpenBLAS's kernel sets their speed.
var modelStages = map[string]string{"train": "train", "references": "train", "extract": "extract", "eval": "extract"}

// Options adjust Run.
type Options struct {
	// Force restarts a run whose directory holds a different spec; the old
	// directory is kept, renamed with a timestamp suffix.
	Force bool
	// Stages limits the run to these stages (all when empty); multi-process
	// training runs data, train and the rest as separate steps.
	Stages []string
	// Train, when set, replaces the in-process training stage, e.g. with a
	// launcher that starts one process per rank.
	Train func(ctx context.Context, spec *Spec, runDir string) error
	// Ranks is the number of training processes Train will start (memo
	// run --nproc); 0 means this process's launcher world size.
	Ranks int
	// ReuseTrain, when set, is the directory of a finished run that trained
	// exactly the model this spec asks for (same TrainingKey): the data and
	// train stages link its data/, checkpoints/ and metrics.arrow instead of
	// running, so an attack-only sweep point trains nothing.
	ReuseTrain string
	// BeforeTrain, when set, is called just before this process trains
	// in-process (rank 0 of a launch frees the other ranks to train).
	BeforeTrain func() error
	// Job is the launch recorded in manifest.json (launcher, world size,
	// threads, Slurm job ids); nil keeps what it holds.
	Job *rankenv.Job
}

// RunLockStale is how long a run directory's lock may go without its
// holder's heartbeat (every RunLockStale/10) before a process on another
// host takes it over: the holder's node died or was cut off. On the
// holder's own host its PID decides, at once.
const RunLockStale = 5 * time.Minute

// stageFunc runs one stage; tests replace it to exercise the bookkeeping
// without training a model.
var stageFunc = runStage

// ErrSpecChanged is returned when a run directory holds a different spec.
var ErrSpecChanged = errors.New("run directory holds a different spec")

// RunDir is where Run puts a spec's run.
func RunDir(spec *Spec, runsRoot string) string { return filepath.Join(runsRoot, spec.Name) }

// Run runs data → train → extract → eval → plots into runsRoot/<name>.
// A finished stage (recorded in manifest.json) is not run again, so a
// finished run is a no-op and an interrupted one resumes at the stage that
// stopped; training itself resumes from its latest checkpoint.
func Run(ctx context.Context, spec *Spec, runsRoot string, opt Options) (string, error) {
	dir := RunDir(spec, runsRoot)
	if err := checkRun(spec, dir, opt); err != nil {
		return "", err
	}
	if processRank() > 0 {
		// Other ranks of a multi-process stage do the work and leave
		// config.toml and manifest.json to rank 0.
		for _, st := range opt.Stages {
			if err := stageFunc(ctx, st, spec, dir, opt); err != nil {
				// The stage's error names the rank (rankenv.Tag).
				return dir, fmt.Errorf("run %s: stage %s: %w", spec.Name, st, rankenv.Tag(processRank(), worldSize(), err))
			}
		}
		return dir, nil
	}
	conf, err := spec.TOML()
	if err != nil {
		return dir, err
	}
	hash, err := spec.Hash()
	if err != nil {
		return dir, err
	}
	// A sweep's directory (memo sweep's marker, and no run's config.toml)
	// is no run's: a run there would mix its files with the grid's.
	if _, err := os.Stat(filepath.Join(dir, SweepIndexFile)); err == nil {
		if _, err := os.Stat(filepath.Join(dir, runfiles.ConfigFile)); errors.Is(err, fs.ErrNotExist) {
			return dir, badinput.Errorf("run %s: %s is a sweep's directory (it holds %s): give this run another name, or --runs DIR", spec.Name, dir, SweepIndexFile)
		}
	}
	// One process at a time works in a run directory: rank 0 of a launch
	// holds it for its ranks. The ranks memo run --nproc starts work in
	// the directory their launcher holds.
	if !dist.Launched() {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return dir, err
		}
		lock, err := acquireRunLock(dir, RunLockStale)
		if atomicfile.Unwritable(err) && finishedIntact(spec, dir) {
			// A finished run on read-only storage (an archive, another
			// user's): there is nothing to do, and nothing to lock for.
			slog.Info("run finished; its directory is read-only: nothing to do", "run", spec.Name, "dir", dir)
			return dir, nil
		}
		if err != nil {
			return dir, fmt.Errorf("run %s: %w", spec.Name, err)
		}
		stop := lock.Heartbeat(RunLockStale / 10)
		defer func() {
			stop()
			if err := lock.Release(); err != nil {
				slog.Warn("release the run directory's lock", "err", err)
			}
		}()
	}
	m, err := openRunDir(dir, spec, conf, hash, opt.Force)
	if err != nil {
		return dir, err
	}
	if stale, err := removeStaleTemps(dir); err != nil {
		return dir, fmt.Errorf("run %s: remove what a killed run left: %w", spec.Name, err)
	} else if len(stale) > 0 {
		slog.Info("removed what a killed run was writing", "run", spec.Name, "paths", stale)
	}
	if env := resultEnvironment(); !maps.Equal(env, m.Environment) {
		if m.Stage(Stages[0]).Status == StatusDone {
			slog.Warn("the environment variables that change results differ from the run's earlier process; manifest.json records this one's", "now", env, "before", m.Environment)
		}
		m.Environment = env
	}
	if opt.Job != nil {
		m.Launch = opt.Job
	}
	if m.Machine.Devices == nil {
		m.Machine.Devices = map[string]string{"train": deviceName(spec.Train.Device), "extract": deviceName(spec.ExtractStage().Device)}
	}
	// upstreamChanged: a stage run again wrote other outputs than before,
	// so the done stages after it, which read them, run again too.
	upstreamChanged := false
	for _, st := range Stages {
		// With --reuse-train, data and train are links to another run's
		// outputs, made whatever --stages names: the stages asked for
		// read them (checkStages counted them done).
		linked := opt.ReuseTrain != "" && len(reusedStages[st]) > 0
		if len(opt.Stages) > 0 && !contains(opt.Stages, st) && !linked {
			continue
		}
		rec := m.Stage(st)
		moved := ""
		if rec.sourceMoved(dir) {
			moved = fmt.Sprintf("its %s links lead to %s, whose %s stage is not the one this run attacked (trained again, or gone)", strings.Join(reusedStages[st], " and "), rec.ReusedFrom, st)
			if !reuses(opt, st) {
				return dir, badinput.Errorf("run %s: %s: start it over with --force (with --reuse-train on a run that trained what it asks for, or training its own)", spec.Name, moved)
			}
		}
		if rec.Status == StatusDone {
			broken := brokenOutput(dir, rec.Outputs)
			if broken == "" {
				broken = moved
			}
			stale := ""
			if broken == "" && !upstreamChanged {
				if stale, err = staleStage(st, spec, dir); err != nil {
					return dir, fmt.Errorf("run %s: stage %s: %w", spec.Name, st, err)
				}
				if stale == "" {
					slog.Debug("stage already done", "run", spec.Name, "stage", st)
					continue
				}
			}
			switch {
			case broken != "":
				// By hand, or by memo eval, extract or report run on the
				// directory itself, which rewrite the stages' files.
				slog.Warn("a finished stage's output is missing or changed since the stage wrote it (by hand, or by a memo command run on the directory): running the stage again", "run", spec.Name, "stage", st, "output", broken)
			case stale != "":
				slog.Warn("a finished stage's work is not what this memo would do: running the stage again", "run", spec.Name, "stage", st, "why", stale)
			default:
				slog.Warn("an earlier stage wrote other outputs: running this one again", "run", spec.Name, "stage", st)
			}
		}
		if err := ctx.Err(); err != nil {
			return dir, err
		}
		changed, err := recordStage(ctx, st, spec, dir, opt, m)
		if err != nil {
			return dir, fmt.Errorf("run %s: stage %s: %w", spec.Name, st, err)
		}
		// Relinked to a source trained again, the links read the same
		// and yet lead to another model: what reads them runs again.
		upstreamChanged = upstreamChanged || changed || moved != ""
	}
	return dir, nil
}

// staleStage says why a finished stage's recorded work is not what this
// memo would do for spec ("" when it is): today, reference models
// trained under rules since changed (staleReferences).
func staleStage(st string, spec *Spec, dir string) (string, error) {
	if st == "references" {
		return staleReferences(spec, dir)
	}
	return "", nil
}

// checkRun refuses, before the run directory is made, what would fail
// later: a sweep, a launch without its environment, ranks the batch
// cannot split, stages without what they read, a source --reuse-train
// cannot link.
func checkRun(spec *Spec, dir string, opt Options) error {
	if spec.IsSweep() {
		return fmt.Errorf("%s is a sweep: run it with RunSweep", spec.file)
	}
	if err := checkLaunchEnv(); err != nil {
		return err
	}
	if err := spec.CheckRanks(max(opt.Ranks, worldSize())); err != nil {
		return err
	}
	if err := checkStages(spec, dir, opt); err != nil {
		return err
	}
	for _, st := range Stages {
		if reuses(opt, st) && (len(opt.Stages) == 0 || contains(opt.Stages, st)) {
			if err := checkReusable(st, spec, opt.ReuseTrain); err != nil {
				return err
			}
		}
	}
	return nil
}

// reuses reports whether stage st links another run's outputs
// (--reuse-train) instead of running.
func reuses(opt Options, st string) bool { return opt.ReuseTrain != "" && reusedStages[st] != nil }

// recordStage runs (or links) stage st and records it in m, its outputs
// with their sums; changed reports whether it wrote other outputs than
// the run recorded before, so that the stages after it run again.
func recordStage(ctx context.Context, st string, spec *Spec, dir string, opt Options, m *Manifest) (changed bool, err error) {
	rec := m.Stage(st)
	prevOutputs, interrupted := rec.Outputs, rec.Status == StatusRunning || rec.Status == StatusFailed
	before, err := runFiles(dir)
	if err != nil {
		return false, err
	}
	if interrupted {
		// An attempt killed before it recorded anything may have written
		// files this attempt keeps as they are (a dataset linked in): no
		// stage accounts for them, and they are this stage's outputs too.
		before = recordedOnly(before, m)
	}
	rec.Status, rec.Started, rec.Error, rec.Memo = StatusRunning, time.Now().UTC(), "", stageRevision()
	if err := m.write(dir); err != nil {
		return false, err
	}
	if key, ok := modelStages[st]; ok && m.Machine.Devices[key] == "cpu" {
		warnBLAS()
	}
	slog.Info("stage start", "run", spec.Name, "stage", st)
	switch {
	case st == "references" && spec.MIA.References == 0:
		// Nothing to train or score: the stage is done as it starts.
	case reuses(opt, st):
		err = linkTrained(st, spec, dir, opt.ReuseTrain)
	default:
		err = stageFunc(ctx, st, spec, dir, opt)
	}
	rec = m.Stage(st)
	rec.ReusedFrom, rec.ReusedOutputs = "", ""
	if reuses(opt, st) && err == nil {
		rec.ReusedFrom = opt.ReuseTrain
		rec.ReusedOutputs = reusedDigest(dir, st)
	}
	rec.Finished = time.Now().UTC()
	rec.Seconds = rec.Finished.Sub(rec.Started).Seconds()
	if err != nil {
		rec.Status, rec.Error = StatusFailed, err.Error()
		if werr := m.write(dir); werr != nil {
			slog.Error("write manifest", "err", werr)
		}
		return false, err
	}
	after, err := runFiles(dir)
	if err != nil {
		return false, fmt.Errorf("record outputs: %w", err)
	}
	wrote, err := stageOutputs(dir, before, after)
	if err != nil {
		return false, fmt.Errorf("record outputs: %w", err)
	}
	// A stage run again may rewrite only some of its outputs (extract
	// keeps an intact attack of extract.checkpoints): the rest stand.
	outs := map[string]Output{}
	for rel, o := range prevOutputs {
		if _, ok := after[rel]; ok {
			outs[rel] = o
		}
	}
	for rel, o := range wrote {
		outs[rel] = o
	}
	changed = prevOutputs != nil && !sameOutputs(prevOutputs, outs)
	rec.Outputs = outs
	rec.Status = StatusDone
	if st == "train" && spec.Train.DP.Enabled {
		if m.DP, err = trainedDP(dir); err != nil {
			return changed, fmt.Errorf("record DP-SGD's guarantee: %w", err)
		}
	}
	if err := m.write(dir); err != nil {
		return changed, fmt.Errorf("record outputs: %w", err)
	}
	slog.Info("stage done", "run", spec.Name, "stage", st, "seconds", fmt.Sprintf("%.1f", rec.Seconds))
	return changed, nil
}

// openRunDir creates the run directory with config.toml and manifest.json,
// or reopens an existing one after checking it holds the same spec.
func openRunDir(dir string, spec *Spec, conf []byte, hash string, force bool) (*Manifest, error) {
	old, err := os.ReadFile(filepath.Join(dir, runfiles.ConfigFile))
	orphan := errors.Is(err, os.ErrNotExist) && madeByARun(dir)
	switch {
	case err == nil && !bytes.Equal(old, conf), orphan:
		if !force && orphan {
			// Checkpoints of unknown settings: resumed, they made a run
			// that claims this spec's settings throughout.
			return nil, fmt.Errorf("%w: %s has no %s but holds what a run made (%s): the settings its model was trained with are unknown; restore %s, or pass --force to move the old run aside and start again", ErrSpecChanged,
				dir, runfiles.ConfigFile, ManifestFile+" or "+checkpoint.DirName+"/", runfiles.ConfigFile)
		}
		if !force {
			var was map[string]any
			if terr := toml.Unmarshal(old, &was); terr != nil {
				return nil, fmt.Errorf("%w: %s is damaged (not TOML: %v); pass --force to move the old run aside and start again", ErrSpecChanged,
					filepath.Join(dir, runfiles.ConfigFile), strings.ReplaceAll(terr.Error(), "\n", " "))
			}
			m, _ := ReadManifest(dir) // nil when there is none readable
			if _, _, ok := recordedConfigMatches(m, old); !ok {
				// Emptied or cut short, it would read as "another spec"
				// with a hundred keys changed.
				return nil, fmt.Errorf("%w: %s is not the file memo run wrote (its sha256 is not the one %s records): damaged or edited since; restore it, or pass --force to move the old run aside and start again", ErrSpecChanged,
					filepath.Join(dir, runfiles.ConfigFile), ManifestFile)
			}
			return nil, fmt.Errorf("%w: %s was made from another spec%s; give this one another name%s, or pass --force to move the old run aside and start again", ErrSpecChanged, dir, differNote(old, conf), reuseHint(dir, spec))
		}
		aside := fmt.Sprintf("%s.old-%s", dir, time.Now().UTC().Format("20060102T150405"))
		if err := os.Rename(dir, aside); err != nil {
			return nil, fmt.Errorf("move old run aside: %w", err)
		}
		// The lock this process holds moved with the old run: bring it back
		// to the directory it locks.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.Rename(filepath.Join(aside, runlock.FileName), filepath.Join(dir, runlock.FileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("move the run's lock back from %s: %w", aside, err)
		}
		slog.Warn("spec changed: old run moved aside", "old", aside)
		followMovedTrainer(dir, aside)
	case err == nil:
		m, err := ReadManifest(dir)
		if err == nil {
			return m, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			// Without its record the run is still whole: run again, each
			// stage checks what is on disk and training resumes.
			return nil, badinput.Errorf("%v: the run's record is damaged; move it aside and run again to redo each stage from what is on disk (training resumes from its newest checkpoint)", err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, runfiles.ConfigFile), err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, runfiles.ConfigFile), conf); err != nil {
		return nil, err
	}
	m := newManifest(spec.Name, hash)
	for _, s := range Stages {
		m.Stage(s)
	}
	return m, m.write(dir)
}

// madeByARun says whether dir holds a run's record or checkpoints.
func madeByARun(dir string) bool {
	for _, p := range []string{ManifestFile, checkpoint.DirName} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			return true
		}
	}
	return false
}

// stageNeeds are the stages whose outputs a stage reads.
var stageNeeds = map[string][]string{
	"train":      {"data"},
	"references": {"data", "train"}, // the target's model scores the references' signals
	"extract":    {"train"},
	"eval":       {"extract", "references"},
	"plots":      {"eval"},
}

// checkStages refuses, before the run directory is touched, opt.Stages
// naming an unknown stage or, on rank 0, a stage that reads one neither
// asked for nor done in dir under this spec (a changed spec starts a new
// run, where nothing is done); data and train reused from another run
// count as done.
func checkStages(spec *Spec, dir string, opt Options) error {
	if len(opt.Stages) == 0 {
		return nil
	}
	asked := strings.Join(opt.Stages, ",")
	for _, st := range opt.Stages {
		if !contains(Stages, st) {
			return badinput.Errorf("--stages %s: unknown stage %q: want some of %s, comma-separated", asked, st, strings.Join(Stages, ", "))
		}
	}
	if processRank() > 0 {
		// Rank 0 checked, and wrote the manifest these ranks would read:
		// on another node it may not show rank 0's data stage done yet.
		return nil
	}
	done := map[string]bool{}
	if opt.ReuseTrain != "" {
		done["data"], done["train"] = true, true
	}
	conf, err := spec.TOML()
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(filepath.Join(dir, runfiles.ConfigFile)); err == nil && bytes.Equal(old, conf) {
		if m, err := ReadManifest(dir); err == nil {
			for _, st := range Stages {
				done[st] = done[st] || m.Stage(st).Status == StatusDone
			}
		}
	}
	for _, st := range opt.Stages {
		for _, need := range stageNeeds[st] {
			if (need == "references" || st == "references") && spec.MIA.References == 0 {
				continue // no reference models: nothing to read or score
			}
			if !done[need] && !contains(opt.Stages, need) {
				return badinput.Errorf("--stages %s: %s reads what %s writes, which has not run in %s for this spec: add %s to the stages, or run them all first", asked, st, need, dir, need)
			}
		}
	}
	return nil
}

// acquireRunLock takes a run directory's lock: runlock's, or a test's
// refusal (tests run as root, whom no permission stops).
var acquireRunLock = runlock.AcquireStaleAfter

// finishedIntact is Finished with every stage's recorded outputs as the
// stage wrote them: a run that memo run would leave as it is.
func finishedIntact(spec *Spec, runDir string) bool {
	m, ok := finished(spec, runDir)
	if !ok {
		return false
	}
	for _, st := range m.Stages {
		if brokenOutput(runDir, st.Outputs) != "" {
			return false
		}
	}
	return movedSource(m, runDir) == ""
}

// Finished reports whether runDir holds a complete run of spec.
func Finished(spec *Spec, runDir string) bool {
	_, ok := finished(spec, runDir)
	return ok
}

// finished is Finished, with the manifest it read when it is true.
func finished(spec *Spec, runDir string) (*Manifest, bool) {
	conf, err := spec.TOML()
	if err != nil {
		return nil, false
	}
	old, err := os.ReadFile(filepath.Join(runDir, runfiles.ConfigFile))
	if err != nil || !bytes.Equal(old, conf) {
		return nil, false
	}
	m, err := ReadManifest(runDir)
	if err != nil || !m.Done(Stages) {
		return nil, false
	}
	// A sweep skips its finished points: one whose references were made
	// under other rules is not finished (staleStage).
	if why, err := staleReferences(spec, runDir); err != nil || why != "" {
		return nil, false
	}
	return m, true
}

// deviceName is a stage's device as the manifest records it.
func deviceName(d string) string {
	if cuda, i, err := torchx.ParseDevice(d); err == nil {
		if !cuda {
			return "cpu"
		}
		return fmt.Sprintf("cuda:%d", i)
	}
	return d
}

// configDiff is specDiff of two config.toml documents; an error when
// either is not TOML.
func configDiff(was, now []byte) (string, error) {
	var a, b map[string]any
	if err := toml.Unmarshal(was, &a); err != nil {
		return "", err
	}
	if err := toml.Unmarshal(now, &b); err != nil {
		return "", err
	}
	return specDiff(a, b), nil
}

// differNote is configDiff as the refusals of another spec put it after
// "made from another spec": " (key: old → new, ...)", or "" when it names
// no key.
func differNote(was, now []byte) string {
	if d, err := configDiff(was, now); err == nil && d != "" {
		return " (" + d + ")"
	}
	return ""
}

// reuseHint is the refusal's pointer to --reuse-train where the run in
// dir trained the model spec asks for and only attack, reporting or
// reference settings differ: another name alone would train it again.
func reuseHint(dir string, spec *Spec) string {
	was, ok, err := ReadRun(dir)
	if err != nil || !ok {
		return ""
	}
	a, errA := was.TrainingKey()
	b, errB := spec.TrainingKey()
	if errA != nil || errB != nil || a != b {
		return ""
	}
	return fmt.Sprintf(" (only settings that leave training alone differ: add --reuse-train %s to attack its model rather than train it again)", dir)
}

// specDiff names the keys whose values differ between two resolved specs,
// as "key: old → new", the first three in key order and a count of the
// rest; "" when none differs.
func specDiff(was, now map[string]any) string {
	a, b := map[string]string{}, map[string]string{}
	flattenSpec("", was, a)
	flattenSpec("", now, b)
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		va, okA := a[k]
		vb, okB := b[k]
		switch {
		case va == vb && okA == okB:
			continue
		case !okA:
			va = "unset"
		case !okB:
			vb = "unset"
		}
		diffs = append(diffs, k+": "+va+" → "+vb)
	}
	if len(diffs) > 3 {
		diffs = append(diffs[:3], fmt.Sprintf("and %d more", len(diffs)-3))
	}
	return strings.Join(diffs, ", ")
}

// flattenSpec writes each leaf of a decoded TOML table into out under its
// dotted key, with its value as JSON writes it.
func flattenSpec(prefix string, table map[string]any, out map[string]string) {
	for k, v := range table {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok {
			flattenSpec(key, sub, out)
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			out[key] = fmt.Sprint(v)
			continue
		}
		out[key] = string(b)
	}
}
