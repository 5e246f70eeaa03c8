package experiments

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/plots"
)

// fakeStages replaces the stage packages with a recorder; failAt names a
// stage that fails once.
func fakeStages(t *testing.T, calls *[]string, failAt *string) {
	t.Helper()
	old := stageFunc
	t.Cleanup(func() { stageFunc = old })
	stageFunc = func(ctx context.Context, stage string, spec *Spec, dir string, opt Options) error {
		*calls = append(*calls, stage)
		if stage == *failAt {
			*failAt = ""
			return errors.New("boom")
		}
		return nil
	}
}

const miniSpec = "name = \"mini\"\n[goldfish]\nk = 4\n"

func TestRunResumesAndSkipsFinished(t *testing.T) {
	var calls []string
	failAt := "extract"
	fakeStages(t, &calls, &failAt)
	spec, err := ParseBytes("mini.toml", []byte(miniSpec))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir, err := Run(context.Background(), spec, root, Options{})
	if err == nil || !strings.Contains(err.Error(), "stage extract: boom") {
		t.Fatalf("first run: err = %v, want the extract failure", err)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s := m.Stage("extract"); s.Status != StatusFailed || s.Error != "boom" {
		t.Errorf("manifest extract = %+v, want failed with the error", s)
	}
	if m.Stage("train").Status != StatusDone || m.Stage("eval").Status != StatusPending {
		t.Errorf("manifest stages = %+v", m.Stages)
	}

	calls = nil
	if _, err := Run(context.Background(), spec, root, Options{}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"extract", "eval", "plots"}; !reflect.DeepEqual(calls, want) {
		t.Errorf("resumed run called %v, want %v", calls, want)
	}
	if !Finished(spec, dir) {
		t.Error("Finished = false after a complete run")
	}

	calls = nil
	if _, err := Run(context.Background(), spec, root, Options{}); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 0 {
		t.Errorf("re-running a finished run called %v, want nothing", calls)
	}
	conf, err := os.ReadFile(filepath.Join(dir, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseBytes("config.toml", conf)
	if err != nil {
		t.Fatalf("config.toml does not parse back as a spec: %v", err)
	}
	if h1, _ := spec.Hash(); func() string { h, _ := back.Hash(); return h }() != h1 {
		t.Error("config.toml parses back to a spec with another hash")
	}
	if m, _ := ReadManifest(dir); m.ConfigHash == "" || m.Machine.Cores == 0 || m.Versions.Go == "" {
		t.Errorf("manifest lacks hash/machine/versions: %+v", m)
	}
}

func TestRunRefusesChangedSpec(t *testing.T) {
	var calls []string
	none := ""
	fakeStages(t, &calls, &none)
	root := t.TempDir()
	a, _ := ParseBytes("mini.toml", []byte(miniSpec))
	if _, err := Run(context.Background(), a, root, Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := ParseBytes("mini.toml", []byte(strings.Replace(miniSpec, "k = 4", "k = 8", 1)))
	if err != nil {
		t.Fatal(err)
	}
	calls = nil
	_, err = Run(context.Background(), b, root, Options{})
	if !errors.Is(err, ErrSpecChanged) || !strings.Contains(err.Error(), "--force") || !strings.Contains(err.Error(), "(goldfish.k: 4 → 8)") {
		t.Fatalf("err = %v, want ErrSpecChanged naming goldfish.k and mentioning --force", err)
	}
	if len(calls) != 0 {
		t.Errorf("a refused run called stages %v", calls)
	}
	if strings.Contains(err.Error(), "--reuse-train") {
		t.Errorf("err = %v: points at --reuse-train for a change in training", err)
	}
	// A change that leaves training alone points at --reuse-train.
	c, err := ParseBytes("mini.toml", []byte(miniSpec+"[mia]\nreferences = 4\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), c, root, Options{})
	if !errors.Is(err, ErrSpecChanged) || !strings.Contains(err.Error(), "add --reuse-train "+filepath.Join(root, "mini")+" to attack its model") {
		t.Errorf("err = %v, want ErrSpecChanged pointing at --reuse-train", err)
	}
	// A config.toml that is not TOML is named as damaged, not as another
	// spec.
	conf := filepath.Join(root, "mini", "config.toml")
	good, _ := os.ReadFile(conf)
	if err := os.WriteFile(conf, []byte("\x00\x01 garbage ="), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), a, root, Options{}); !errors.Is(err, ErrSpecChanged) || !strings.Contains(err.Error(), "config.toml is damaged (not TOML") {
		t.Errorf("damaged config.toml: %v", err)
	}
	// Emptied, it is TOML (of no keys): named as not the file memo run
	// wrote, not as a spec with every key changed.
	if err := os.WriteFile(conf, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), a, root, Options{}); !errors.Is(err, ErrSpecChanged) || !strings.Contains(err.Error(), "config.toml is not the file memo run wrote") {
		t.Errorf("emptied config.toml: %v", err)
	}
	// Removed, the run's settings are unknown: its checkpoints, resumed,
	// made a run that claimed the new spec's settings throughout.
	if err := os.Remove(conf); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), b, root, Options{}); !errors.Is(err, ErrSpecChanged) || !strings.Contains(err.Error(), "has no config.toml but holds what a run made") {
		t.Errorf("config.toml removed from a run: %v", err)
	}
	if err := os.WriteFile(conf, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), b, root, Options{Force: true}); err != nil {
		t.Fatal(err)
	}
	old, _ := filepath.Glob(filepath.Join(root, "mini.old-*"))
	if len(old) != 1 {
		t.Errorf("--force left %v, want the old run moved aside once", old)
	}
	if !Finished(b, filepath.Join(root, "mini")) {
		t.Error("forced run did not finish")
	}
}

// A damaged manifest.json is bad input that says how to go on, and
// moving it aside lets the run redo its stages.
func TestRunDamagedManifest(t *testing.T) {
	var calls []string
	none := ""
	fakeStages(t, &calls, &none)
	root := t.TempDir()
	spec, _ := ParseBytes("mini.toml", []byte(miniSpec))
	if _, err := Run(context.Background(), spec, root, Options{}); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(root, "mini", ManifestFile)
	if err := os.WriteFile(manifest, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	calls = nil
	_, err := Run(context.Background(), spec, root, Options{})
	if !badinput.Is(err) || !strings.Contains(err.Error(), "manifest.json: unexpected end of JSON input: the run's record is damaged; move it aside") || len(calls) != 0 {
		t.Fatalf("damaged manifest: %v (stages %v), want bad input saying what to do, no stage run", err, calls)
	}
	if err := os.Rename(manifest, manifest+".damaged"); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), spec, root, Options{}); err != nil || len(calls) == 0 {
		t.Errorf("after moving the manifest aside: %v, stages %v", err, calls)
	}
}

func TestRunOnlySomeStages(t *testing.T) {
	var calls []string
	none := ""
	fakeStages(t, &calls, &none)
	spec, _ := ParseBytes("mini.toml", []byte(miniSpec))
	if _, err := Run(context.Background(), spec, t.TempDir(), Options{Stages: []string{"data"}}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(calls, []string{"data"}) {
		t.Errorf("calls = %v, want [data]", calls)
	}
	if _, err := Run(context.Background(), spec, t.TempDir(), Options{Stages: []string{"bogus"}}); err == nil || !badinput.Is(err) {
		t.Errorf("unknown stage: %v, want a bad-input refusal", err)
	}
}

// TestRunStagesNeedWhatTheyRead: a stage runs only where the stages it
// reads are done for this spec or asked for with it; a refusal writes
// nothing into the run directory.
func TestRunStagesNeedWhatTheyRead(t *testing.T) {
	var calls []string
	none := ""
	fakeStages(t, &calls, &none)
	spec, _ := ParseBytes("mini.toml", []byte(miniSpec))
	other, _ := ParseBytes("mini.toml", []byte(miniSpec+"\n[train]\nlr = 0.5\n"))
	root := t.TempDir()
	for i, tc := range []struct {
		spec   *Spec
		stages []string
		want   string // a refusal naming the stage to add; "" runs them
	}{
		{spec, []string{"eval"}, "add extract"},
		{spec, []string{"train"}, "add data"},
		{spec, []string{"data"}, ""},
		{spec, []string{"train"}, ""},
		{other, []string{"train"}, "add data"}, // a changed spec starts anew
		{spec, []string{"extract", "eval", "plots"}, ""},
	} {
		calls = nil
		_, err := Run(context.Background(), tc.spec, root, Options{Stages: tc.stages})
		if i == 0 {
			if _, err := os.Stat(filepath.Join(root, "mini")); err == nil {
				t.Errorf("the refusal of %v made the run directory", tc.stages)
			}
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("stages %v: %v", tc.stages, err)
		case tc.want == "" && !reflect.DeepEqual(calls, tc.stages):
			t.Errorf("stages %v ran %v", tc.stages, calls)
		case tc.want != "" && (err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) || len(calls) > 0):
			t.Errorf("stages %v: %v after running %v; want a bad-input refusal saying %q, nothing run", tc.stages, err, calls, tc.want)
		}
	}
}

func TestExpandSweep(t *testing.T) {
	doc := "name = \"gvs\"\nseed = 7\n[goldfish]\nh = 13\n[sweep]\n\"goldfish.k\" = [0, 4]\n\"model.preset\" = [\"nano\", \"tiny\"]\n"
	spec, err := ParseBytes("gvs.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	pts, err := spec.Expand()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pts {
		names = append(names, p.Name)
		if p.Spec.IsSweep() || p.Spec.Name != p.Name || p.Spec.Goldfish.H != 13 || p.Spec.Seed != 7 {
			t.Errorf("point %s: spec = name %q sweep %v h %d seed %d", p.Name, p.Spec.Name, p.Spec.Sweep, p.Spec.Goldfish.H, p.Spec.Seed)
		}
	}
	if want := []string{"k=0_preset=nano", "k=0_preset=tiny", "k=4_preset=nano", "k=4_preset=tiny"}; !reflect.DeepEqual(names, want) {
		t.Errorf("points = %v, want %v", names, want)
	}
	if pts[2].Spec.Goldfish.K != 4 || pts[2].Spec.Model.Preset != "nano" {
		t.Errorf("point %s has k=%d preset=%q", pts[2].Name, pts[2].Spec.Goldfish.K, pts[2].Spec.Model.Preset)
	}

	bad, err := ParseBytes("bad.toml", []byte("[sweep]\n\"goldfish.k\" = [0, 1]\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Expand()
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "grid point k=1") || !strings.Contains(err.Error(), "goldfish.k = 1") {
		t.Errorf("bad sweep value: err = %v", err)
	}
	wrongType, _ := ParseBytes("wt.toml", []byte("[sweep]\n\"goldfish.k\" = [\"four\"]\n"))
	if _, err := wrongType.Expand(); !errors.As(err, &ce) || !strings.Contains(err.Error(), "wrong type") {
		t.Errorf("wrong-type sweep value: err = %v", err)
	}
}

func TestPrepareSweepWritesIndex(t *testing.T) {
	spec, err := ParseBytes("gvs.toml", []byte("name = \"gvs\"\n[sweep]\n\"goldfish.k\" = [0, 4]\n"))
	if err != nil {
		t.Fatal(err)
	}
	dir, pts, err := PrepareSweep(spec, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		got, err := Parse(filepath.Join(dir, "specs", p.Name+".toml"))
		if err != nil {
			t.Fatalf("point spec does not parse: %v", err)
		}
		if got.Goldfish.K != p.Spec.Goldfish.K {
			t.Errorf("%s: k = %d, want %d", p.Name, got.Goldfish.K, p.Spec.Goldfish.K)
		}
	}
	// Written files are readable by all, as os.WriteFile(…, 0o644) makes them.
	for _, f := range []string{"sweep.json", filepath.Join("specs", pts[0].Name+".toml")} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, want -rw-r--r--", f, st.Mode().Perm())
		}
	}
}

// TestSweepOfAnotherGrid: preparing a sweep again after its grid dropped a
// value removes that point's spec (memo report --require-all counted it
// unfinished), and a point's run made from another version of its spec is
// told apart from its spec (memo report showed it as the grid's).
func TestSweepOfAnotherGrid(t *testing.T) {
	root := t.TempDir()
	prepareForce := func(doc string, force bool) (string, error) {
		spec, err := ParseBytes("gvs.toml", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		dir, _, err := PrepareSweep(spec, root, force)
		return dir, err
	}
	prepare := func(doc string) string {
		dir, err := prepareForce(doc, false)
		if err != nil {
			t.Fatal(err)
		}
		return dir
	}
	first := prepare("name = \"gvs\"\n[sweep]\n\"goldfish.k\" = [0, 4, 8]\n")
	// A report of the grid, as memo report writes it: kept while the grid
	// is, removed with it (a sweep cut short left the old grid's table,
	// which read as finished).
	report := filepath.Join(first, plots.ReportDir)
	writeTestFile(t, filepath.Join(report, plots.TableFile), "| k |\n")
	prepare("name = \"gvs\"\n[sweep]\n\"goldfish.k\" = [0, 4, 8]\n")
	if _, err := os.Stat(filepath.Join(report, plots.TableFile)); err != nil {
		t.Errorf("the report of an unchanged grid: %v, want it kept", err)
	}
	dir := prepare("name = \"gvs\"\n[sweep]\n\"goldfish.k\" = [0, 4]\n")
	if _, err := os.Stat(report); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the report of the old grid: %v, want it removed", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".report*")); len(left) > 0 {
		t.Errorf("removing the report left %v", left)
	}
	specs, err := filepath.Glob(filepath.Join(dir, "specs", "*.toml"))
	if err != nil || len(specs) != 2 {
		t.Errorf("specs/ holds %v, want k=0 and k=4 only", specs)
	}
	names, dirs, err := SweepPoints(dir)
	if err != nil || !slices.Equal(names, []string{"k=0", "k=4"}) || dirs[1] != filepath.Join(dir, "k=4") {
		t.Fatalf("SweepPoints = %v, %v, %v", names, dirs, err)
	}

	// k=4's run as its spec wrote it, then the spec edited.
	point, err := Parse(filepath.Join(dir, "specs", "k=4.toml"))
	if err != nil {
		t.Fatal(err)
	}
	conf, err := point.TOML()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dirs[1], 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirs[1], "config.toml"), conf, 0o644); err != nil {
		t.Fatal(err)
	}
	if why := StalePoint(dirs[1]); why != "" {
		t.Errorf("the run of its own spec: stale %q", why)
	}
	// Edited, the sweep is refused before its specs are rewritten, unless
	// forced (its runs then move aside as each runs again).
	edited := "name = \"gvs\"\n[train]\nsteps = 25\n[sweep]\n\"goldfish.k\" = [0, 4]\n"
	if _, err := prepareForce(edited, false); !errors.Is(err, ErrSpecChanged) || !strings.Contains(err.Error(), "(k=4)") {
		t.Errorf("preparing the edited sweep over k=4's run: %v, want ErrSpecChanged naming k=4", err)
	}
	if why := StalePoint(dirs[1]); why != "" {
		t.Errorf("after a refused edit: stale %q", why)
	}
	if _, err := prepareForce(edited, true); err != nil {
		t.Fatal(err)
	}
	if why := StalePoint(dirs[1]); !strings.Contains(why, "train.steps") {
		t.Errorf("after the spec's train.steps changed: stale %q, want it named", why)
	}
	if why := StalePoint(t.TempDir()); why != "" {
		t.Errorf("a run of no sweep: stale %q", why)
	}
}

func TestRunOnOtherRankKeepsNoBooks(t *testing.T) {
	var calls []string
	none := ""
	fakeStages(t, &calls, &none)
	t.Setenv("RANK", "1")
	t.Setenv("WORLD_SIZE", "2")
	spec, _ := ParseBytes("mini.toml", []byte(miniSpec))
	root := t.TempDir()
	if _, err := Run(context.Background(), spec, root, Options{Stages: []string{"train"}}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(calls, []string{"train"}) {
		t.Errorf("calls = %v, want [train]", calls)
	}
	if _, err := os.Stat(filepath.Join(root, "mini", "manifest.json")); !os.IsNotExist(err) {
		t.Errorf("rank 1 wrote manifest.json (err %v)", err)
	}
}

// TestInterruptedStageKeepsItsFiles: an attempt killed after it wrote a
// file (data linked in from the cache) records nothing; the next attempt
// finds the file in place and keeps it, and must still record it as the
// stage's output, so that deleting it later runs the stage again.
func TestSpecDiff(t *testing.T) {
	tests := []struct {
		name     string
		was, now map[string]any
		want     string
	}{
		{"same", map[string]any{"a": int64(1)}, map[string]any{"a": int64(1)}, ""},
		{"nested", map[string]any{"train": map[string]any{"steps": int64(30), "lr": 0.1}}, map[string]any{"train": map[string]any{"steps": int64(80), "lr": 0.1}}, "train.steps: 30 → 80"},
		{"added and removed", map[string]any{"a": "x"}, map[string]any{"b": []any{int64(1), int64(2)}}, `a: "x" → unset, b: unset → [1,2]`},
		{"many", map[string]any{"a": int64(1), "b": int64(1), "c": int64(1), "d": int64(1), "e": int64(1)}, map[string]any{"a": int64(2), "b": int64(2), "c": int64(2), "d": int64(2), "e": int64(2)}, "a: 1 → 2, b: 1 → 2, c: 1 → 2, and 2 more"},
	}
	for _, tt := range tests {
		if got := specDiff(tt.was, tt.now); got != tt.want {
			t.Errorf("%s: specDiff = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestInterruptedStageKeepsItsFiles(t *testing.T) {
	var calls []string
	old := stageFunc
	t.Cleanup(func() { stageFunc = old })
	kill := true
	stageFunc = func(ctx context.Context, stage string, spec *Spec, dir string, opt Options) error {
		calls = append(calls, stage)
		if stage != "data" {
			return nil
		}
		p := filepath.Join(dir, "data", "tokens.arrow")
		if _, err := os.Stat(p); err != nil { // as a cache link: made once, then kept
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, []byte("tokens"), 0o644); err != nil {
				return err
			}
		}
		if kill {
			kill = false
			return errors.New("killed")
		}
		return nil
	}
	spec, _ := ParseBytes("mini.toml", []byte(miniSpec))
	root := t.TempDir()
	if _, err := Run(context.Background(), spec, root, Options{}); err == nil {
		t.Fatal("the first attempt did not fail")
	}
	dir, err := Run(context.Background(), spec, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Stage("data").Outputs["data/tokens.arrow"]; !ok {
		t.Fatalf("data's outputs %v lack data/tokens.arrow, which the killed attempt wrote", m.Stage("data").Outputs)
	}
	if err := os.Remove(filepath.Join(dir, "data", "tokens.arrow")); err != nil {
		t.Fatal(err)
	}
	calls = nil
	if _, err := Run(context.Background(), spec, root, Options{}); err != nil {
		t.Fatal(err)
	}
	if len(calls) == 0 || calls[0] != "data" {
		t.Errorf("after deleting data/tokens.arrow the run called %v, want data first", calls)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "tokens.arrow")); err != nil {
		t.Errorf("data/tokens.arrow not made again: %v", err)
	}
}

func TestStaleTemp(t *testing.T) {
	for name, want := range map[string]bool{
		".scores.parquet.tmp-123":     true,
		".report.tmp-4567":            true,
		".docs.arrow.link-99":         true,
		".loss.png.tmp-1":             true,
		"scores.parquet.tmp-123":      false, // not hidden
		".tmp-step-000004-2718281828": false, // checkpoint's own
		".scores.parquet.tmp-12a":     false,
		".scores.parquet.tmp-":        false,
		".notes":                      false,
		".link-1":                     false, // no name before the infix
		".x":                          false,
		"":                            false,
	} {
		if got := staleTemp(name); got != want {
			t.Errorf("staleTemp(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestRunRemovesStaleTemps: what writers killed mid-write left in the run
// directory goes when the run starts again; other files stay.
func TestRunRemovesStaleTemps(t *testing.T) {
	var calls []string
	none := ""
	fakeStages(t, &calls, &none)
	root := t.TempDir()
	spec, _ := ParseBytes("mini.toml", []byte(miniSpec))
	dir, err := Run(context.Background(), spec, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	stale := []string{".summary.json.tmp-42", "figures/.loss.png.tmp-7", "data/.docs.arrow.link-3", ".report.tmp-9/table.md"}
	kept := []string{"notes.txt", ".hidden", "figures/.loss.png.tmp-x"}
	for _, f := range append(append([]string{}, stale...), kept...) {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Run(context.Background(), spec, root, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, f := range append(stale, ".report.tmp-9") {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s survived: %v", f, err)
		}
	}
	for _, f := range kept {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s, not a writer's leftover, is gone: %v", f, err)
		}
	}
}
