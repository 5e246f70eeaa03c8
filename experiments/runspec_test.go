package experiments

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/plots"
)

// writeRun writes doc as dir/config.toml.
func writeRun(t *testing.T, doc string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, runfiles.ConfigFile), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReadRunRoundTrip: the config.toml memo run writes (the resolved
// spec) reads back as the spec that wrote it, key for key.
func TestReadRunRoundTrip(t *testing.T) {
	for _, tc := range []struct{ name, doc string }{
		{"defaults", "name = \"x\"\n"},
		{"goldfish and a device", "device = \"cuda:1\"\n[goldfish]\nstrategy = \"hash-table\"\nk = 4\nh = 13\n[extract]\nsplits = [\"target\"]\n"},
		{"a model without preset and checkpoint steps", "[model]\npreset = \"\"\ndim = 64\nlayers = 2\nheads = 2\ncontext = 256\n[train]\nkeep_checkpoints = 0\n[extract]\ncheckpoints = [2, 4]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := ParseBytes("x.toml", []byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			written, err := spec.TOML()
			if err != nil {
				t.Fatal(err)
			}
			got, ok, err := ReadRun(writeRun(t, string(written)))
			if err != nil || !ok {
				t.Fatalf("ReadRun = %v, %v", ok, err)
			}
			again, err := got.TOML()
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(written) {
				t.Errorf("read back as\n%s\nwant\n%s", again, written)
			}
		})
	}
}

// TestReadRunErrors: a run's config.toml is read as strictly as a spec
// (unknown keys, wrong types and bad values name file, line and key), but
// nothing of this machine is checked: a finished run whose corpus is not
// here still reads.
func TestReadRunErrors(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"unknown key", "[extract]\nsufix = 8\n", `config.toml:2: extract.sufix: unknown key "sufix" in [extract]; did you mean "suffix"?`},
		{"wrong type", "[eval]\nbootstrap = \"many\"\n", "config.toml:2: eval.bootstrap"},
		{"bad value", "[goldfish]\nk = -1\n", "goldfish.k"},
		{"syntax", "[extract\n", "config.toml:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ReadRun(writeRun(t, tc.doc))
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("ReadRun = %v, want a one-line *ConfigError containing %q", err, tc.want)
			}
		})
	}
	if _, ok, err := ReadRun(writeRun(t, "[data]\nsources = [\"txt:/nowhere/at/all\"]\n")); err != nil || !ok {
		t.Errorf("a run whose source directory is gone: %v, %v; want it read", ok, err)
	}
	// A run an older memo trained under a rule since added (2bda819
	// refused DP-SGD with match_supervised_tokens) reads for its results;
	// a bad value outside [data] and [train] is still refused above.
	old := "[train]\nmatch_supervised_tokens = 4\n[train.dp]\nenabled = true\nnoise_multiplier = 1.0\n"
	if _, err := ParseBytes("old.toml", []byte(old)); err == nil || !strings.Contains(err.Error(), "train.match_supervised_tokens = 4 with train.dp.enabled") {
		t.Fatalf("the rule this case relies on is gone: %v", err)
	}
	if s, ok, err := ReadRun(writeRun(t, old)); err != nil || !ok || s.Train.MatchSupervisedTokens != 4 || !s.Train.DP.Enabled {
		t.Errorf("a run trained under an older rule: %v, %v; want it read as written", ok, err)
	}
	// So is one with pretraining passes under DP-SGD (refused since the
	// passes were found mixed into every sampled step).
	pre := "[data]\nbackground = 16\npretrain_passes = 2\n[train.dp]\nenabled = true\nnoise_multiplier = 1.0\n"
	if s, ok, err := ReadRun(writeRun(t, pre)); err != nil || !ok || s.Data.PretrainPasses != 2 {
		t.Errorf("a DP run with pretraining passes: %v, %v; want it read as written", ok, err)
	}
	s, ok, err := ReadRun(t.TempDir())
	if err != nil || ok || !reflect.DeepEqual(s, Default()) {
		t.Errorf("no config.toml: %v, %v; want the defaults and ok false", ok, err)
	}
}

// TestReadRunDamagedConfig: a run's config.toml that is not the file memo
// run wrote (its sha256 not manifest.json's) is refused, emptied or cut
// short: read as defaults, extract and eval redid the run under settings
// it never had. As written it reads; without a manifest it reads as it is.
func TestReadRunDamagedConfig(t *testing.T) {
	spec := Default()
	spec.Name = "x"
	spec.Extract.Suffix = 16
	conf, err := spec.TOML()
	if err != nil {
		t.Fatal(err)
	}
	hash, err := spec.Hash()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, doc string
		ok        bool
	}{
		{"as written", string(conf), true},
		{"emptied", "", false},
		{"cut short", string(conf[:len(conf)/2]), false},
	} {
		dir := writeRun(t, tc.doc)
		if err := newManifest("x", hash).write(dir); err != nil {
			t.Fatal(err)
		}
		s, ok, err := ReadRun(dir)
		var ce *ConfigError
		switch {
		case tc.ok && (err != nil || !ok || s.Extract.Suffix != 16):
			t.Errorf("%s: %v, %v", tc.name, ok, err)
		case !tc.ok && (!errors.As(err, &ce) || !strings.Contains(err.Error(), "not the file memo run wrote")):
			t.Errorf("%s: %v, want a ConfigError saying the file is not the one memo run wrote", tc.name, err)
		}
	}
	if s, ok, err := ReadRun(writeRun(t, "")); err != nil || !ok || s.Extract.Suffix == 16 {
		t.Errorf("an empty config.toml without a manifest: %v, %v; want the defaults", ok, err)
	}
}

// TestReadPlotsSpecChangedOutput: a file the report takes numbers from
// that is not as its stage recorded it (same size, bytes changed in the
// middle) is refused by name; as written it passes.
func TestReadPlotsSpecChangedOutput(t *testing.T) {
	spec := Default()
	spec.Name = "x"
	conf, _ := spec.TOML()
	hash, _ := spec.Hash()
	dir := writeRun(t, string(conf))
	metrics := filepath.Join(dir, runfiles.MetricsFile)
	body := []byte("0123456789abcdef")
	if err := os.WriteFile(metrics, body, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	m := newManifest("x", hash)
	train := m.Stage("train")
	train.Status = StatusDone
	train.Outputs = map[string]Output{runfiles.MetricsFile: {Size: int64(len(body)), SHA256: hex.EncodeToString(sum[:])}}
	if err := m.write(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPlotsSpec(dir); err != nil {
		t.Fatalf("as written: %v", err)
	}
	copy(body[6:], "\xde\xad\xbe\xef")
	if err := os.WriteFile(metrics, body, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPlotsSpec(dir); !badinput.Is(err) || !strings.Contains(err.Error(), "metrics.arrow changed since the stage wrote it") {
		t.Errorf("a changed metrics.arrow: %v, want bad input naming it", err)
	}
}

// TestReadPlotsSpecUnfinished: a run whose manifest records a stage
// before plots as failed or running (training redone after its newest
// checkpoint went, interrupted) holds an earlier attempt's scores: the
// report refuses it, naming the stage; pending stages (never run, as
// with --stages) and the plots stage itself do not count.
func TestReadPlotsSpecUnfinished(t *testing.T) {
	spec := Default()
	spec.Name = "x"
	conf, _ := spec.TOML()
	hash, _ := spec.Hash()
	for _, tc := range []struct {
		name   string
		status map[string]string
		want   string
	}{
		{"all done", map[string]string{"data": StatusDone, "train": StatusDone, "extract": StatusDone, "eval": StatusDone}, ""},
		{"references pending", map[string]string{"data": StatusDone, "train": StatusDone, "eval": StatusDone}, ""},
		{"plots running", map[string]string{"train": StatusDone, "eval": StatusDone, "plots": StatusRunning}, ""},
		{"train failed", map[string]string{"data": StatusDone, "train": StatusFailed, "extract": StatusDone, "eval": StatusDone}, "manifest.json: stage train failed (boom)"},
		{"extract running", map[string]string{"train": StatusDone, "extract": StatusRunning, "eval": StatusDone}, "manifest.json: stage extract running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeRun(t, string(conf))
			m := newManifest("x", hash)
			for _, st := range Stages {
				rec := m.Stage(st)
				if s, ok := tc.status[st]; ok {
					rec.Status = s
				}
				if rec.Status == StatusFailed {
					rec.Error = "boom"
				}
			}
			if err := m.write(dir); err != nil {
				t.Fatal(err)
			}
			_, err := ReadPlotsSpec(dir)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("ReadPlotsSpec: %v, want nil", err)
			case tc.want != "" && (!errors.Is(err, plots.ErrUnfinishedRun) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("ReadPlotsSpec: %v, want ErrUnfinishedRun naming %q", err, tc.want)
			}
		})
	}
}

// TestPlotsSpec: what the report takes from a run's spec, typed.
func TestPlotsSpec(t *testing.T) {
	for _, tc := range []struct{ name, doc, model string }{
		{"preset", "[model]\npreset = \"small\"\n", "small"},
		{"imported", "[model]\npreset = \"\"\ninit_from = \"hf:/models/pythia-70m\"\n", "pythia-70m"},
		{"sized", "[model]\npreset = \"\"\ndim = 64\nlayers = 3\n", "d=64, 3 layers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.doc + "[goldfish]\nstrategy = \"hash-table\"\nk = 4\nh = 13\n[train]\nsteps = 7\n"
			ps, err := ReadPlotsSpec(writeRun(t, doc))
			if err != nil {
				t.Fatal(err)
			}
			if ps.Model != tc.model || ps.Goldfish.K != 4 || ps.Goldfish.H != 13 || ps.Goldfish.Strategy != "hash-table" {
				t.Errorf("model %q, goldfish %+v; want %q and the file's goldfish", ps.Model, ps.Goldfish, tc.model)
			}
			if v := ps.Value("train.steps"); v != 7 {
				t.Errorf("train.steps = %#v, want int 7", v)
			}
			if v := ps.Value("extract.splits"); !reflect.DeepEqual(v, []string{"target", "control"}) {
				t.Errorf("extract.splits = %#v, want the default", v)
			}
			if v := ps.Value("goldfish.nope"); v != nil {
				t.Errorf("an unknown key = %#v, want nil", v)
			}
		})
	}
	if ps, err := ReadPlotsSpec(t.TempDir()); ps != nil || err != nil {
		t.Errorf("no config.toml: %v, %v; want none", ps, err)
	}
}
