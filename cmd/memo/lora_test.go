package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLoRARunScoreExportMerge: memo run with [train.lora] on an imported
// model trains adapters, and its extract and eval stages attack base +
// adapters; its checkpoint is a PEFT adapter directory (no model file);
// memo score --model on the run (base + adapters, unmerged on disk) and on
// memo export --merge's directory agree to 1e-5 and differ from the base;
// export without --merge, and anything once the base has moved, is one
// memo: line, exit 2.
func TestLoRARunScoreExportMerge(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the memo binary and trains")
	}
	exe := buildMemo(t)
	golden, _ := hfGolden(t, "llama-gqa-tied")
	work := t.TempDir()
	base := filepath.Join(work, "base")
	if err := os.CopyFS(base, os.DirFS(golden)); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(work, "lora.toml"), finetuneSpec("lora", base, "3e-2", `
[train.lora]
enabled = true
rank = 4
alpha = 8
targets = ["q_proj", "v_proj", "o_proj"]
`))
	if r := execMemo(t, exe, work, "run", "--runs", "runs", "--threads", "1", "lora.toml"); r.code != 0 {
		t.Fatalf("memo run exited %d:\n%s", r.code, r.stderr)
	}
	run := filepath.Join(work, "runs", "lora")
	for _, f := range []string{"completions.arrow", "scores.parquet", "summary.json"} {
		if _, err := os.Stat(filepath.Join(run, f)); err != nil {
			t.Errorf("the LoRA run left no %s: %v", f, err)
		}
	}
	ck, err := os.ReadFile(filepath.Join(run, "checkpoints", "latest"))
	if err != nil {
		t.Fatal(err)
	}
	step := filepath.Join(run, "checkpoints", strings.TrimSpace(string(ck)))
	for f, want := range map[string]bool{"adapter_config.json": true, "adapter_model.safetensors": true, "model.safetensors": false} {
		if _, err := os.Stat(filepath.Join(step, f)); (err == nil) != want {
			t.Errorf("%s: %s present = %v, want %v", step, f, err == nil, want)
		}
	}

	writeJSONFile(t, filepath.Join(work, "ids.json"), [][]int32{{5, 17, 99, 250, 3, 41, 8, 77, 120, 299}})
	score := func(model string) []float64 {
		r := execMemo(t, exe, work, "score", "--model", model, "--ids-json", "ids.json", "--json")
		if r.code != 0 {
			t.Fatalf("score --model %s exited %d: %s", model, r.code, r.stderr)
		}
		var v any
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Fatalf("score --json: %v: %s", err, r.stdout)
		}
		return numbers(v, nil)
	}
	out := filepath.Join(work, "merged")
	oneLine2 := func(r memoResult, what, want string) {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != 2 || len(lines) != 1 || !strings.HasPrefix(lines[0], "memo: ") || !strings.Contains(lines[0], want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and one memo: line containing %q", what, r.code, r.stderr, want)
		}
	}
	oneLine2(execMemo(t, exe, work, "export", run, out), "export of a LoRA run without --merge", "use memo export --merge")
	if r := execMemo(t, exe, work, "export", "--merge", run, out); r.code != 0 {
		t.Fatalf("memo export --merge exited %d: %s", r.code, r.stderr)
	}
	adapted, merged, plain := score(run), score(out), score(base)
	if len(adapted) == 0 || len(adapted) != len(merged) {
		t.Fatalf("scores: %d numbers from the run, %d from the merged export", len(adapted), len(merged))
	}
	var worst, moved float64
	for i := range adapted {
		worst = math.Max(worst, math.Abs(adapted[i]-merged[i]))
		moved = math.Max(moved, math.Abs(adapted[i]-plain[i]))
	}
	t.Logf("adapted (unmerged) vs merged scores: %.2g apart; adapted vs base: %.2g", worst, moved)
	if worst > 1e-5 {
		t.Errorf("the run's scores (base + adapters) and the merged export's differ by %g, want <= 1e-5", worst)
	}
	if moved < 1e-4 {
		t.Errorf("the LoRA run scores as the base does (%g apart): the adapters changed nothing", moved)
	}

	if err := os.Rename(base, base+".moved"); err != nil {
		t.Fatal(err)
	}
	oneLine2(execMemo(t, exe, work, "score", "--model", run, "--ids-json", "ids.json"), "score with the base moved", "LoRA base")
	oneLine2(execMemo(t, exe, work, "export", "--merge", run, out+"2"), "export --merge with the base moved", "LoRA base")
}

// numbers lists the numbers in a decoded JSON value, depth first, objects
// by sorted key (encoding/json decodes into maps; the order is fixed by
// sorting).
func numbers(v any, out []float64) []float64 {
	switch x := v.(type) {
	case float64:
		return append(out, x)
	case []any:
		for _, e := range x {
			out = numbers(e, out)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			out = numbers(x[k], out)
		}
	}
	return out
}

// finetuneSpec is a short fine-tune of the Hugging Face model in dir on a
// few Opticks documents at learning rate lr, with extra tables appended.
func finetuneSpec(name, dir, lr, extra string) string {
	return `name = "` + name + `"
seed = 3

[data]
sources = ["opticks"]
tokenizer = "bpe:300"
targets = 4
controls = 4
validation = 2
background = 0
repetitions = 8
chunk_tokens = 64
min_tokens = 60

[model]
init_from = "hf:` + dir + `"

[train]
epochs = 1
block = 64
batch_size = 4
lr = ` + lr + `
warmup_steps = 2
eval_every = 4
checkpoint_every = 4

[extract]
mode = "reference"
suffix = 16

[goldfish]
k = 4
strategy = "hash-table"
h = 13
` + extra
}

// TestIdleMitigationWarning: a run that sets [train.lora] keys with LoRA
// off is warned that they change nothing; a sweep point's spec, which
// holds the base table its other points turn on, is not (a review saw
// the warning in every point's log of exp/mitigations.toml).
func TestIdleMitigationWarning(t *testing.T) {
	exe := buildMemo(t)
	dir := t.TempDir()
	const warning = "the spec sets keys of a mitigation it leaves off"
	writeTestFile(t, filepath.Join(dir, "sweep.toml"), `name = "s"
[train.lora]
rank = 4
[sweep]
"goldfish.k" = [0, 4]
[[sweep_points]]
"goldfish.k" = 0
"train.lora.enabled" = true
`)
	writeTestFile(t, filepath.Join(dir, "run.toml"), "name = \"r\"\n[train.lora]\nrank = 4\n")
	if r := execMemo(t, exe, dir, "config", "run.toml"); r.code != 0 || !strings.Contains(r.stderr, warning) || !strings.Contains(r.stderr, "keys=train.lora.rank") {
		t.Errorf("a run with LoRA off and its rank set: exit %d, stderr %q; want the warning naming train.lora.rank", r.code, r.stderr)
	}
	if r := execMemo(t, exe, dir, "sweep", "--slurm", "--runs", "out", "sweep.toml"); r.code != 0 || strings.Contains(r.stderr, warning) {
		t.Fatalf("sweep --slurm: exit %d, stderr %q; want 0 and no warning", r.code, r.stderr)
	}
	points, err := filepath.Glob(filepath.Join(dir, "out", "s", "specs", "*.toml"))
	if err != nil || len(points) != 3 {
		t.Fatalf("point specs %v (%v), want 3", points, err)
	}
	for _, p := range points {
		if r := execMemo(t, exe, dir, "config", p); r.code != 0 || strings.Contains(r.stderr, warning) {
			t.Errorf("memo config %s: exit %d, stderr %q; want 0 and no warning", filepath.Base(p), r.code, r.stderr)
		}
	}
}
