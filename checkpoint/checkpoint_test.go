package checkpoint

import (
	"encoding/json"
	"github.com/memo-research/memo/internal/filehash"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/safetensors"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

func TestMain(m *testing.M) {
	torchx.Init(1, 1)
	os.Exit(m.Run())
}

// testdata/run-v1 is a run directory whose one checkpoint was written by
// train before this package existed (the commit before it, c54cf32): a
// 1-layer, 16-wide untied model after 2 steps. Its expected.json holds the
// logits that commit's loader computed from it.
const oldRun = "testdata/run-v1"

var oldStep = filepath.Join(oldRun, DirName, "step-000002")

// copyRun copies the fixture run to a temporary directory for tests that
// change it.
func copyRun(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "run")
	if out, err := exec.Command("cp", "-r", oldRun, dst).CombinedOutput(); err != nil {
		t.Fatalf("copy %s: %v\n%s", oldRun, err, out)
	}
	return dst
}

func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A checkpoint written before the move loads, computes the logits it did
// then, and is written again byte for byte: the format did not change.
func TestOldCheckpointLoadsAndRewritesIdentically(t *testing.T) {
	g, _, dir, err := Load(oldRun, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	if dir != oldStep {
		t.Errorf("Load resolved %s to %s, want %s", oldRun, dir, oldStep)
	}
	c := g.Config()
	if c.Vocab != 256 || c.Dim != 16 || c.Layers != 1 || c.Heads != 2 || c.FFN != 48 || !c.Untied {
		t.Errorf("config %+v, want the fixture's 256/16/1/2/48 untied", c)
	}

	var exp struct {
		IDs    []int64   `json:"ids"`
		Vocab  int       `json:"vocab"`
		Logits []float64 `json:"logits_last"`
	}
	if err := json.Unmarshal(fileBytes(t, filepath.Join(oldRun, "expected.json")), &exp); err != nil {
		t.Fatal(err)
	}
	in := ts.MustOfSlice(exp.IDs).MustView([]int64{1, int64(len(exp.IDs))}, true)
	var logits *ts.Tensor
	torchx.NoGrad(func() { logits = g.Forward(in) })
	all := logits.Float64Values()
	last := all[len(all)-exp.Vocab:]
	worst := 0.0
	for i := range last {
		worst = math.Max(worst, math.Abs(last[i]-exp.Logits[i]))
	}
	t.Logf("largest logit difference from the pre-move loader: %g", worst)
	if worst > 1e-5 {
		t.Errorf("logits differ from the pre-move loader's by up to %g", worst)
	}

	// Save the loaded weights and moments again: the safetensors files
	// come out byte for byte as the old writer wrote them.
	opt := optimizerOf(t, g)
	if err := ReadInto(filepath.Join(dir, OptimizerFile), opt); err != nil {
		t.Fatal(err)
	}
	var st State
	if err := json.Unmarshal(fileBytes(t, filepath.Join(dir, StateFile)), &st); err != nil {
		t.Fatal(err)
	}
	want := st.SHA256
	run := t.TempDir()
	saved, err := Save(run, g, opt, st, 0)
	if err != nil {
		t.Fatal(err)
	}
	if saved != filepath.Join(run, DirName, StepName(2)) {
		t.Errorf("Save wrote %s", saved)
	}
	for _, f := range []string{ModelFile, OptimizerFile} {
		if string(fileBytes(t, filepath.Join(saved, f))) != string(fileBytes(t, filepath.Join(dir, f))) {
			t.Errorf("%s written again differs from the pre-move writer's", f)
		}
	}
	got, err := Verify(saved)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ModelFile, OptimizerFile} {
		if got.SHA256[f] != want[f] {
			t.Errorf("state.json records sha256 %s for %s, the old checkpoint %s", got.SHA256[f], f, want[f])
		}
	}
	if b := fileBytes(t, filepath.Join(run, DirName, LatestFile)); string(b) != StepName(2)+"\n" {
		t.Errorf("latest = %q", b)
	}
}

// optimizerOf makes zero tensors named and shaped as train's AdamW moments.
func optimizerOf(t *testing.T, g *model.GPT) []Named {
	t.Helper()
	var out []Named
	for _, p := range g.Params() {
		for _, suffix := range []string{".exp_avg", ".exp_avg_sq"} {
			out = append(out, Named{p.Name + suffix, ts.MustZeros(p.Tensor.MustSize(), gotch.Float, gotch.CPU)})
		}
	}
	return out
}

func TestVerifyRefusesDamage(t *testing.T) {
	cases := []struct {
		name   string
		damage func(dir string) error
		want   []string
	}{
		{"truncated weights", func(dir string) error { return os.Truncate(filepath.Join(dir, ModelFile), 1000) },
			[]string{ModelFile, "truncated or corrupt"}},
		{"flipped byte in the moments", func(dir string) error {
			p := filepath.Join(dir, OptimizerFile)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[len(b)-5] ^= 1
			return os.WriteFile(p, b, 0o644)
		}, []string{OptimizerFile, "truncated or corrupt"}},
		{"edited model.json", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, ModelJSONFile), []byte("{}"), 0o644)
		}, []string{ModelJSONFile, "truncated or corrupt"}},
		{"garbled state.json", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, StateFile), []byte(`{"step": 2, "sha`), 0o644)
		}, []string{StateFile, "is corrupt"}},
		{"state.json without a digest", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, StateFile), []byte(`{"step": 2, "sha256": {}}`), 0o644)
		}, []string{"records no sha256 for " + ModelFile}},
		// A digest shorter than the 12 characters the message shows
		// panicked (want[:12]); found by fuzzing.
		{"state.json with a short digest", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, StateFile), []byte(`{"step": 2, "sha256": {"model.safetensors": "ab", "optimizer.safetensors": "x", "model.json": ""}}`), 0o644)
		}, []string{ModelFile, `recorded "ab" (truncated or corrupt)`}},
		{"no state.json", func(dir string) error { return os.Remove(filepath.Join(dir, StateFile)) },
			[]string{StateFile, "no such file"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := copyRun(t)
			dir := filepath.Join(run, DirName, StepName(2))
			if _, err := Verify(dir); err != nil {
				t.Fatalf("the undamaged copy: %v", err)
			}
			if err := c.damage(dir); err != nil {
				t.Fatal(err)
			}
			_, err := Verify(dir)
			if err == nil {
				t.Fatal("Verify accepted the damaged checkpoint")
			}
			for _, w := range append(c.want, dir) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			// Nothing else is left, so resolving and resuming fail and say
			// why; damaged moments leave the model whole, which inference
			// and export take (VerifyWeights).
			_, err = Resolve(run)
			if onlyMoments := slices.Contains(c.want, OptimizerFile); onlyMoments && err != nil {
				t.Errorf("Resolve of a run whose model is whole but moments damaged: %v", err)
			} else if !onlyMoments && err == nil {
				t.Error("Resolve found a good checkpoint in a run whose only one is damaged")
			}
			if _, _, err := ResumePoint(run); err == nil || !strings.Contains(err.Error(), "train.no_resume") {
				t.Errorf("ResumePoint: %v, want a refusal that names train.no_resume", err)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	run := copyRun(t)
	good := filepath.Join(run, DirName, StepName(2))
	// An older, damaged copy and a newer damaged one: latest names the
	// damaged newest, which Resolve refuses by name (issue 25: it quietly
	// used step 2), pointing at step 2; named, step 2 is used.
	for _, n := range []int{1, 3} {
		d := filepath.Join(run, DirName, StepName(n))
		if out, err := exec.Command("cp", "-r", good, d).CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if err := os.Truncate(filepath.Join(d, ModelFile), 64); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(run, DirName, LatestFile), []byte(StepName(3)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path, want, err string
	}{
		{run, "", StepName(3) + ": " + ModelFile},
		{run, "", good + " verifies"},
		{filepath.Join(run, DirName), "", "it is the newest checkpoint"},
		{good, good, ""},
		{filepath.Join(run, DirName, StepName(3)), "", "truncated or corrupt"},
		{t.TempDir(), "", "no complete checkpoint"},
		{filepath.Join(t.TempDir(), "none"), "", "no complete checkpoint: it does not exist"},
		{weightsOnly(t), "", "holds model.safetensors but no config.json"},
		{withoutState(t), "", "a memo checkpoint (it has model.json) without its state.json"},
		{configOnly(t), "", "has a config.json but no model.safetensors or model.safetensors.index.json"},
	}
	for _, c := range cases {
		got, err := Resolve(c.path)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !badinput.Is(err) {
				t.Errorf("Resolve(%s) = %s, %v; want an error saying %q", c.path, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Resolve(%s) = %s, %v; want %s", c.path, got, err, c.want)
		}
	}
}

// TestWithoutOptimizer: a checkpoint whose optimizer moments were deleted
// (to save disk) is a model still: VerifyWeights and Resolve take it, Load
// loads it; Verify, which resuming needs, refuses it. Export and score
// once failed on the missing file.
func TestWithoutOptimizer(t *testing.T) {
	run := copyRun(t)
	step := filepath.Join(run, DirName, StepName(2))
	if err := os.Remove(filepath.Join(step, OptimizerFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(step); err == nil {
		t.Error("Verify took a checkpoint without its optimizer moments: a resume would fail loading them")
	}
	if _, err := VerifyWeights(step); err != nil {
		t.Errorf("VerifyWeights: %v", err)
	}
	if got, err := Resolve(run); err != nil || got != step {
		t.Errorf("Resolve(%s) = %s, %v; want %s", run, got, err, step)
	}
	if _, _, _, err := Load(run, "cpu"); err != nil {
		t.Errorf("Load: %v", err)
	}
	// A damaged model file is refused still.
	if err := os.Truncate(filepath.Join(step, ModelFile), 64); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyWeights(step); err == nil || !strings.Contains(err.Error(), "truncated or corrupt") {
		t.Errorf("VerifyWeights of truncated weights: %v", err)
	}
}

// weightsOnly is a directory of a model.safetensors without config.json.
func weightsOnly(t *testing.T) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// withoutState is a memo checkpoint's files less its state.json (a copy
// that left it out), which Resolve named as a Hugging Face directory
// without config.json.
func withoutState(t *testing.T) string {
	dir := weightsOnly(t)
	if err := os.WriteFile(filepath.Join(dir, ModelJSONFile), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// configOnly is a Hugging Face directory whose download stopped after
// config.json.
func configOnly(t *testing.T) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, HFConfigFile), []byte(`{"model_type": "llama"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestSaveKeepsTheNewest(t *testing.T) {
	g, _, _, err := Load(oldStep, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	opt := optimizerOf(t, g)
	// Past step 999,999 the names grow a digit: sorted as strings the
	// newest came first, and prune removed each as it was written.
	for _, steps := range [][]int{{1, 2, 3, 4}, {999_998, 999_999, 1_000_000, 1_000_001}} {
		run := t.TempDir()
		for _, step := range steps {
			if _, err := Save(run, g, opt, State{Step: step}, 2); err != nil {
				t.Fatal(err)
			}
		}
		ents, err := os.ReadDir(filepath.Join(run, DirName))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		want := []string{LatestFile, StepName(steps[2]), StepName(steps[3])}
		slices.Sort(names)
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Errorf("checkpoints/ holds %v, want %v (no temporary leftovers)", names, want)
		}
		got, st, err := LatestGood(run)
		if err != nil || got != filepath.Join(run, DirName, StepName(steps[3])) || st.Step != steps[3] {
			t.Errorf("LatestGood = %s, step %d, %v", got, st.Step, err)
		}
	}
}

func TestReadInto(t *testing.T) {
	g, _, dir, err := Load(oldStep, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	params := ModelTensors(g)
	values := map[string][]float32{}
	for _, p := range params {
		v, err := floatsOf(p.Tensor)
		if err != nil {
			t.Fatal(err)
		}
		values[p.Name] = v
	}
	tmp := t.TempDir()

	// The same weights stored as BF16 load as their BF16 roundings.
	bf16 := filepath.Join(tmp, "bf16.safetensors")
	desc := make([]safetensors.Tensor, len(params))
	for i, p := range params {
		desc[i] = safetensors.Tensor{Name: p.Name, DType: safetensors.BF16, Shape: p.Tensor.MustSize()}
	}
	if err := safetensors.Write(bf16, desc, nil, func(i int) ([]float32, error) { return values[params[i].Name], nil }); err != nil {
		t.Fatal(err)
	}
	if err := ReadInto(bf16, params); err != nil {
		t.Fatal(err)
	}
	for _, p := range params {
		got, _ := floatsOf(p.Tensor)
		for i, v := range values[p.Name] {
			if want := safetensors.BF16ToFloat32(safetensors.Float32ToBF16(v)); got[i] != want {
				t.Fatalf("%s[%d] = %v after loading BF16, want %v", p.Name, i, got[i], want)
			}
		}
	}

	// A tensor that cannot be filled in place (a transposed view) is
	// copied through libtorch and ends up with the same values.
	const upName = "model.layers.0.mlp.up_proj.weight"
	view := ts.MustZeros([]int64{16, 48}, gotch.Float, gotch.CPU).MustT(true)
	if view.MustIsContiguous() {
		t.Fatal("the transposed view is contiguous: the test no longer reaches the copy path")
	}
	if err := ReadInto(bf16, []Named{{upName, view}}); err != nil {
		t.Fatal(err)
	}
	viewVals, _ := floatsOf(view)
	for i, v := range values[upName] {
		if want := safetensors.BF16ToFloat32(safetensors.Float32ToBF16(v)); viewVals[i] != want {
			t.Fatalf("%s[%d] = %v loaded into a view, want %v", upName, i, viewVals[i], want)
		}
	}

	cases := []struct {
		name string
		dst  []Named
		want string
	}{
		{"missing tensor", []Named{{"model.layers.7.mlp.up_proj.weight", ts.MustZeros([]int64{48, 16}, gotch.Float, gotch.CPU)}},
			"tensor model.layers.7.mlp.up_proj.weight is missing"},
		{"other shape", []Named{{"model.norm.weight", ts.MustZeros([]int64{17}, gotch.Float, gotch.CPU)}},
			"tensor model.norm.weight: shape [16] in the file, the model has [17]"},
	}
	for _, c := range cases {
		path := filepath.Join(dir, ModelFile)
		err := ReadInto(path, c.dst)
		if err == nil || err.Error() != path+": "+c.want {
			t.Errorf("%s: ReadInto error %v, want %q", c.name, err, path+": "+c.want)
		}
	}
	if err := ReadInto(filepath.Join(tmp, "absent.safetensors"), params); err == nil {
		t.Error("ReadInto of a missing file succeeded")
	}
}

func TestRunDir(t *testing.T) {
	cases := []struct{ ckpt, want string }{
		{"/runs/a/checkpoints/step-000010", "/runs/a"},
		{"/runs/a/checkpoints/step-000010/", "/runs/a"},
		{"runs/a/checkpoints/step-1", "runs/a"},
		{"/elsewhere/step-000010", ""},
	}
	for _, c := range cases {
		if got := RunDir(c.ckpt); got != c.want {
			t.Errorf("RunDir(%s) = %q, want %q", c.ckpt, got, c.want)
		}
	}
}

// floatsOf copies a float32 tensor's values to Go memory.
func floatsOf(t *ts.Tensor) ([]float32, error) {
	var out []float32
	err := lendFloats(t, func(v []float32) error {
		out = slices.Clone(v)
		return nil
	})
	return out, err
}

// TestWriteTensorsFromStorage: tensors are written from their own memory
// (and a view through a libtorch copy) with the file's digest computed on
// the way, and a Save records those digests.
func TestWriteTensorsFromStorage(t *testing.T) {
	dense := ts.MustArange(ts.IntScalar(12), gotch.Float, gotch.CPU).MustView([]int64{3, 4}, true)
	view := ts.MustArange(ts.IntScalar(6), gotch.Float, gotch.CPU).MustView([]int64{2, 3}, true).MustT(true)
	if view.MustIsContiguous() {
		t.Fatal("the transposed view is contiguous: the test no longer reaches the copy path")
	}
	path := filepath.Join(t.TempDir(), "t.safetensors")
	sum, err := writeTensors(path, []Named{{"dense", dense}, {"view", view}}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filehash.SHA256(path); sum != want {
		t.Errorf("digest while writing %s, file's %s", sum, want)
	}
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, want := range map[string][]float32{"dense": {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, "view": {0, 3, 1, 4, 2, 5}} {
		got, err := f.Float32(name)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v (%v), want %v", name, got, err, want)
		}
	}
	if _, err := writeTensors(path, []Named{{"ints", ts.MustArange(ts.IntScalar(3), gotch.Int64, gotch.CPU)}}, nil, ""); err == nil || !strings.Contains(err.Error(), "want float32") {
		t.Errorf("an int64 tensor: err %v", err)
	}
}
