package main

import (
	"strings"
	"testing"
)

// TestHelpAnywhere: -h and --help anywhere on the line, before or after a
// command's arguments, print that command's help on stdout and exit 0
// (issue 25: `memo --help` printed "flag: help requested", exit 2).
func TestHelpAnywhere(t *testing.T) {
	exe := buildMemo(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string // in the first line of stdout's NAME section
	}{
		{[]string{"--help"}, "memo - train"},
		{[]string{"-h"}, "memo - train"},
		{[]string{"--log-level", "debug", "-h"}, "memo - train"},
		{[]string{"run", "-h"}, "memo run - "},
		{[]string{"run", "exp/smoke.toml", "--help"}, "memo run - "},
		{[]string{"extract", "-h"}, "memo extract - "},
		{[]string{"data", "-h"}, "memo data - "},
		{[]string{"data", "build", "x.toml", "--out", "d", "-h"}, "memo data build - "},
		{[]string{"mask", "-h"}, "memo mask - "},
		{[]string{"score", "--help"}, "memo score - "},
	} {
		r := execMemo(t, exe, dir, tc.args...)
		if r.code != 0 || !strings.Contains(r.stdout, tc.want) || r.stderr != "" {
			t.Errorf("memo %s: exit %d, stdout %.80q, stderr %q; want exit 0 and help naming %q", strings.Join(tc.args, " "), r.code, r.stdout, r.stderr, tc.want)
		}
	}
	// memo --help's VERSION is the revision --version names, not a
	// placeholder.
	version := execMemo(t, exe, dir, "--version").stdout
	rev, _, _ := strings.Cut(strings.TrimPrefix(version, "memo version "), ",")
	if help := execMemo(t, exe, dir, "--help").stdout; !strings.Contains(help, "VERSION:\n   "+rev+"\n") {
		t.Errorf("memo --help does not give the version %q of memo --version (%q):\n%s", rev, version, help)
	}
}

// TestHelpRequest: which lines ask for help, and for which command; a
// flag's value, mask's -h N and anything after "--" do not.
func TestHelpRequest(t *testing.T) {
	app := newApp()
	for _, tc := range []struct {
		line string
		path string
		ok   bool
	}{
		{"memo run x.toml", "", false},
		{"memo -h", "", true},
		{"memo run x.toml -h", "run", true},
		{"memo data build --out d x.toml --help", "data build", true},
		{"memo extract --out --help run0", "", false},
		{"memo mask -h 3 --ids-json -", "", false},
		{"memo mask --ids-json - -h", "mask", true},
		{"memo run x.toml -- --help", "", false},
		{"memo nosuch --help", "", true},
	} {
		path, ok := helpRequest(app, strings.Fields(tc.line))
		if ok != tc.ok || strings.Join(path, " ") != tc.path {
			t.Errorf("helpRequest(%q) = %q, %v; want %q, %v", tc.line, path, ok, tc.path, tc.ok)
		}
	}
}
