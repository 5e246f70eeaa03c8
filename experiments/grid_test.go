package experiments

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestGrid(t *testing.T) {
	axes := sortedAxes(map[string][]any{
		"model.preset": {"nano", "tiny"},
		"goldfish.k":   {int64(0), int64(4), int64(8)},
	})
	if axes[0].Key != "goldfish.k" {
		t.Fatalf("axes not sorted: %v", axes)
	}
	g := grid(axes)
	if len(g) != 6 {
		t.Fatalf("grid has %d points, want 6", len(g))
	}
	labels := axisLabels(axes)
	var names []string
	for _, vals := range g {
		names = append(names, pointName(labels, vals))
	}
	want := []string{"k=0_preset=nano", "k=0_preset=tiny", "k=4_preset=nano", "k=4_preset=tiny", "k=8_preset=nano", "k=8_preset=tiny"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("names = %v, want %v", names, want)
	}
	if g := grid(nil); len(g) != 1 || len(g[0]) != 0 {
		t.Errorf("grid of no axes = %v, want one empty point", g)
	}
}

func TestAxisLabelsCollide(t *testing.T) {
	axes := sortedAxes(map[string][]any{"data.seed": {1}, "train.seed": {2}, "goldfish.k": {4}})
	got := axisLabels(axes)
	want := []string{"data-seed", "k", "train-seed"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("labels = %v, want %v", got, want)
	}
	if n := pointName([]string{"groups"}, []any{[]any{int64(1), int64(2)}}); n != "groups=1-2" {
		t.Errorf("array value name = %q", n)
	}
	if n := pointName([]string{"src"}, []any{"txt:/a b"}); n != "src=txt--a-b" {
		t.Errorf("sanitized name = %q", n)
	}
}

func TestSetPathDeepCopy(t *testing.T) {
	raw := map[string]any{"goldfish": map[string]any{"k": int64(4)}, "name": "x"}
	c := deepCopy(raw).(map[string]any)
	if err := setPath(c, "goldfish.k", int64(0)); err != nil {
		t.Fatal(err)
	}
	if err := setPath(c, "model.preset", "tiny"); err != nil {
		t.Fatal(err)
	}
	if raw["goldfish"].(map[string]any)["k"] != int64(4) {
		t.Error("setPath on the copy changed the original")
	}
	if c["model"].(map[string]any)["preset"] != "tiny" {
		t.Error("setPath did not create the missing table")
	}
	if err := setPath(c, "name.x", 1); err == nil {
		t.Error("setPath through a string should fail")
	}
}

func TestSlurmScript(t *testing.T) {
	base := SlurmOptions{Account: "proj1", Partition: "gpu", Time: "02:00:00", GPUs: 4, CPUs: 8, Exe: "/opt/memo bin/memo",
		SweepDir: "/scratch/runs/gvs", Specs: []string{"k=0.toml", "k=4.toml"}, JobName: "gvs"}
	single, err := SlurmScript(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#!/bin/bash\n", "#SBATCH --array=0-1\n", "#SBATCH --account=proj1\n", "#SBATCH --partition=gpu\n",
		"#SBATCH --time=02:00:00\n", "#SBATCH --gpus-per-node=4\n", "#SBATCH --cpus-per-task=8\n", "#SBATCH --nodes=1\n",
		"MEMO='/opt/memo bin/memo'\n", "  'k=4.toml'\n", `SPEC="$SWEEP/specs/${SPECS[$SLURM_ARRAY_TASK_ID]}"`, `"$MEMO" run --runs "$SWEEP" "$SPEC"`} {
		if !strings.Contains(single, want) {
			t.Errorf("script lacks %q:\n%s", want, single)
		}
	}
	if strings.Contains(single, "srun") {
		t.Error("a one-process point should not use srun")
	}
	multi := base
	multi.Nodes, multi.Nproc = 2, 4
	ms, err := SlurmScript(multi)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#SBATCH --nodes=2\n", "#SBATCH --ntasks-per-node=4\n", `srun --kill-on-bad-exit=1 "$MEMO" run --runs "$SWEEP" "$SPEC"`} {
		if !strings.Contains(ms, want) {
			t.Errorf("multi-node script lacks %q:\n%s", want, ms)
		}
	}
	// Attack-only points: one process each, however the training points run.
	attack := multi
	attack.Specs, attack.ReuseTrain = []string{"k=4_top_k=8.toml"}, []string{"k=4"}
	as, err := SlurmScript(attack)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#SBATCH --nodes=1\n", "#SBATCH --ntasks-per-node=1\n", "#SBATCH --array=0-0\n", "TRAINED=(\n  'k=4'\n)",
		`"$MEMO" run --runs "$SWEEP" --reuse-train "$SWEEP/${TRAINED[$SLURM_ARRAY_TASK_ID]}" "$SPEC"`} {
		if !strings.Contains(as, want) {
			t.Errorf("attack-only script lacks %q:\n%s", want, as)
		}
	}
	if strings.Contains(as, "srun") || strings.Contains(as, "--stages") {
		t.Errorf("an attack-only point trains:\n%s", as)
	}
	for _, tc := range []struct {
		mut  func(*SlurmOptions)
		want string
	}{
		{func(o *SlurmOptions) { o.ReuseTrain = []string{"k=0"} }, "points to reuse"},
		{func(o *SlurmOptions) { o.Time = "two hours" }, "--time"},
		{func(o *SlurmOptions) { o.Account = "a b" }, "no spaces"},
		{func(o *SlurmOptions) { o.Specs = nil }, "no grid points"},
		{func(o *SlurmOptions) { o.GPUs = -1 }, ">= 0"},
	} {
		o := base
		tc.mut(&o)
		if _, err := SlurmScript(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SlurmScript = %v, want error with %q", err, tc.want)
		}
	}
}

// A sweep directory holding a % or a $ reaches the job array's and the
// report job's output patterns with each % doubled (sbatch would read %a as
// the task number), and the report job's command runs memo on the
// directory itself: its shell expands nothing in the paths.
func TestSlurmOddPaths(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p%a $HOME `x` it's")
	exe := filepath.Join(dir, "bin", "memo")
	if err := os.MkdirAll(filepath.Dir(exe), 0o755); err != nil {
		t.Fatal(err)
	}
	// A memo that writes the words it was given, one a line.
	if err := os.WriteFile(exe, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := SlurmOptions{Exe: exe, SweepDir: filepath.Join(dir, "runs", "gvs"), Specs: []string{"k=0.toml"}, JobName: "gvs", Partition: "cpu", QOS: "low",
		Extra: []string{"--mail-type=END", "--clusters=gpu2", "--reservation=paper"}}
	s, err := SlurmScript(o)
	if err != nil {
		t.Fatal(err)
	}
	outDir := strings.ReplaceAll(o.SweepDir, "%", "%%")
	if want := "#SBATCH --output=" + outDir + "/logs/%x_%A_%a.out\n"; !strings.Contains(s, want) {
		t.Errorf("script lacks %q:\n%s", want, s)
	}
	args := SlurmReportJob(o, exe, "12:13")
	// Where the array may run the report job may too (its dependency on
	// another cluster's array would never be met); mail is the array's.
	want := []string{"--partition=cpu", "--qos=low", "--clusters=gpu2", "--reservation=paper", "--dependency=afterany:12:13", "--job-name=memo-report-gvs",
		"--output=" + outDir + "/logs/report_%j.out", "--time=00:30:00", "--wrap"}
	if len(args) != len(want)+1 || !reflect.DeepEqual(args[:len(want)], want) {
		t.Fatalf("SlurmReportJob = %q, want %q and the command", args, want)
	}
	out, err := exec.Command("sh", "-c", args[len(want)]).CombinedOutput()
	if got := string(out); err != nil || got != "report\n--require-all\n"+o.SweepDir+"\n" {
		t.Errorf("sh -c %q: %v, printed %q; want report --require-all %q", args[len(want)], err, got, o.SweepDir)
	}
}

// The scheduler options reach the script; a line sbatch does not know, a
// bad size or a line memo writes itself is refused.
func TestSlurmScriptOptions(t *testing.T) {
	o := SlurmOptions{Exe: "/bin/memo", SweepDir: "/s", Specs: []string{"a.toml", "b.toml"}, JobName: "x",
		Mem: "16G", QOS: "low", Constraint: "a100", GPUsPerTask: 1, ArrayThrottle: 1, Extra: []string{"--mail-type=END", "--exclusive"}}
	s, err := SlurmScript(o)
	if err != nil {
		t.Fatal(err)
	}
	// Per task within what the node is asked for: accepted.
	if _, err := SlurmScript(SlurmOptions{Exe: "/bin/memo", SweepDir: "/s", Specs: []string{"a.toml"}, JobName: "x", GPUs: 4, GPUsPerTask: 2, Nproc: 2}); err != nil {
		t.Errorf("2 tasks of 2 GPUs on a node of 4: %v", err)
	}
	for _, want := range []string{"#SBATCH --array=0-1%1\n", "#SBATCH --mem=16G\n", "#SBATCH --qos=low\n", "#SBATCH --constraint=a100\n",
		"#SBATCH --gpus-per-task=1\n", "#SBATCH --mail-type=END\n", "#SBATCH --exclusive\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	// MEMO_CACHE as the sweep saw it is exported by the script, quoted.
	o.Cache = "/scratch/my cache"
	if s, err := SlurmScript(o); err != nil || !strings.Contains(s, "export MEMO_CACHE='/scratch/my cache'\n") {
		t.Errorf("script with a cache (%v):\n%s", err, s)
	}
	// The tasks start where memo sweep ran, not where sbatch was run: a
	// point's relative data source read another directory's.
	o.Dir = "/home/me/my exp"
	if s, err := SlurmScript(o); err != nil || !strings.Contains(s, "set -euo pipefail\ncd '/home/me/my exp'\n") {
		t.Errorf("script run from a directory (%v):\n%s", err, s)
	}
	for _, bad := range []SlurmOptions{{Mem: "lots"}, {Extra: []string{"--colour=red"}}, {Extra: []string{"mail-type=END"}},
		{Extra: []string{"--array=0-9"}}, {QOS: "a b"}, {ArrayThrottle: -1}, {Extra: []string{"--comment=a b"}},
		{GPUs: 1, GPUsPerTask: 4}, {GPUs: 4, GPUsPerTask: 1, Nproc: 8}} {
		bad.Exe, bad.SweepDir, bad.Specs, bad.JobName = "/bin/memo", "/s", []string{"a.toml"}, "x"
		if _, err := SlurmScript(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// The script asks for SIGTERM ahead of the time limit, so that memo saves
// before Slurm's SIGKILL: to the batch shell, which memo replaces (exec),
// for one process; to the step for srun's ranks. An extra --signal line
// is the user's choice and replaces memo's.
func TestSlurmSignalBeforeTimeLimit(t *testing.T) {
	base := SlurmOptions{Exe: "/bin/memo", SweepDir: "/s", Specs: []string{"a.toml"}, JobName: "x"}
	tests := []struct {
		name    string
		mut     func(*SlurmOptions)
		want    []string
		notWant string
	}{
		{"one process, partition limit", func(o *SlurmOptions) {}, []string{"#SBATCH --signal=B:TERM@300\n", `exec "$MEMO" run --runs`}, "srun"},
		{"one process, 10 minutes", func(o *SlurmOptions) { o.Time = "10" }, []string{"#SBATCH --signal=B:TERM@120\n"}, ""},
		{"one process, 2 hours", func(o *SlurmOptions) { o.Time = "02:00:00" }, []string{"#SBATCH --signal=B:TERM@300\n"}, ""},
		{"one process, MM:SS", func(o *SlurmOptions) { o.Time = "5:00" }, []string{"#SBATCH --signal=B:TERM@60\n"}, ""},
		{"one process, a day", func(o *SlurmOptions) { o.Time = "1-00" }, []string{"#SBATCH --signal=B:TERM@300\n"}, ""},
		{"srun ranks", func(o *SlurmOptions) { o.Nproc = 2 }, []string{"#SBATCH --signal=TERM@300\n", `srun --kill-on-bad-exit=1 "$MEMO" run`}, "exec"},
		{"attack-only", func(o *SlurmOptions) { o.Nproc, o.ReuseTrain = 2, []string{"p"} }, []string{"#SBATCH --signal=B:TERM@300\n", `exec "$MEMO" run --runs "$SWEEP" --reuse-train`}, "srun"},
		{"user's own", func(o *SlurmOptions) { o.Extra = []string{"--signal=B:USR1@600"} }, []string{"#SBATCH --signal=B:USR1@600\n"}, "TERM@"},
		{"no limit (0)", func(o *SlurmOptions) { o.Time = "0" }, []string{"#SBATCH --signal=B:TERM@300\n"}, ""},
		{"no limit (0-0)", func(o *SlurmOptions) { o.Time = "0-0" }, []string{"#SBATCH --signal=B:TERM@300\n"}, ""},
		{"D-HH:MM:SS under 25 min", func(o *SlurmOptions) { o.Time = "0-00:20:00" }, []string{"#SBATCH --signal=B:TERM@240\n"}, ""},
		{"digits past any limit", func(o *SlurmOptions) { o.Time = "99999999999999999999" }, []string{"#SBATCH --signal=B:TERM@300\n"}, ""},
	}
	for _, tt := range tests {
		o := base
		tt.mut(&o)
		s, err := SlurmScript(o)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(s, w) {
				t.Errorf("%s: script lacks %q:\n%s", tt.name, w, s)
			}
		}
		if tt.notWant != "" && strings.Contains(s, tt.notWant) {
			t.Errorf("%s: script has %q:\n%s", tt.name, tt.notWant, s)
		}
	}
}
