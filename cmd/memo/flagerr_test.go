package main

import (
	"errors"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestFlagMessage: Go's flag errors in memo's words, naming the flag as a
// user types it and what it takes.
func TestFlagMessage(t *testing.T) {
	flags := []cli.Flag{
		&cli.Float64Flag{Name: "sample-rate"},
		&cli.IntFlag{Name: "seed"},
		&cli.BoolFlag{Name: "lowercase"},
		&cli.DurationFlag{Name: "wait"},
		&cli.StringFlag{Name: "out"},
	}
	for _, tc := range []struct{ in, want string }{
		{"flag provided but not defined: -frobnicate", "unknown flag --frobnicate; see `memo audit --help`"},
		{`invalid value "abc" for flag -sample-rate: parse error`, `--sample-rate "abc": want a number`},
		{`invalid value "x" for flag -seed: parse error`, `--seed "x": want an integer`},
		{`invalid boolean value "maybe" for -lowercase: parse error`, `--lowercase "maybe": want true or false, written --lowercase=false`},
		{`invalid value "soon" for flag -wait: parse error`, `--wait "soon": want a duration such as 1m30s`},
		{"flag needs an argument: -out", "--out needs a value"},
		{"flag needs an argument: -seed", "--seed needs a value (an integer)"},
		{"flag provided but not defined: -v", "unknown flag -v; see `memo audit --help`"},
		{"something else", "something else"},
	} {
		if got := flagMessage("audit", flags, errors.New(tc.in)); got != tc.want {
			t.Errorf("%q:\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// TestSetBy: a Validate error names where its value came from: the flag
// given, else the run's config.toml, else memo's default.
func TestSetBy(t *testing.T) {
	err := errors.New("eval.bootstrap = 10: must be 0 (no intervals) or 100 to 1000000")
	for _, tc := range []struct {
		args      []string
		hasConfig bool
		want      string
	}{
		{[]string{"eval", "--bootstrap", "10"}, true, "set by --bootstrap"},
		{[]string{"eval", "--fpr", "0.1"}, true, "set by RUN/config.toml"},
		{[]string{"eval"}, false, "memo's default"},
	} {
		var got string
		app := &cli.App{Flags: []cli.Flag{&cli.IntFlag{Name: "bootstrap"}, &cli.Float64Flag{Name: "fpr"}}, Action: func(c *cli.Context) error {
			got = setBy(c, "eval", err, "RUN/config.toml", tc.hasConfig)
			return nil
		}}
		if err := app.Run(tc.args); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestSetByKeyEndings: the key ends at a space, a colon or an equals sign,
// however the message goes on ("eval.fpr: ...", "eval.fpr=2 ...").
func TestSetByKeyEndings(t *testing.T) {
	for _, msg := range []string{"eval.fpr = 2: must be in (0, 1)", "eval.fpr: must be in (0, 1)", "eval.fpr=2 is out of range"} {
		var got string
		app := &cli.App{Flags: []cli.Flag{&cli.Float64Flag{Name: "fpr"}}, Action: func(c *cli.Context) error {
			got = setBy(c, "eval", errors.New(msg), "RUN/config.toml", true)
			return nil
		}}
		if err := app.Run([]string{"eval", "--fpr", "2"}); err != nil {
			t.Fatal(err)
		}
		if got != "set by --fpr" {
			t.Errorf("%q: %q, want set by --fpr", msg, got)
		}
	}
}

// TestSetByApproximation: a key extract --approximation set is blamed on
// it, not on the run's config.toml (which set none of sift-q1.5's).
func TestSetByApproximation(t *testing.T) {
	for _, tc := range []struct {
		msg, want string
	}{
		{"extract.sift.quantile = 1.5: must be in (0, 1), e.g. 0.9", "set by --approximation"},
		{"extract.loki.top_k = 1.5: must be a fraction in (0, 1] or a whole count > 1", "set by --approximation"},
		{"extract.kv_bits = 3: must be 16 (exact), 8 or 4", "set by --approximation"},
		{"extract.suffix = 0: must be >= 1", "set by RUN/config.toml"},
		// No approximation name sets sift.warmup: the config did.
		{"extract.sift.warmup = 1: must be >= 2", "set by RUN/config.toml"},
	} {
		var got string
		app := &cli.App{Flags: []cli.Flag{&cli.StringFlag{Name: "approximation"}}, Action: func(c *cli.Context) error {
			got = setBy(c, "extract", errors.New(tc.msg), "RUN/config.toml", true)
			return nil
		}}
		if err := app.Run([]string{"extract", "--approximation", "sift-q1.5"}); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%q: %q, want %q", tc.msg, got, tc.want)
		}
	}
}
