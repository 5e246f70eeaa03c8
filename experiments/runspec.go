package experiments

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"

	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/plots"
)

// ReadRun reads a run directory's config.toml into its Spec: the one
// reader of a run's settings for every command (extract, eval, report,
// plots, reuse). It decodes and validates every table as Parse does (an
// unknown key, a wrong type or a bad value is a *ConfigError naming file,
// line and key) but leaves out Parse's checks of this machine (corpora
// fetched, source paths and model directories present): a finished run is
// read wherever it sits and whatever cache its machine had. ok is false,
// with Default(), when dir has no config.toml (a bare checkpoint
// directory, an imported model). A run directory (one with manifest.json)
// without its config.toml is a *ConfigError: its settings are lost, and
// the defaults in their place would attack and score it otherwise.
// [data] and [train] values that break a rule of this memo's for starting
// a run are read with a warning: the work they describe is done.
func ReadRun(dir string) (s *Spec, ok bool, err error) {
	r, err := readRun(dir)
	return r.spec, r.ok, err
}

// runRead is what readRun read of a run directory.
type runRead struct {
	spec     *Spec
	manifest *Manifest // nil where there is none readable
	config   []byte    // config.toml as read; nil where there is none
	ok       bool      // the directory has a config.toml
}

// readRun is ReadRun that also returns the run's manifest.json, as it
// read it to check config.toml against, and config.toml's bytes.
func readRun(dir string) (runRead, error) {
	path := filepath.Join(dir, runfiles.ConfigFile)
	doc, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, merr := os.Stat(filepath.Join(dir, ManifestFile)); merr == nil {
			return runRead{}, &ConfigError{File: path, Msg: "missing from a run directory (it has manifest.json): the run's settings are read from it; restore it, or run the spec again"}
		}
		return runRead{spec: Default()}, nil
	}
	if err != nil {
		return runRead{}, &ConfigError{File: path, Msg: fmt.Sprintf("cannot read the run's spec: %v", badinput.PathCause(err))}
	}
	m, _ := ReadManifest(dir) // nil when there is none readable
	if err := checkRecordedConfig(m, path, doc); err != nil {
		return runRead{}, err
	}
	name := filepath.Base(filepath.Clean(dir))
	s, err := decode(path, doc, name)
	if err != nil {
		// The [data] and [train] rules judge a run about to start. One
		// an older memo built and trained under rules since tightened
		// (DP-SGD with match_supervised_tokens, refused since 2bda819)
		// is still read for its results, with the rule named.
		lenient, lerr := decode(path, doc, name, "data", "train")
		if lerr != nil {
			return runRead{}, err
		}
		key := path
		if abs, err := filepath.Abs(path); err == nil {
			key = abs // read by a relative and an absolute name in one command
		}
		if _, seen := oldRuleWarned.LoadOrStore(key, true); !seen {
			slog.Warn("the run's settings break a rule of this memo's for starting a run; its results are read as they are", "rule", err.Error())
		}
		s = lenient
	}
	return runRead{spec: s, manifest: m, config: doc, ok: true}, nil
}

// checkRecordedConfig refuses a run's config.toml (doc, at path) whose
// sha256 is not the one its manifest.json recorded when memo run wrote
// it: emptied or cut short, it decoded as the defaults' keys, and extract
// and eval redid the run's work under settings it never had, over its
// own results.
func checkRecordedConfig(m *Manifest, path string, doc []byte) error {
	if got, want, ok := recordedConfigMatches(m, doc); !ok {
		return &ConfigError{File: path, Msg: fmt.Sprintf("not the file memo run wrote (sha256 %.12s…, %s records %.12s…): damaged or edited since; restore it, or run the spec again with --force", got, ManifestFile, want)}
	}
	return nil
}

// recordedConfigMatches reports whether doc, a run's config.toml, has the
// sha256 the run's manifest m recorded (want) when memo run wrote it; got
// is doc's. Only memo run writes either file, a new manifest with each
// config.toml. A run with no readable manifest (m nil), or one that
// records no hash (memo data build's, an older memo's), matches.
func recordedConfigMatches(m *Manifest, doc []byte) (got, want string, ok bool) {
	if m == nil || m.ConfigHash == "" {
		return "", "", true
	}
	sum := sha256.Sum256(doc)
	got = hex.EncodeToString(sum[:])
	return got, m.ConfigHash, got == m.ConfigHash
}

// oldRuleWarned holds the config.toml files ReadRun has warned about, so
// that a command reading a run's spec several times warns once.
var oldRuleWarned sync.Map

// Value is the value of a dotted key of the spec ("goldfish.k",
// "model.preset"), typed as the Config field that holds it; ok is false
// when the spec has no such key.
func (s *Spec) Value(key string) (v any, ok bool) {
	f := reflect.ValueOf(s).Elem()
	for _, part := range strings.Split(key, ".") {
		for f.Kind() == reflect.Pointer || f.Kind() == reflect.Interface {
			if f.IsNil() {
				return nil, false
			}
			f = f.Elem()
		}
		if f.Kind() != reflect.Struct {
			return nil, false
		}
		found := false
		for i := 0; i < f.NumField(); i++ {
			if tomlName(f.Type().Field(i)) == part {
				f, found = f.Field(i), true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return f.Interface(), true
}

// PlotsSpec is what the report takes from the spec: the loss the run
// trained with, a name for its model and the value of any key a sweep
// column names.
func (s *Spec) PlotsSpec() *plots.RunSpec {
	return &plots.RunSpec{
		Goldfish:              s.Goldfish,
		Model:                 s.modelLabel(),
		MatchSupervisedTokens: s.Train.MatchSupervisedTokens,
		Value: func(key string) any {
			v, _ := s.Value(key)
			return v
		},
	}
}

// modelLabel names the model in the report's legends: its preset, the
// directory of an imported model (whose preset key is a default that does
// not apply), or its width and depth when it has no preset.
func (s *Spec) modelLabel() string {
	if from := s.Model.InitFrom; from != "" {
		return filepath.Base(strings.TrimPrefix(from, "hf:"))
	}
	if s.Model.Preset != "" {
		return s.Model.Preset
	}
	if s.Model.Dim > 0 {
		return fmt.Sprintf("d=%d, %d layers", s.Model.Dim, s.Model.Layers)
	}
	return ""
}

// ReadPlotsSpec is plots.SpecReader over ReadRun: the report reads each
// run's spec through it (plots cannot import this package, which draws
// its figures through plots). A run without config.toml has none (nil).
func ReadPlotsSpec(dir string) (*plots.RunSpec, error) {
	r, err := readRun(dir)
	if err != nil || !r.ok {
		return nil, err
	}
	if why := movedSource(r.manifest, dir); why != "" {
		return nil, badinput.Errorf("%s: %s: the report publishes no number from it (`memo run` on its spec says what to do)", dir, why)
	}
	if why := unfinishedStage(r.manifest); why != "" {
		return nil, fmt.Errorf("%w: manifest.json: %s (`memo run` on its spec finishes it)", plots.ErrUnfinishedRun, why)
	}
	if why := changedOutput(r.manifest, dir, reportReads...); why != "" {
		return nil, badinput.Errorf("%s: %s: memo run on it redoes that stage; the report publishes no number from it", dir, why)
	}
	if why := stalePoint(dir, r.config); why != "" {
		return nil, fmt.Errorf("%w: %s differs from its point's spec (%s); memo sweep on the spec redoes it", plots.ErrStaleRun, dir, why)
	}
	return r.spec.PlotsSpec(), nil
}

// unfinishedStage names the first stage before plots that a run's
// manifest m (nil: none) records as failed or running: a run being
// redone (training resumed after its newest checkpoint went) still holds
// the earlier attempt's scores, which a report would put beside the new
// training's loss. A pending stage is one that never ran (memo run
// --stages, or by hand), and is no sign of a redo.
func unfinishedStage(m *Manifest) string {
	if m == nil {
		return ""
	}
	for _, st := range Stages {
		if st == "plots" {
			continue // the report is the plots stage's own work
		}
		for _, rec := range m.Stages {
			if rec.Name != st || rec.Status != StatusFailed && rec.Status != StatusRunning {
				continue
			}
			why := "stage " + st + " " + rec.Status
			if rec.Error != "" {
				why += " (" + rec.Error + ")"
			}
			return why
		}
	}
	return ""
}

// movedSource says which stage of a run reuses another run's training
// (--reuse-train) that has been trained again, or removed, since the run
// attacked it ("" for none): its links now lead to another model than
// its scores describe.
func movedSource(m *Manifest, dir string) string {
	if m == nil {
		return ""
	}
	for _, rec := range m.Stages {
		if rec.sourceMoved(dir) {
			return fmt.Sprintf("its %s stage links %s, trained again or gone since the run attacked it", rec.Name, rec.ReusedFrom)
		}
	}
	return ""
}

// reportReads are the files of a run memo report takes numbers from and
// checks against the manifest: metrics.arrow, which training alone writes
// and whose Arrow stream holds no checksum. scores.parquet and
// summary.json are checked by their readers, and memo eval may rewrite
// them (with a corpus index built since) without a stage's record.
var reportReads = []string{runfiles.MetricsFile}

// changedOutput says which of a run's files (rels, relative to dir) is
// not as the stage that wrote it recorded it in manifest.json (size and
// sha256), "" when all are or the manifest m (nil for none) records
// none of them: a metrics.arrow damaged in its middle still read, and the
// report put -0.000 where the run's final train loss was 4.939.
func changedOutput(m *Manifest, dir string, rels ...string) string {
	if m == nil {
		return ""
	}
	want := map[string]Output{}
	for _, st := range m.Stages {
		if st.Status != StatusDone {
			continue // a stage running again rewrites its files
		}
		for _, rel := range rels {
			if out, ok := st.Outputs[rel]; ok {
				want[rel] = out
			}
		}
	}
	return brokenOutput(dir, want)
}
