package experiments

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/badinput"
)

// Points that differ only in extract, eval or plots keys share a training
// key; any other key (here the goldfish k) makes a point train its own.
func TestExpandMarksAttackOnlyPoints(t *testing.T) {
	spec, err := ParseBytes("atk.toml", []byte("name = \"atk\"\n[extract]\nmode = \"fixed\"\n[sweep]\n\"goldfish.k\" = [0, 4]\n\"extract.prefix\" = [16, 32, 48]\n\"plots.dpi\" = [100]\n"))
	if err != nil {
		t.Fatal(err)
	}
	pts, err := spec.Expand()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range pts {
		got[p.Name] = p.Reuses
	}
	want := map[string]string{
		"prefix=16_k=0_dpi=100": "", "prefix=32_k=0_dpi=100": "prefix=16_k=0_dpi=100", "prefix=48_k=0_dpi=100": "prefix=16_k=0_dpi=100",
		"prefix=16_k=4_dpi=100": "", "prefix=32_k=4_dpi=100": "prefix=16_k=4_dpi=100", "prefix=48_k=4_dpi=100": "prefix=16_k=4_dpi=100",
	}
	if len(got) != len(want) {
		t.Fatalf("points %v, want %v", got, want)
	}
	for n, w := range want {
		if g, ok := got[n]; !ok || g != w {
			t.Errorf("point %s reuses %q, want %q (all: %v)", n, g, w, got)
		}
	}
}

// Run with ReuseTrain links the trained run's data, checkpoints and metrics
// instead of running data and train, records where from, and refuses a
// run trained with other settings or not trained yet, as bad input.
func TestRunReusesTraining(t *testing.T) {
	var calls []string
	none := ""
	fakeStages(t, &calls, &none)
	root := t.TempDir()
	srcDir, attack := trainedAndAttack(t, root, "x")
	calls = nil
	dir, err := Run(context.Background(), attack, root, Options{ReuseTrain: srcDir})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(calls, ",") != "extract,eval,plots" {
		t.Errorf("stages run %v, want only extract, eval, plots", calls)
	}
	for _, f := range []string{"data", "checkpoints", "metrics.arrow"} {
		link, err := os.Readlink(filepath.Join(dir, f))
		if err != nil || link != filepath.Join("..", "a", f) {
			t.Errorf("%s: link %q (%v), want ../a/%s", f, link, err, f)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "checkpoints", "latest")); err != nil || string(b) != "x" {
		t.Errorf("checkpoints/latest through the link: %q %v", b, err)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Stage("train").ReusedFrom != srcDir || m.Stage("data").ReusedFrom != srcDir || m.Stage("extract").ReusedFrom != "" || !m.Done(Stages) {
		t.Errorf("manifest stages %+v, want data and train reused from %s, all done", m.Stages, srcDir)
	}

	other, err := ParseBytes("c.toml", []byte("name = \"c\"\n[goldfish]\nk = 8\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), other, root, Options{ReuseTrain: srcDir})
	if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "only extract, eval, plots and mia may differ") {
		t.Errorf("reusing a run trained with goldfish k=4 for k=8: err = %v, want bad input", err)
	}
	// Refused before the run directory is made (it held config.toml and
	// manifest.json of a run that could never start).
	if _, err := os.Stat(filepath.Join(root, "c")); !os.IsNotExist(err) {
		t.Errorf("the refused reuse left %s (%v)", filepath.Join(root, "c"), err)
	}
}

func writeTestFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTrainingKey: specs that differ only in attack, reporting, reference
// model or scheduler settings train the same model; any training setting
// makes another.
func TestTrainingKey(t *testing.T) {
	base := "name = \"a\"\n[goldfish]\nk = 4\n"
	key := func(extra string) string {
		s, err := ParseBytes("a.toml", []byte(base+extra))
		if err != nil {
			t.Fatal(err)
		}
		k, err := s.TrainingKey()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	want := key("")
	tests := []struct {
		extra string
		same  bool
	}{
		{"[extract]\nsuffix = 16\n", true},
		{"[eval]\nbootstrap = 200\n", true},
		{"[plots]\ndpi = 72\n", true},
		{"[mia]\nreferences = 2\n", true},
		{"[slurm]\npartition = \"gpu\"\n", true},
		{"[train]\nlr = 1e-2\n", false},
		{"[data]\ntargets = 7\n", false},
		{"seed = 9\n", false},
	}
	for _, tt := range tests {
		if got := key(tt.extra) == want; got != tt.same {
			t.Errorf("%q: same training key %v, want %v", tt.extra, got, tt.same)
		}
	}
}

// reuseBase is the spec a trainer (a) and an attack-only run (b) share.
const reuseBase = "[goldfish]\nk = 4\n[extract]\nmode = \"fixed\"\n"

// trainedAndAttack runs trainer a under root (stages faked), gives it
// data, checkpoints and metrics files holding fill, and returns its
// directory and the spec of b, which may reuse its training.
func trainedAndAttack(t *testing.T, root, fill string) (string, *Spec) {
	t.Helper()
	trainer, err := ParseBytes("a.toml", []byte("name = \"a\"\n"+reuseBase+"prefix = 16\n"))
	if err != nil {
		t.Fatal(err)
	}
	srcDir, err := Run(context.Background(), trainer, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"data/docs.arrow", "checkpoints/latest", "metrics.arrow"} {
		writeTestFile(t, filepath.Join(srcDir, f), fill)
	}
	attack, err := ParseBytes("b.toml", []byte("name = \"b\"\n"+reuseBase+"prefix = 32\n"))
	if err != nil {
		t.Fatal(err)
	}
	return srcDir, attack
}

// TestForceKeepsReusersOnTheOldTraining: when --force moves a trainer
// aside to retrain it, the run beside it that reused its training links
// to the moved-aside copy (the model it attacked) and stays finished; its
// links used to follow the name to the new model.
func TestForceKeepsReusersOnTheOldTraining(t *testing.T) {
	var calls []string
	none := ""
	fakeStages(t, &calls, &none)
	root := t.TempDir()
	srcDir, attack := trainedAndAttack(t, root, "old")
	dir, err := Run(context.Background(), attack, root, Options{ReuseTrain: srcDir})
	if err != nil {
		t.Fatal(err)
	}
	retrained, err := ParseBytes("a.toml", []byte("name = \"a\"\n"+reuseBase+"prefix = 16\n[train]\nlr = 7e-4\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), retrained, root, Options{Force: true}); err != nil {
		t.Fatal(err)
	}
	asides, _ := filepath.Glob(filepath.Join(root, "a.old-*"))
	if len(asides) != 1 {
		t.Fatalf("moved-aside trainers: %v, want one", asides)
	}
	for _, f := range []string{"data", "checkpoints", "metrics.arrow"} {
		if link, err := os.Readlink(filepath.Join(dir, f)); err != nil || link != filepath.Join("..", filepath.Base(asides[0]), f) {
			t.Errorf("%s: link %q (%v), want it into %s", f, link, err, filepath.Base(asides[0]))
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "checkpoints", "latest")); err != nil || string(b) != "old" {
		t.Errorf("the reusing run's checkpoints/latest reads %q, %v; want the old training's", b, err)
	}
	if !finishedIntact(attack, dir) {
		t.Error("the reusing run is no longer finished after its links moved")
	}
}

// TestReuseTrainWithStages: --reuse-train with --stages extract,eval links
// the trained run's outputs as without --stages; extract used to find no
// data/ and advise `memo data build`.
func TestReuseTrainWithStages(t *testing.T) {
	var calls []string
	none := ""
	fakeStages(t, &calls, &none)
	root := t.TempDir()
	srcDir, attack := trainedAndAttack(t, root, "x")
	calls = nil
	dir, err := Run(context.Background(), attack, root, Options{ReuseTrain: srcDir, Stages: []string{"extract", "eval"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(calls, ",") != "extract,eval" {
		t.Errorf("stages run %v, want extract and eval", calls)
	}
	for _, f := range []string{"data", "checkpoints", "metrics.arrow"} {
		if link, err := os.Readlink(filepath.Join(dir, f)); err != nil || link != filepath.Join("..", "a", f) {
			t.Errorf("%s: link %q (%v), want ../a/%s", f, link, err, f)
		}
	}
}

// TestReuserOfARetrainedSource: a run that reuses the training of a run
// in another runs root (--reuse-train, so --force's retargeting of
// sibling links does not reach it) is not taken as finished, nor
// reported, once that source has been trained again: its links lead to
// another model than its scores describe. Run again with --reuse-train
// it relinks and attacks again; with the source gone it is refused.
func TestReuserOfARetrainedSource(t *testing.T) {
	var calls []string
	none := ""
	fakeStages(t, &calls, &none)
	srcDir, attack := trainedAndAttack(t, t.TempDir(), "x")
	root := t.TempDir()
	dir, err := Run(context.Background(), attack, root, Options{ReuseTrain: srcDir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), attack, root, Options{}); err != nil {
		t.Fatalf("the finished reuser run again: %v", err)
	}
	// The source trained again: its record of the train stage lists
	// other files.
	m, err := ReadManifest(srcDir)
	if err != nil {
		t.Fatal(err)
	}
	train := m.Stage("train")
	if train.Outputs == nil {
		train.Outputs = map[string]Output{}
	}
	train.Outputs["checkpoints/step-000030/model.safetensors"] = Output{Size: 30}
	if err := m.write(srcDir); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), attack, root, Options{})
	if !badinput.Is(err) || !strings.Contains(err.Error(), "whose train stage is not the one this run attacked") {
		t.Errorf("the reuser of a retrained source: %v; want it refused, naming the train stage", err)
	}
	if _, err := ReadPlotsSpec(dir); !badinput.Is(err) || !strings.Contains(err.Error(), "trained again or gone") {
		t.Errorf("the report of the reuser of a retrained source: %v; want it refused", err)
	}
	if finishedIntact(attack, dir) {
		t.Error("a sweep would skip the reuser of a retrained source as finished")
	}
	calls = nil
	if _, err := Run(context.Background(), attack, root, Options{ReuseTrain: srcDir}); err != nil {
		t.Fatalf("relinking with --reuse-train: %v", err)
	}
	if strings.Join(calls, ",") != "extract,eval,plots" {
		t.Errorf("stages run after relinking %v, want extract, eval, plots (the model they read changed)", calls)
	}
	if _, err := ReadPlotsSpec(dir); err != nil {
		t.Errorf("the report after relinking: %v", err)
	}
	if err := os.RemoveAll(srcDir); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), attack, root, Options{}); !badinput.Is(err) {
		t.Errorf("the reuser of a removed source: %v; want it refused", err)
	}
}

// TestReuseOfAFailedTraining names the source's failed stage as failed
// ("its train stage is failed, not done" read as a state to wait for).
func TestReuseOfAFailedTraining(t *testing.T) {
	var calls []string
	none := ""
	fakeStages(t, &calls, &none)
	root := t.TempDir()
	srcDir, attack := trainedAndAttack(t, root, "x")
	m, err := ReadManifest(srcDir)
	if err != nil {
		t.Fatal(err)
	}
	m.Stage("train").Status = StatusFailed
	if err := m.write(srcDir); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), attack, root, Options{ReuseTrain: srcDir})
	if !badinput.Is(err) || !strings.Contains(err.Error(), "its train stage failed") {
		t.Errorf("reusing a failed training: %v; want it named as failed", err)
	}
}
