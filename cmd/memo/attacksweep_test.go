package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/experiments"
)

// attackSweep is exp/smoke.toml's nano run attacked with three prefix
// lengths: three sweep points that differ only in an extract key.
const attackSweep = `name = "prefixes"
seed = 1
[data]
sources = ["opticks"]
tokenizer = "bpe:300"
targets = 4
controls = 4
validation = 2
background = 8
repetitions = 2
chunk_tokens = 64
min_tokens = 48
dedup_words = 0
[model]
preset = "nano"
[train]
steps = 12
block = 64
batch_size = 8
warmup_steps = 2
eval_every = 0
checkpoint_every = 0
log_every = 4
[extract]
mode = "fixed"
prefix = 8
suffix = 16
batch_size = 8
[eval]
bootstrap = 100
[plots]
formats = ["png"]
dpi = 60
[sweep]
"extract.prefix" = [8, 16, 24]
`

// TestAttackOnlySweepTrainsOnce runs a real 3-point sweep over
// extract.prefix: one point trains, the other two link its data and
// checkpoints and only attack, each with its own prefix; memo report puts
// the prefix on the table's axis; running the sweep again after losing a
// point's directory attacks again without training.
func TestAttackOnlySweepTrainsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a nano model and attacks it four times; skipped with -short")
	}
	exe := buildMemo(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "prefixes.toml"), []byte(attackSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	r := execMemo(t, exe, dir, "run", "--threads", "1", "prefixes.toml")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	sweep := filepath.Join(dir, "runs", "prefixes")
	trainer := filepath.Join(sweep, "prefix=8")
	// Exactly one checkpoints directory exists; the others are links to it.
	real, links := 0, 0
	for _, p := range []string{"prefix=8", "prefix=16", "prefix=24"} {
		st, err := os.Lstat(filepath.Join(sweep, p, "checkpoints"))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case st.Mode()&os.ModeSymlink != 0:
			links++
		case st.IsDir():
			real++
		}
		m, err := experiments.ReadManifest(filepath.Join(sweep, p))
		if err != nil {
			t.Fatal(err)
		}
		reused := m.Stage("train").ReusedFrom
		if (p == "prefix=8") != (reused == "") {
			t.Errorf("%s: train reused_from %q", p, reused)
		}
		s, err := eval.ReadSummary(filepath.Join(sweep, p, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		// Each point attacked with its own prefix, the trainer's checkpoint.
		var x struct{ Prefix int }
		if err := json.Unmarshal(s.Extract, &x); err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimPrefix(p, "prefix="); fmt.Sprint(x.Prefix) != want || s.Step == nil || *s.Step != 12 {
			t.Errorf("%s: attacked with prefix %d at step %v, want prefix %s at step 12", p, x.Prefix, s.Step, want)
		}
		log, err := os.ReadFile(filepath.Join(sweep, "logs", p+".log"))
		if err != nil {
			t.Fatal(err)
		}
		if trained := strings.Contains(string(log), "msg=train "); trained != (p == "prefix=8") {
			t.Errorf("%s: log shows training = %v", p, trained)
		}
	}
	if real != 1 || links != 2 {
		t.Errorf("%d checkpoints directories and %d links, want 1 and 2", real, links)
	}
	steps, _ := filepath.Glob(filepath.Join(trainer, "checkpoints", "step-*"))
	if len(steps) != 1 {
		t.Errorf("checkpoints %v, want one (trained once, 12 steps)", steps)
	}
	var idx struct {
		Points []struct {
			Name   string `json:"name"`
			Reuses string `json:"reuses_training_of"`
		} `json:"points"`
	}
	b, err := os.ReadFile(filepath.Join(sweep, "sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	for _, p := range idx.Points {
		if (p.Name == "prefix=8") != (p.Reuses == "") || (p.Reuses != "" && p.Reuses != "prefix=8") {
			t.Errorf("sweep.json point %s reuses %q", p.Name, p.Reuses)
		}
	}
	csv, err := os.ReadFile(filepath.Join(sweep, "report", "table.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(string(csv), "\n"); !strings.Contains(lines[0], "extract.prefix") || len(lines) < 4 {
		t.Errorf("report table lacks the prefix axis:\n%s", csv)
	}

	// Resume: a lost attack point is attacked again from the same
	// checkpoint; nothing trains.
	ckpt, _ := os.Stat(steps[0])
	if err := os.RemoveAll(filepath.Join(sweep, "prefix=24")); err != nil {
		t.Fatal(err)
	}
	r = execMemo(t, exe, dir, "run", "--threads", "1", "prefixes.toml")
	if r.code != 0 {
		t.Fatalf("rerun: exit %d\nstderr %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(sweep, "prefix=24", "summary.json")); err != nil {
		t.Error(err)
	}
	after, err := os.Stat(steps[0])
	if err != nil || !after.ModTime().Equal(ckpt.ModTime()) {
		t.Errorf("the trained checkpoint changed on the rerun (%v)", err)
	}
	if log, _ := os.ReadFile(filepath.Join(sweep, "logs", "prefix=24.log")); strings.Contains(string(log), "msg=train ") {
		t.Error("the rerun of prefix=24 trained")
	}
}

// TestSlurmAttackOnlySweepTrainsOnce: `memo sweep --slurm` puts the point
// that trains into slurm.sh and the two that only attack its model into
// slurm-attack.sh; running both arrays (the second after the first, as
// --submit chains them) trains once and attacks three times.
func TestSlurmAttackOnlySweepTrainsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a nano model and attacks it three times; skipped with -short")
	}
	exe := buildMemo(t)
	dir := t.TempDir()
	spec := filepath.Join(dir, "prefixes.toml")
	if err := os.WriteFile(spec, []byte(attackSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(dir, "runs")
	r := execMemo(t, exe, dir, "sweep", "--slurm", "--runs", runs, "--threads", "1", spec)
	if r.code != 0 || !strings.Contains(r.stdout, "slurm-attack.sh (2 attack-only tasks") {
		t.Fatalf("sweep --slurm: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	sweep := filepath.Join(runs, "prefixes")
	for _, job := range []struct {
		script string
		tasks  int
	}{{"slurm.sh", 1}, {"slurm-attack.sh", 2}} {
		b, err := os.ReadFile(filepath.Join(sweep, job.script))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("#SBATCH --array=0-%d\n", job.tasks-1); !strings.Contains(string(b), want) {
			t.Fatalf("%s lacks %q:\n%s", job.script, want, b)
		}
		for task := 0; task < job.tasks; task++ {
			cmd := exec.Command("bash", filepath.Join(sweep, job.script))
			cmd.Env = append(os.Environ(), "PATH="+fakeSlurm(t)+":"+os.Getenv("PATH"),
				fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d", task), "SLURM_ARRAY_JOB_ID=7", "SLURM_JOB_NODELIST=localhost",
				"SLURM_NTASKS=1", "SLURM_PROCID=0", "SLURM_LOCALID=0")
			out := combined(t, cmd)
			if trained := strings.Contains(out, "msg=train "); trained != (job.script == "slurm.sh") {
				t.Errorf("%s task %d: trained = %v:\n%s", job.script, task, trained, out)
			}
		}
	}
	for _, p := range []string{"prefix=8", "prefix=16", "prefix=24"} {
		m, err := experiments.ReadManifest(filepath.Join(sweep, p))
		if err != nil {
			t.Fatal(err)
		}
		if reused := m.Stage("train").ReusedFrom; (p == "prefix=8") != (reused == "") {
			t.Errorf("%s: train reused_from %q", p, reused)
		}
		if _, err := os.Stat(filepath.Join(sweep, p, "summary.json")); err != nil {
			t.Errorf("%s was not attacked: %v", p, err)
		}
	}
}
