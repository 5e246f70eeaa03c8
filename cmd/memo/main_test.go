package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/experiments"
	"github.com/memo-research/memo/internal/rankenv"
	"github.com/memo-research/memo/train"
	"github.com/urfave/cli/v2"
)

func TestRunsModels(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"run", "exp/smoke.toml"}, true},
		{[]string{"--log-level", "debug", "bench", "train"}, true},
		{[]string{"--log-level=debug", "extract", "runs/x"}, true},
		{[]string{"run", "--help"}, false},
		{[]string{"help", "run"}, false},
		{[]string{"config", "--defaults"}, false},
		{[]string{"--log-level", "run"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := runsModels(tt.args); got != tt.want {
			t.Errorf("runsModels(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

// TestRankPrefix: a rank other than 0 of a launch names itself on its last
// line; rank 0 and a single process do not.
func TestRankPrefix(t *testing.T) {
	for _, tc := range []struct {
		rank, size string
		nproc      bool // started by memo run --nproc, which labels its ranks' lines
		want       string
	}{
		{"", "", false, ""},
		{"0", "2", false, ""},
		{"1", "2", false, "rank 1 of 2: "},
		{"3", "4", false, "rank 3 of 4: "},
		{"1", "2", true, ""},
	} {
		setRank(t, tc.rank, tc.size, tc.nproc)
		if got := rankPrefix(); got != tc.want {
			t.Errorf("RANK=%q WORLD_SIZE=%q: rankPrefix() = %q, want %q", tc.rank, tc.size, got, tc.want)
		}
	}
}

// setRank sets the environment of rank of size of a launch ("" for a
// single process), started by memo run --nproc when nproc is set.
func setRank(t *testing.T, rank, size string, nproc bool) {
	t.Helper()
	t.Setenv("MEMO_DIST_LAUNCHED", "")
	if nproc {
		t.Setenv("MEMO_DIST_LAUNCHED", "1")
	}
	for _, k := range []string{"SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_ID", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("RANK", rank)
	t.Setenv("WORLD_SIZE", size)
	if rank == "" {
		os.Unsetenv("RANK")
		os.Unsetenv("WORLD_SIZE")
	}
}

// TestLastLine: rank 1 of 2's last line names the rank once, whether the
// error named it (a failed collective, wrapped on its way up) or not.
func TestLastLine(t *testing.T) {
	setRank(t, "1", "2", false)
	collective := rankenv.Tag(1, 2, errors.New("all-reduce failed, rank 0 stopped responding"))
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"untagged", errors.New("open data: no such file"), "rank 1 of 2: open data: no such file"},
		{"tagged", collective, "rank 1 of 2: all-reduce failed, rank 0 stopped responding"},
		{"tagged, wrapped", fmt.Errorf("train step 7: %w", collective), "train step 7: rank 1 of 2: all-reduce failed, rank 0 stopped responding"},
		{"tagged twice", rankenv.Tag(1, 2, fmt.Errorf("train: %w", collective)), "train: rank 1 of 2: all-reduce failed, rank 0 stopped responding"},
		{"interrupted", rankenv.Tag(1, 2, &train.InterruptedError{Step: 3, Total: 10}), "rank 1 of 2: interrupted at step 3 of 10 (saved); the same command resumes"},
	} {
		if got, _ := lastLine(tc.err); got != tc.want {
			t.Errorf("%s: lastLine = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestVersionLine: memo --version names the revision (short), whether the
// tree was modified, a module version when built as one, Go and libtorch.
func TestVersionLine(t *testing.T) {
	for _, tc := range []struct {
		v    experiments.Versions
		want string
	}{
		{experiments.Versions{Go: "go1.26.8", Memo: "b860c6ad5281aaaa", Libtorch: "2.4.1"}, "b860c6ad5281, go1.26.8, libtorch 2.4.1"},
		{experiments.Versions{Go: "go1.26.8", Memo: "b860c6ad5281aaaa", MemoDirty: true, MemoVersion: "(devel)", Libtorch: "2.4.1"}, "b860c6ad5281+modified, go1.26.8, libtorch 2.4.1"},
		{experiments.Versions{Go: "go1.26.8", Memo: "b860c6ad5281", MemoVersion: "v0.4.0", Libtorch: "2.4.1"}, "v0.4.0 (b860c6ad5281), go1.26.8, libtorch 2.4.1"},
	} {
		if got := versionLine(tc.v); got != tc.want {
			t.Errorf("versionLine(%+v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// TestLibtorchFailuresStayOneLine: the app's --log-level set-up keeps the
// log package on oneLineLog, which gotch's log.Fatal of a libtorch error
// goes through; slog.SetDefault had pointed it at the text handler, and a
// failure printed a 9 KB INFO line with both backtraces.
func TestLibtorchFailuresStayOneLine(t *testing.T) {
	before := log.Writer()
	defer log.SetOutput(before)
	app := newApp()
	set := flag.NewFlagSet("memo", flag.ContinueOnError)
	for _, f := range app.Flags {
		if err := f.Apply(set); err != nil {
			t.Fatal(err)
		}
	}
	if err := set.Parse([]string{"--log-level", "warn"}); err != nil {
		t.Fatal(err)
	}
	if err := app.Before(cli.NewContext(app, set, nil)); err != nil {
		t.Fatal(err)
	}
	if _, ok := log.Writer().(oneLineLog); !ok {
		t.Errorf("log writes to %T after the app's set-up, want oneLineLog", log.Writer())
	}
}

// TestInterruptedLine: the line says what the same command resumes from;
// a sharded run interrupted past its last periodic checkpoint said
// "interrupted at step 0 of 200 (saved)" at step 34.
func TestInterruptedLine(t *testing.T) {
	for _, tc := range []struct {
		e    train.InterruptedError
		want string
	}{
		{train.InterruptedError{Step: 34, At: 34, Total: 200}, "interrupted at step 34 of 200 (saved); the same command resumes"},
		{train.InterruptedError{Step: 0, At: 34, Total: 200}, "interrupted at step 34 of 200, before the first periodic checkpoint (a sharded run saves no other); the same command starts training again"},
		{train.InterruptedError{Step: 20, At: 34, Total: 200}, "interrupted at step 34 of 200; a sharded run saves only its periodic checkpoints: the same command resumes after step 20"},
	} {
		if got := interruptedLine(&tc.e); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.e, got, tc.want)
		}
	}
}

// TestRankPastTheWorldSaysWhy: a rank other than 0 leaves a refusal to
// rank 0, but a rank past the world has none: it exited 2 saying nothing.
func TestRankPastTheWorldSaysWhy(t *testing.T) {
	exe := buildMemo(t)
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "s.toml"), "name = \"s\"\n")
	t.Setenv("RANK", "2")
	t.Setenv("WORLD_SIZE", "2")
	r := execMemo(t, exe, dir, "run", "s.toml")
	if r.code != 2 || !strings.Contains(r.stderr, "rank 2 (from torchrun): must be in [0, 2)") {
		t.Errorf("RANK=2 WORLD_SIZE=2: exit %d, stderr %q; want 2 and the rank named", r.code, r.stderr)
	}
}
