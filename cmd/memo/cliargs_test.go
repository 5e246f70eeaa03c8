package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestHoistFlags: flags written after positional arguments move in front of
// them with their values; the command path, "--" and unknown flags stay.
func TestHoistFlags(t *testing.T) {
	app := &cli.App{
		Flags: []cli.Flag{&cli.StringFlag{Name: "log-level"}},
		Commands: []*cli.Command{
			{Name: "run", Flags: []cli.Flag{&cli.IntFlag{Name: "nproc"}, &cli.BoolFlag{Name: "force"}, &cli.StringSliceFlag{Name: "set"}}},
			{Name: "data", Subcommands: []*cli.Command{{Name: "build", Flags: []cli.Flag{&cli.StringFlag{Name: "out"}}}}},
		},
	}
	for _, tc := range []struct{ in, want string }{
		{"memo run x.toml", "memo run x.toml"},
		{"memo run --nproc 2 x.toml", "memo run --nproc 2 x.toml"},
		{"memo run x.toml --nproc 2", "memo run --nproc 2 x.toml"},
		{"memo run x.toml --force --set a=1 --nproc=3", "memo run --force --set a=1 --nproc=3 x.toml"},
		{"memo --log-level debug run x.toml --force", "memo --log-level debug run --force x.toml"},
		{"memo data build x.toml --out d", "memo data build --out d x.toml"},
		{"memo run x.toml --bogus 1", "memo run --bogus x.toml 1"},
		{"memo run x.toml -- --nproc", "memo run x.toml -- --nproc"},
		{"memo nosuch x --nproc 2", "memo nosuch x --nproc 2"},
		{"memo run x.toml -", "memo run x.toml -"},
		// The app's flags after the command go before it (COMMANDS.md:
		// flags anywhere).
		{"memo run x.toml --log-level debug --force", "memo --log-level debug run --force x.toml"},
		{"memo --log-level info data build x.toml --log-level=warn --out d", "memo --log-level info --log-level=warn data build --out d x.toml"},
	} {
		got := hoistFlags(app, strings.Fields(tc.in))
		if want := strings.Fields(tc.want); !reflect.DeepEqual(got, want) {
			t.Errorf("hoistFlags(%q) = %q, want %q", tc.in, got, want)
		}
	}
}

// TestJSONProblem: a JSON input's problem in the file's terms, never a Go
// type (a probe read "into Go value of type [][]json.RawMessage").
func TestJSONProblem(t *testing.T) {
	var rows [][]json.RawMessage
	var wrapped struct {
		IDs [][]json.RawMessage `json:"ids"`
	}
	var req struct {
		IDs *[]int64 `json:"ids"`
	}
	for _, tc := range []struct {
		in   string
		into any
		want string
	}{
		{`{"ids": [5, 6]}`, &wrapped, "a JSON number in ids where an array goes"},
		{`[[1, 2], 3]`, &rows, "a JSON number where an array goes"},
		{`[1, 2, 3]`, &req, "a JSON array where an object goes"},
		{`{"ids": "x"}`, &req, "a JSON string in ids where an array goes"},
		{`nope`, &rows, "not JSON at byte 2"},
	} {
		err := json.Unmarshal([]byte(tc.in), tc.into)
		if err == nil {
			t.Fatalf("%s: decoded", tc.in)
		}
		if got := jsonProblem(err); !strings.Contains(got, tc.want) || strings.Contains(got, "Go ") {
			t.Errorf("%s: %q, want it to say %q", tc.in, got, tc.want)
		}
	}
}

// TestModelPrefix: --model takes hf:DIR, a spec's words for a Hugging Face
// directory, as DIR; nothing else changes, and nothing after "--".
func TestModelPrefix(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"memo score --model hf:m --ids-json x", "memo score --model m --ids-json x"},
		{"memo score --model=hf:m", "memo score --model=m"},
		{"memo extract --model m --data r", "memo extract --model m --data r"},
		{"memo run --set train.init_from=hf:m x.toml", "memo run --set train.init_from=hf:m x.toml"},
		{"memo extract --data hf:r --model hf:m", "memo extract --data hf:r --model m"},
		{"memo score -- --model hf:m", "memo score -- --model hf:m"},
	} {
		if got := modelPrefix(strings.Fields(tc.in)); !reflect.DeepEqual(got, strings.Fields(tc.want)) {
			t.Errorf("modelPrefix(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
