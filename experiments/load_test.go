package experiments

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

type fakeStage struct {
	K    int      `toml:"k"`
	H    int      `toml:"h"`
	Seed int64    `toml:"seed"`
	LR   float64  `toml:"lr"`
	Tags []string `toml:"tags"`
}

func (f fakeStage) Validate() error {
	if f.K == 1 || f.K < 0 {
		return fmt.Errorf("goldfish.k = %d: must be 0 (standard loss) or >= 2", f.K)
	}
	return nil
}

type fakeSpec struct {
	Name     string           `toml:"name"`
	Seed     int64            `toml:"seed"`
	Goldfish fakeStage        `toml:"goldfish"`
	Train    fakeStage        `toml:"train"`
	Sweep    map[string][]any `toml:"sweep"`
}

func TestLoadIntoErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string // substrings of the one-line error
		line      int
	}{
		{"unknown key", "name = 'x'\n[goldfish]\nkk = 3\n", []string{`x.toml:3: goldfish.kk: unknown key "kk" in [goldfish]; did you mean "k"?`, "valid keys: h, k, lr, seed, tags"}, 3},
		{"unknown table", "name = 'x'\n[goldfsh]\nk = 3\n", []string{`unknown key "goldfsh" at the top level; did you mean "goldfish"?`}, 2},
		{"unknown top key far from all", "zzzzzzzzzz = 1\n", []string{`unknown key "zzzzzzzzzz" at the top level; valid keys`}, 1},
		{"wrong type", "[goldfish]\nk = 'four'\n", []string{"x.toml:2: goldfish.k: wrong type: the value is a TOML string, the key takes an integer"}, 2},
		{"wrong type array", "[train]\ntags = 3\n", []string{"x.toml:2: train.tags: wrong type"}, 2},
		{"syntax", "[goldfish]\nk = = 3\n", []string{"x.toml:2", "TOML syntax"}, 2},
		{"a key set twice", "[goldfish]\nk = 4\nh = 13\n\nk = 8\n", []string{"x.toml:5: goldfish.k is set twice (once above); keep one"}, 5},
		{"a table given a number", "goldfish = 3\n", []string{"goldfish: wrong type: the value is a TOML integer, the key takes a table"}, 1},
		{"validate", "[goldfish]\nh = 2\nk = 1\n", []string{"x.toml:3: goldfish.k = 1: must be 0 (standard loss) or >= 2"}, 3},
		{"sweep axis typo", "[sweep]\n\"goldfish.kk\" = [0, 4]\n", []string{`x.toml:2: sweep.goldfish.kk: sweep axis "goldfish.kk" is not a key of the spec; did you mean "goldfish.k"?`}, 2},
		{"sweep axis empty", "[sweep]\n\"goldfish.k\" = []\n", []string{"non-empty array"}, 2},
		{"a float for an integer", "[goldfish]\nk = 1e3\n", []string{"x.toml:2: goldfish.k: wrong type: the value is a TOML float, the key takes an integer"}, 2},
		{"a value, then a table of that name", "name = 'x'\ngoldfish = 3\n[goldfish]\nk = 4\n", []string{"x.toml:3: goldfish: [goldfish] is opened as a table after goldfish was set as a value"}, 3},
		{"a table opened twice", "name = 'x'\n[goldfish]\nk = 4\n\n[goldfish] # again\nh = 7\n", []string{"x.toml:5: goldfish: [goldfish] is opened twice (once above)"}, 5},
		{"a table opened after its dotted keys", "name = 'x'\ntrain.steps = 5\n[train]\nlr = 1.0\n", []string{"x.toml:3: train: [train] is opened after line 2 set train.steps as a dotted key"}, 3},
		// go-toml's own words for these named Go types, a value where
		// the type belongs, or panicked (a date).
		{"a boolean for an integer", "[goldfish]\nk = true\n", []string{"x.toml:2: goldfish.k: wrong type: the value is a TOML boolean, the key takes an integer"}, 2},
		{"a boolean for a number", "[goldfish]\nlr = false\n", []string{"x.toml:2: goldfish.lr: wrong type: the value is a TOML boolean, the key takes a number"}, 2},
		{"a boolean for a string", "name = true\n", []string{"x.toml:1: name: wrong type: the value is a TOML boolean, the key takes a string"}, 1},
		{"an array for an integer", "[train]\nh = [1, 2]\n", []string{"x.toml:2: train.h: wrong type: the value is a TOML array, the key takes an integer"}, 2},
		{"an inline table for an integer", "[train]\nh = {a = 1}\n", []string{"x.toml:2: train.h: wrong type: the value is a TOML table, the key takes an integer"}, 2},
		{"a date for an integer", "[train]\nseed = 1979-05-27\n", []string{"x.toml:2: train.seed: wrong type: the value is a TOML date, the key takes an integer"}, 2},
		{"a date-time for a number", "[train]\nlr = 1979-05-27T07:32:00Z\n", []string{"x.toml:2: train.lr: wrong type: the value is a TOML date-time, the key takes a number"}, 2},
		{"a boolean for an array", "[train]\ntags = true\n", []string{"x.toml:2: train.tags: wrong type: the value is a TOML boolean, the key takes an array of strings"}, 2},
		{"an element of another type", "[train]\ntags = ['a', 3]\n", []string{"x.toml:2: train.tags: an element of the array: wrong type: the value is a TOML integer, the key takes a string"}, 2},
		{"name as a sweep axis", "[sweep]\nname = [\"a\", \"b\"]\n", []string{"sweep.name: name cannot be a sweep axis"}, 2},
		// A point that is itself a sweep ran a nested grid the outer sweep
		// never saw; [slurm] axes gave points differing in name alone.
		{"sweep_points as a sweep axis", "[sweep]\n\"sweep_points\" = [[{\"goldfish.k\" = 0}]]\n", []string{"sweep.sweep_points: sweep_points cannot be a sweep axis: a point would be a sweep of its own"}, 2},
		{"a slurm key as a sweep axis", "[sweep]\n\"slurm.partition\" = [\"a\", \"b\"]\n", []string{"sweep.slurm.partition: slurm.partition cannot be a sweep axis: [slurm] is how a sweep is submitted"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s fakeSpec
			_, err := loadInto("x.toml", []byte(tc.doc), &s)
			wantConfigError(t, err, tc.line, tc.want...)
		})
	}
}

// wantConfigError checks that err is a one-line *ConfigError at line that
// contains every string of want, and returns it.
func wantConfigError(t *testing.T, err error, line int, want ...string) *ConfigError {
	t.Helper()
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v (%T), want *ConfigError", err, err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("error spans lines: %q", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q lacks %q", msg, w)
		}
	}
	if ce.Line != line {
		t.Errorf("line = %d, want %d (%s)", ce.Line, line, msg)
	}
	return ce
}

func TestLoadIntoDefaultsAndSeed(t *testing.T) {
	s := fakeSpec{Goldfish: fakeStage{K: 4, H: 13, Tags: []string{"a", "b"}}, Train: fakeStage{LR: 1e-3}}
	doc := "name = 'x'\nseed = 99\n[goldfish]\nk = 8\ntags = ['c']\n[train]\nseed = 5\n"
	if _, err := loadInto("x.toml", []byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	if s.Goldfish.K != 8 || s.Goldfish.H != 13 {
		t.Errorf("goldfish = %+v: want k from the file, h from the default", s.Goldfish)
	}
	if len(s.Goldfish.Tags) != 1 || s.Goldfish.Tags[0] != "c" {
		t.Errorf("tags = %v: an array in the file replaces the default", s.Goldfish.Tags)
	}
	if s.Goldfish.Seed != 99 || s.Train.Seed != 5 {
		t.Errorf("seeds goldfish=%d train=%d, want 99 (copied) and 5 (own)", s.Goldfish.Seed, s.Train.Seed)
	}
	if s.Train.LR != 1e-3 {
		t.Errorf("train.lr = %v, want default 1e-3", s.Train.LR)
	}
}

func TestClosest(t *testing.T) {
	valid := []string{"learning_rate", "steps", "batch_size", "warmup"}
	for in, want := range map[string]string{"lerning_rate": "learning_rate", "step": "steps", "batchsize": "batch_size", "xyzzy_foo_bar": ""} {
		if got := closest(in, valid); got != want {
			t.Errorf("closest(%q) = %q, want %q", in, got, want)
		}
	}
	if d := levenshtein("kitten", "sitting"); d != 3 {
		t.Errorf("levenshtein = %d, want 3", d)
	}
}

func TestKeyAtAndLine(t *testing.T) {
	doc := []byte("name = 'x'\n[goldfish]\n# comment = 1\nk = 4\n[sweep]\n\"model.preset\" = ['a']\n")
	for line, want := range map[int]string{
		1: "name",               // a top-level key
		2: "goldfish",           // a header names its table
		3: "goldfish",           // a comment, even with "=", sets no key
		4: "goldfish.k",         // a key under its table
		6: "sweep.model.preset", // a quoted dotted key
		7: "sweep",              // the empty last line
		9: "",                   // past the end
	} {
		if got := keyAt(doc, line); got != want {
			t.Errorf("keyAt(%d) = %q, want %q", line, got, want)
		}
	}
	if got := keyLine(doc, "sweep.model.preset"); got != 6 {
		t.Errorf("keyLine = %d, want 6", got)
	}
	if got := keyLine(doc, "goldfish.h"); got != 0 {
		t.Errorf("keyLine of an unset key = %d, want 0", got)
	}
}

func TestRenderTOMLRoundTrip(t *testing.T) {
	in := fakeSpec{Name: "x", Seed: 7, Goldfish: fakeStage{K: 4, H: 13, LR: 0.5, Tags: []string{"a"}}, Sweep: map[string][]any{"goldfish.k": {int64(0), int64(4)}}}
	docs := map[string]string{"goldfish.k": "K drops one target in K.\nSecond line.", "seed": "The seed."}
	out, err := renderTOML(&in, docs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# The seed.\nseed = 7\n", "[goldfish]\n", "# K drops one target in K.\n# Second line.\nk = 4\n", "[sweep]\n\"goldfish.k\" = [0, 4]\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered TOML lacks %q:\n%s", want, out)
		}
	}
	var back fakeSpec
	if _, err := loadInto("rendered.toml", []byte(out), &back); err != nil {
		t.Fatalf("rendered TOML does not parse back: %v\n%s", err, out)
	}
	if back.Goldfish.K != 4 || back.Goldfish.LR != 0.5 || back.Seed != 7 || len(back.Sweep["goldfish.k"]) != 2 {
		t.Errorf("round trip = %+v", back)
	}
}

type joinStage struct{}

func (joinStage) Validate() error {
	return errors.Join(errors.New("data.targets = -1: must be >= 0"), errors.New("data.controls = -1: must be >= 0"))
}

func TestValidateJoinedErrorsOneLine(t *testing.T) {
	var s struct {
		Data   joinStage `toml:"data"`
		hidden int
	}
	_ = s.hidden
	_, err := loadInto("x.toml", []byte("[data]\n"), &s)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "x.toml: data.targets = -1: must be >= 0 (and 1 more problems)") {
		t.Fatalf("err = %q", err)
	}
}
