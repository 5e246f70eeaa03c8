package experiments

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/extract"
)

func TestParseWithOverrides(t *testing.T) {
	file := filepath.Join("..", "exp", "goldfish-vs-standard.toml")
	good := []struct {
		name  string
		sets  []string
		check func(*Spec) bool
	}{
		{"float", []string{"train.lr=1e-3"}, func(s *Spec) bool { return s.Train.LR == 1e-3 }},
		{"bare string", []string{"model.preset=small"}, func(s *Spec) bool { return s.Model.Preset == "small" }},
		{"quoted string and int", []string{`model.preset="nano"`, "goldfish.h=7"}, func(s *Spec) bool { return s.Model.Preset == "nano" && s.Goldfish.H == 7 }},
		{"later wins", []string{"train.lr=1e-3", "train.lr=2e-3"}, func(s *Spec) bool { return s.Train.LR == 2e-3 }},
		{"sweep axis", []string{`sweep."goldfish.k"=[0, 3, 8]`}, func(s *Spec) bool {
			pts, err := s.Expand()
			return err == nil && len(pts) == 3
		}},
		{"top-level key", []string{"seed=7"}, func(s *Spec) bool { return s.Seed == 7 }},
		{"an array over two lines", []string{"sweep.\"goldfish.k\"=[0,\n4]"}, func(s *Spec) bool {
			pts, err := s.Expand()
			return err == nil && len(pts) == 2
		}},
	}
	for _, c := range good {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseWithOverrides(file, c.sets)
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(s) {
				t.Errorf("--set %v did not take effect", c.sets)
			}
		})
	}
	base, err := Parse(file)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := ParseWithOverrides(file, nil); s.Train.LR != base.Train.LR {
		t.Error("no overrides changed the spec")
	}
	bad := []struct {
		name string
		sets []string
		want string
	}{
		{"unknown key", []string{"train.learning_rate=1e-3"}, "learning_rate"},
		{"out of range", []string{"goldfish.k=1"}, "goldfish.k"},
		{"wrong type", []string{"train.lr=fast"}, "train.lr"},
		{"no equals sign", []string{"train.lr"}, "KEY=VALUE"},
		{"key into a value", []string{"seed.x=1"}, "seed"},
		{"broken TOML value", []string{"data.sources=[\"opticks\""}, "not valid TOML"},
		{"a second key after a newline", []string{"train.steps=5\nbogus=1"}, "is more than one TOML value"},
		{"a table after a newline", []string{"train.steps=5\n[model]\npreset=\"base\""}, "is more than one TOML value"},
		{"an integer past 64 bits", []string{"train.steps=99999999999999999999"}, "value 99999999999999999999 is out of range"},
		{"a float past 1.8e308", []string{"train.lr=1e400"}, "value 1e400 is out of range (a TOML float"},
		// Text that is no TOML value is read as a string; where the key
		// takes another type, the message says so of the text given.
		{"two numbers", []string{"train.steps=1 2"}, `train.steps: "1 2" is not a TOML value, so --set read it as a string; the key takes an integer`},
		{"no value", []string{"train.steps="}, "train.steps: --set gave no value; the key takes an integer"},
		{"a quoted string", []string{`train.steps="5"`}, "wrong type: the value is a TOML string, the key takes an integer"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseWithOverrides(file, c.sets)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("--set %v: error %v, want one line naming %q", c.sets, err, c.want)
			}
		})
	}
}

// TestOverrideTables: --set on stage tables outside a spec (memo extract's)
// reaches every key and refuses what a spec file would.
func TestOverrideTables(t *testing.T) {
	type holder struct {
		Extract extract.Config `toml:"extract"`
	}
	for _, tc := range []struct {
		name string
		sets []string
		want string // substring of the error; "" = accepted
		ok   func(extract.Config) bool
	}{
		{"none", nil, "", func(c extract.Config) bool { return c.TopK == 0 }},
		{"a key no flag copies", []string{"extract.top_k=40", "extract.mink_fraction=0.1"}, "", func(c extract.Config) bool { return c.TopK == 40 && c.MinKFraction == 0.1 }},
		{"later wins", []string{"extract.suffix=20", "extract.suffix=30"}, "", func(c extract.Config) bool { return c.Suffix == 30 }},
		{"typo suggests", []string{"extract.topk=4"}, `--set extract.topk=4: extract.topk: unknown key "topk" in [extract]; did you mean "top_k"?`, nil},
		{"another table", []string{"train.lr=1e-3"}, `unknown key "train"`, nil},
		{"out of range", []string{"extract.top_p=2"}, "extract.top_p", nil},
		{"wrong type", []string{"extract.suffix=many"}, "extract.suffix: wrong type", nil},
		{"not key=value", []string{"extract.suffix"}, "want KEY=VALUE", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := holder{extract.DefaultConfig()}
			err := OverrideTables(&h, tc.sets)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "" && !tc.ok(h.Extract):
				t.Errorf("config after --set %v: %+v", tc.sets, h.Extract)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n")):
				t.Errorf("error %v, want one line containing %q", err, tc.want)
			}
		})
	}
}

// TestCommandArgs: the spec on a command line memo prints for the user to
// paste: its --set overrides then its file, quoted for the shell where
// needed. An error once printed `memo run --stages data exp/smoke.toml
// (with --set …)`, which the shell refuses and which lost the overrides.
func TestCommandArgs(t *testing.T) {
	path := filepath.Join("..", "exp", "smoke.toml")
	for _, tc := range []struct {
		sets []string
		want string
	}{
		{nil, path},
		{[]string{"mia.references=2", "data.validation=4"}, "--set mia.references=2 --set data.validation=4 " + path},
		{[]string{"name=a+b", `model.preset="nano"`}, `--set name=a+b --set 'model.preset="nano"' ` + path},
	} {
		spec, err := ParseWithOverrides(path, tc.sets)
		if err != nil {
			t.Fatal(err)
		}
		if got := spec.commandArgs(); got != tc.want {
			t.Errorf("--set %q: commandArgs = %q, want %q", tc.sets, got, tc.want)
		}
	}
}

// TestSetOnSweptKey: --set on a key the spec sweeps is refused: the
// sweep's values replaced it on every point while `memo config` showed
// --set's value. Setting the axis itself works.
func TestSetOnSweptKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sw.toml")
	doc := "name = \"sw\"\n[sweep]\n\"goldfish.k\" = [0, 4]\n\n[[sweep_points]]\n\"train.lr\" = 1e-3\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	for set, want := range map[string]string{
		"goldfish.k=8":  `change the sweep instead: --set 'sweep."goldfish.k"=[...]'`,
		"train.lr=2e-3": "edit its [[sweep_points]] tables",
	} {
		spec, err := ParseWithOverrides(path, []string{set})
		if err == nil {
			_, err = spec.Expand()
		}
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) {
			t.Errorf("--set %s: %v; want a ConfigError saying %q", set, err, want)
		}
	}
	spec, err := ParseWithOverrides(path, []string{`sweep."goldfish.k"=[8]`})
	if err != nil {
		t.Fatal(err)
	}
	if pts, err := spec.Expand(); err != nil || len(pts) != 2 {
		t.Errorf("--set on the axis: %d points, %v; want k=8 and the sweep point", len(pts), err)
	}
}

// TestSweepPointNameTooLong: a point whose values make a run directory
// name past 200 characters is blamed on the sweep, not on the spec's
// name key (line 1, valid).
func TestSweepPointNameTooLong(t *testing.T) {
	long := "/tmp/" + strings.Repeat("a", 240)
	spec, err := ParseBytes("long.toml", []byte("name = \"longsw\"\n[sweep]\n\"data.sources\" = [[\"txt:"+long+"\"], [\"opticks\"]]\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = spec.Expand()
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "sweep" || !strings.Contains(err.Error(), "the run directory name made from this point's values (257 characters)") {
		t.Errorf("a point named past 200 characters: %v; want the sweep blamed", err)
	}
}
