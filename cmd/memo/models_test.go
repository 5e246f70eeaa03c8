package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/internal/hfgolden"
	"github.com/memo-research/memo/internal/hflib"
)

func hfGolden(t *testing.T, name string) (string, hfgolden.Case) {
	t.Helper()
	dir, err := hfgolden.Dir(filepath.Join("..", ".."), name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := hfgolden.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, c
}

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, path, string(b))
}

// TestScoreGenerateGoldens drives `memo score` and `memo generate` by token
// ids on each reference checkpoint and matches Hugging Face's values: NLL
// to the golden tolerance, greedy continuations exactly.
func TestScoreGenerateGoldens(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the memo binary")
	}
	exe := buildMemo(t)
	dirs, err := hfgolden.All(filepath.Join("..", ".."), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, dir := range dirs {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // a memo process a case: each in its own directories
			want, err := hfgolden.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			work := t.TempDir()
			writeJSONFile(t, filepath.Join(work, "ids.json"), map[string]any{"ids": want.IDs})
			r := execMemo(t, exe, work, "score", "--model", dir, "--ids-json", "ids.json", "--json")
			if r.code != 0 {
				t.Fatalf("score exited %d: %s", r.code, r.stderr)
			}
			var scored struct{ NLL [][]float64 }
			if err := json.Unmarshal([]byte(r.stdout), &scored); err != nil {
				t.Fatalf("score printed %q: %v", r.stdout, err)
			}
			if len(scored.NLL) != len(want.NLL) {
				t.Fatalf("%d rows of NLL, want %d", len(scored.NLL), len(want.NLL))
			}
			for i := range want.NLL {
				if len(scored.NLL[i]) != len(want.NLL[i]) {
					t.Fatalf("row %d: %d values, want %d", i, len(scored.NLL[i]), len(want.NLL[i]))
				}
				for j := range want.NLL[i] {
					if d := math.Abs(scored.NLL[i][j] - want.NLL[i][j]); !(d <= want.NLLTol()) {
						t.Errorf("row %d token %d: NLL %v, want %v", i, j+1, scored.NLL[i][j], want.NLL[i][j])
					}
				}
			}
			writeJSONFile(t, filepath.Join(work, "prompts.json"), want.GreedyPrompts)
			n := len(want.GreedyContinuations[0])
			r = execMemo(t, exe, work, "generate", "--model", dir, "--ids-json", "prompts.json", "--max-new", itoa(n), "--json")
			if r.code != 0 {
				t.Fatalf("generate exited %d: %s", r.code, r.stderr)
			}
			var gen struct{ IDs [][]int32 }
			if err := json.Unmarshal([]byte(r.stdout), &gen); err != nil {
				t.Fatalf("generate printed %q: %v", r.stdout, err)
			}
			for i := range want.GreedyContinuations {
				if i >= len(gen.IDs) || !slices.Equal(gen.IDs[i], want.GreedyContinuations[i]) {
					t.Errorf("row %d: generated %v, want %v", i, gen.IDs, want.GreedyContinuations[i])
				}
			}
		})
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// copyDir copies a reference checkpoint so a test can damage it.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHFBadInput: damaged or unsupported Hugging Face directories and ids
// the model cannot take are bad input: exit 2, one line naming the problem.
func TestHFBadInput(t *testing.T) {
	exe, src, work := hfDamageWork(t)
	writeJSONFile(t, filepath.Join(work, "big.json"), [][]int32{{1, 2, 320}})
	damaged := func(name string, damage func(dir string)) string {
		dir := filepath.Join(work, name)
		copyDir(t, src, dir)
		damage(dir)
		return dir
	}
	editConfig := func(edit func(map[string]any)) func(string) {
		return func(dir string) { editJSONFile(t, filepath.Join(dir, "config.json"), edit) }
	}
	cases := []struct {
		name, model, ids, want string
	}{
		{"missing shard", damaged("sharded", func(dir string) {
			os.Rename(filepath.Join(dir, "model.safetensors"), filepath.Join(dir, "model-00001-of-00002.safetensors"))
			writeJSONFile(t, filepath.Join(dir, "model.safetensors.index.json"), map[string]any{"weight_map": map[string]string{
				"model.embed_tokens.weight": "model-00001-of-00002.safetensors", "model.norm.weight": "model-00002-of-00002.safetensors"}})
		}), "ids.json", "model-00002-of-00002.safetensors"},
		{"truncated safetensors", damaged("truncated", func(dir string) {
			truncateBy(t, filepath.Join(dir, "model.safetensors"), 100)
		}), "ids.json", "model.safetensors"},
		{"unsupported architecture", damaged("mamba", editConfig(func(c map[string]any) {
			c["model_type"], c["architectures"] = "mamba", []string{"MambaForCausalLM"}
		})), "ids.json", `model_type = "mamba"`},
		{"class of another family", damaged("class", editConfig(func(c map[string]any) {
			c["architectures"] = []string{"GPT2LMHeadModel"}
		})), "ids.json", "GPT2LMHeadModel"},
		{"unimplemented rope scaling", damaged("yarn", editConfig(func(c map[string]any) {
			c["rope_scaling"] = map[string]any{"rope_type": "yarn", "factor": 4.0}
		})), "ids.json", `rope_type "yarn"`},
		{"weight missing for the layout", damaged("qknorm", editConfig(func(c map[string]any) {
			c["model_type"], c["architectures"] = "qwen3", []string{"Qwen3ForCausalLM"}
		})), "ids.json", "self_attn.q_norm.weight"},
		{"unknown config key", damaged("unknown-key", editConfig(func(c map[string]any) { c["attn_logit_softcapping"] = 50.0 })), "ids.json", "attn_logit_softcapping"},
		{"shape disagrees with config", damaged("shape", editConfig(func(c map[string]any) { c["intermediate_size"] = 128 })), "ids.json", "mlp"},
		{"no config.json", damaged("noconfig", func(dir string) { os.Remove(filepath.Join(dir, "config.json")) }), "ids.json", "noconfig"},
		{"unsupported dtype", damaged("int32", func(dir string) {
			p := filepath.Join(dir, "model.safetensors")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			// Same width, so the file stays consistent: only the dtype is wrong.
			b = []byte(strings.Replace(string(b), `"dtype":"F32"`, `"dtype":"I32"`, 1))
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}), "ids.json", "I32"},
		{"NaN weight", damaged("nan", poisonWeight(t, "model.norm.weight", float32(math.NaN()))), "ids.json", "NaN"},
		{"Inf in the embedding", damaged("inf", poisonWeight(t, "model.embed_tokens.weight", float32(math.Inf(1)))), "ids.json", "+Inf"},
		{"id outside the vocabulary", src, "big.json", "vocabulary"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each case reads its own damaged copy
			for _, cmd := range []string{"score", "generate"} {
				args := []string{cmd, "--model", c.model, "--ids-json", c.ids}
				r := execMemo(t, exe, work, args...)
				lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
				last := lines[len(lines)-1]
				if r.code != 2 || !strings.HasPrefix(last, "memo: ") || !strings.Contains(last, c.want) {
					t.Errorf("%s: exit %d, stderr %q; want exit 2 and one memo: line naming %q", cmd, r.code, r.stderr, c.want)
				}
				if strings.Contains(r.stderr, "goroutine") || strings.Contains(r.stderr, "panic") {
					t.Errorf("%s: stack trace on stderr: %s", cmd, r.stderr)
				}
			}
		})
	}
}

// TestFinetuneImportedThenExport runs a goldfish fine-tune of an imported
// Hugging Face checkpoint end to end (`memo run` with model.init_from),
// exports the result (`memo export`), and checks that the export scores
// exactly as the run's checkpoint does, and no longer as the import did.
func TestFinetuneImportedThenExport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the memo binary and trains")
	}
	exe := buildMemo(t)
	src, _ := hfGolden(t, "llama-gqa-tied")
	work := t.TempDir()
	writeTestFile(t, filepath.Join(work, "ft.toml"), finetuneSpec("ft", src, "3e-3", ""))
	r := execMemo(t, exe, work, "run", "--runs", "runs", "--threads", "1", "ft.toml")
	if r.code != 0 {
		t.Fatalf("memo run exited %d:\n%s", r.code, r.stderr)
	}
	run := filepath.Join(work, "runs", "ft")
	for _, f := range []string{"completions.arrow", "scores.parquet", "summary.json"} {
		if _, err := os.Stat(filepath.Join(run, f)); err != nil {
			t.Errorf("the fine-tune left no %s: %v", f, err)
		}
	}
	out := filepath.Join(work, "exported")
	if r := execMemo(t, exe, work, "export", run, out); r.code != 0 {
		t.Fatalf("memo export exited %d: %s", r.code, r.stderr)
	}
	raw, err := os.ReadFile(filepath.Join(out, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var hf map[string]any
	if err := json.Unmarshal(raw, &hf); err != nil {
		t.Fatal(err)
	}
	if hf["num_key_value_heads"] != 2.0 || hf["tie_word_embeddings"] != true || hf["model_type"] != "llama" {
		t.Errorf("exported config.json %s: want the imported architecture (2 KV heads, tied, llama)", raw)
	}
	for _, f := range []string{"model.safetensors", "tokenizer.json", "generation_config.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("export lacks %s", f)
		}
	}
	// Exporting again: OUT taken is bad input (exit 2); OUT under a file
	// cannot be written, a failure (exit 1), as any unwritable output.
	if r := execMemo(t, exe, work, "export", run, out); r.code != 2 || !strings.Contains(r.stderr, "exists; export writes a new directory") {
		t.Errorf("export onto an export: exit %d, %q; want 2", r.code, r.stderr)
	}
	if r := execMemo(t, exe, work, "export", run, filepath.Join(work, "ft.toml", "out")); r.code != 1 || !strings.Contains(r.stderr, "not a directory") {
		t.Errorf("export under a file: exit %d, %q; want 1", r.code, r.stderr)
	}
	t.Run("tokenizer in Hugging Face's library", func(t *testing.T) {
		hflib.Need(t)
		checkExportedTokenizer(t, filepath.Join(run, "data", "tokenizer.json"), filepath.Join(out, "tokenizer.json"))
	})
	writeJSONFile(t, filepath.Join(work, "ids.json"), [][]int32{{5, 17, 99, 250, 3, 41, 8, 77, 120, 299}})
	score := func(model string) string {
		r := execMemo(t, exe, work, "score", "--model", model, "--ids-json", "ids.json")
		if r.code != 0 {
			t.Fatalf("score --model %s exited %d: %s", model, r.code, r.stderr)
		}
		return r.stdout
	}
	if a, b := score(run), score(out); a != b {
		t.Errorf("the export scores %s, the run's checkpoint %s: want identical", b, a)
	}
	if a, b := score(run), score(src); a == b {
		t.Error("the fine-tuned model scores exactly as the imported one: training changed nothing")
	}
	if r := execMemo(t, exe, work, "generate", "--model", out, "--prompt", "Light is", "--max-new", "5"); r.code != 0 || !strings.HasPrefix(r.stdout, "Light is") {
		t.Errorf("generate --prompt on the export: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	// The continuation ends at an eos_token_id of generation_config.json
	// (here the third token greedy gives), kept in the ids, not in the text.
	type generated struct {
		IDs  [][]int32 `json:"ids"`
		Text []string  `json:"text"`
	}
	genJSON := func(model string, maxNew int, extra ...string) generated {
		r := execMemo(t, exe, work, append([]string{"generate", "--model", model, "--prompt", "Light is", "--max-new", itoa(maxNew), "--json"}, extra...)...)
		var g generated
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &g) != nil || len(g.IDs) != 1 || len(g.Text) != 1 {
			t.Fatalf("generate --json on %s: exit %d, stdout %q, stderr %s", model, r.code, r.stdout, r.stderr)
		}
		return g
	}
	full := genJSON(out, 6, "--ignore-eos")
	if len(full.IDs[0]) != 6 {
		t.Fatalf("generate --ignore-eos: %d ids, want 6", len(full.IDs[0]))
	}
	stops := filepath.Join(work, "stops")
	copyDir(t, out, stops)
	writeJSONFile(t, filepath.Join(stops, "generation_config.json"), map[string]any{"eos_token_id": []int32{999, full.IDs[0][2]}})
	if g := genJSON(stops, 6); !slices.Equal(g.IDs[0], full.IDs[0][:3]) || g.Text[0] != genJSON(stops, 2, "--ignore-eos").Text[0] {
		t.Errorf("generate with eos_token_id %d: ids %v, text %q; want %v and the text of the first two", full.IDs[0][2], g.IDs[0], g.Text[0], full.IDs[0][:3])
	}
	if r := execMemo(t, exe, work, "generate", "--model", out, "--ids-json", "ids.json", "--ignore-eos"); r.code != 2 || !strings.Contains(r.stderr, "--ignore-eos goes with --prompt") {
		t.Errorf("generate --ids-json --ignore-eos: exit %d, %s; want 2", r.code, r.stderr)
	}
	// A row fills the context exactly: the last new token is never fed
	// back, so a 3-token row takes context-2 new ones, and not one more.
	hfc := readJSON[struct {
		Context int `json:"max_position_embeddings"`
	}](t, filepath.Join(out, "config.json"))
	writeJSONFile(t, filepath.Join(work, "three.json"), [][]int32{{5, 17, 99}})
	if r := execMemo(t, exe, work, "generate", "--model", out, "--ids-json", "three.json", "--max-new", itoa(hfc.Context-2)); r.code != 0 {
		t.Errorf("generate of a row to the end of the %d-token context: exit %d, %s", hfc.Context, r.code, r.stderr)
	}
	if r := execMemo(t, exe, work, "generate", "--model", out, "--ids-json", "three.json", "--max-new", itoa(hfc.Context-1)); r.code != 2 || !strings.Contains(r.stderr, "(at most --max-new "+itoa(hfc.Context-2)+")") {
		t.Errorf("generate one token past the context: exit %d, %s", r.code, r.stderr)
	}
	// A Pythia-style audit: the imported model, untrained on these
	// documents, attacked on the run's data with the imported model as the
	// reference too (hf:DIR), then scored.
	audit := filepath.Join(work, "audit.completions.arrow")
	r = execMemo(t, exe, work, "extract", "--model", src, "--data", run, "--reference", "hf:"+src, "--out", audit)
	if r.code != 0 {
		t.Fatalf("extract --model exited %d: %s", r.code, r.stderr)
	}
	if r := execMemo(t, exe, work, "eval", audit); r.code != 0 {
		t.Fatalf("eval of the audit exited %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(work, "audit.summary.json")); err != nil {
		t.Errorf("eval wrote no summary beside the audit: %v", err)
	}
	if r := execMemo(t, exe, work, "extract", "--model", src, run); r.code != 2 {
		t.Errorf("extract --model with a RUN-DIR too: exit %d, want 2", r.code)
	}
}

// TestExportKeepsBaseTokenizerFiles: a fine-tune of a Hugging Face model
// with its own tokenizer exports what the base says of its special tokens
// (an eos_token_id list, as Llama 3's ends every turn with one of three,
// its sampling defaults) and the tokenizer's side files, which it used to
// drop for the tokenizer's one EOS and a bare tokenizer.json.
func TestExportKeepsBaseTokenizerFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the memo binary and trains")
	}
	exe := buildMemo(t)
	golden, _ := hfGolden(t, "llama-gqa-tied")
	work := t.TempDir()
	// A tokenizer of at most the base's 320 ids: memo's bpe:300 on the
	// same corpus, put in the base's directory as its own.
	writeTestFile(t, filepath.Join(work, "tok.toml"), finetuneSpec("tok", golden, "3e-3", ""))
	if r := execMemo(t, exe, work, "data", "build", "--out", "tokrun", "tok.toml"); r.code != 0 {
		t.Fatalf("data build: exit %d: %s", r.code, r.stderr)
	}
	eos := readJSON[struct {
		EOS int `json:"eos"`
	}](t, filepath.Join(work, "tokrun", "data", "report.json")).EOS
	base := filepath.Join(work, "base")
	copyDir(t, golden, base)
	tokJSON, err := os.ReadFile(filepath.Join(work, "tokrun", "data", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(base, "tokenizer.json"), string(tokJSON))
	tokConfig := `{"eos_token": "<|endoftext|>", "model_max_length": 64, "chat_template": "{{ messages }}"}`
	specialMap := `{"eos_token": "<|endoftext|>"}`
	writeTestFile(t, filepath.Join(base, "tokenizer_config.json"), tokConfig)
	writeTestFile(t, filepath.Join(base, "special_tokens_map.json"), specialMap)
	eosList := []int{eos, 7}
	writeJSONFile(t, filepath.Join(base, "generation_config.json"), map[string]any{"eos_token_id": eosList, "temperature": 0.6, "do_sample": true})
	cfg := readJSON[map[string]any](t, filepath.Join(base, "config.json"))
	cfg["eos_token_id"] = eosList
	writeJSONFile(t, filepath.Join(base, "config.json"), cfg)

	spec := strings.Replace(finetuneSpec("ft", base, "3e-3", ""), `tokenizer = "bpe:300"`, `tokenizer = "hf:`+base+`"`, 1)
	writeTestFile(t, filepath.Join(work, "ft.toml"), spec)
	if r := execMemo(t, exe, work, "run", "--runs", "runs", "--threads", "1", "--stages", "data,train", "ft.toml"); r.code != 0 {
		t.Fatalf("memo run exited %d:\n%s", r.code, r.stderr)
	}
	out := filepath.Join(work, "exported")
	if r := execMemo(t, exe, work, "export", filepath.Join(work, "runs", "ft"), out); r.code != 0 {
		t.Fatalf("memo export exited %d: %s", r.code, r.stderr)
	}
	for name, want := range map[string]string{"tokenizer_config.json": tokConfig, "special_tokens_map.json": specialMap} {
		if b, err := os.ReadFile(filepath.Join(out, name)); err != nil || string(b) != want {
			t.Errorf("exported %s: %q, %v; want the base's", name, b, err)
		}
	}
	gen := readJSON[map[string]any](t, filepath.Join(out, "generation_config.json"))
	if fmt.Sprint(gen["eos_token_id"]) != fmt.Sprint([]any{float64(eos), 7.0}) || gen["temperature"] != 0.6 {
		t.Errorf("exported generation_config.json %v: want the base's eos list %v and temperature", gen, eosList)
	}
	if c := readJSON[map[string]any](t, filepath.Join(out, "config.json")); fmt.Sprint(c["eos_token_id"]) != fmt.Sprint([]any{float64(eos), 7.0}) {
		t.Errorf("exported config.json eos_token_id %v: want the base's %v", c["eos_token_id"], eosList)
	}
}

// TestImportVocabularyMismatch: an experiment whose tokenizer has more ids
// than the imported model's vocabulary is refused by `memo config`, before
// any work, naming data.tokenizer.
func TestImportVocabularyMismatch(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the memo binary")
	}
	exe := buildMemo(t)
	src, _ := hfGolden(t, "llama-gqa-tied")
	work := t.TempDir()
	writeTestFile(t, filepath.Join(work, "x.toml"), `name = "x"
[data]
sources = ["opticks"]
tokenizer = "bpe:400"
[model]
init_from = "hf:`+src+`"
`)
	r := execMemo(t, exe, work, "config", "x.toml")
	if r.code != 2 || !strings.Contains(r.stderr, "data.tokenizer") || !strings.Contains(r.stderr, "400") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
		t.Errorf("memo config: exit %d, stderr %q; want exit 2 and one line naming data.tokenizer and its 400 tokens", r.code, r.stderr)
	}
	writeTestFile(t, filepath.Join(work, "y.toml"), `name = "y"
[data]
sources = ["opticks"]
tokenizer = "bpe:300"
[model]
init_from = "hf:`+src+`"
layers = 4
`)
	if r := execMemo(t, exe, work, "config", "y.toml"); r.code != 2 || !strings.Contains(r.stderr, "layers = 4") {
		t.Errorf("memo config with init_from and layers: exit %d, stderr %q; want exit 2 naming layers = 4", r.code, r.stderr)
	}
}

// TestConfigSet: `memo config --set` overrides keys (a TOML list with a
// comma stays one value) and refuses an unknown key with exit 2.
func TestConfigSet(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the memo binary")
	}
	exe := buildMemo(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	r := execMemo(t, exe, root, "config", "--set", "train.lr=1e-3", "--set", `sweep."goldfish.k"=[0, 8]`, "exp/goldfish-vs-standard.toml")
	if r.code != 0 || !strings.Contains(r.stdout, "lr = 0.001") || !strings.Contains(r.stdout, `"goldfish.k" = [0, 8]`) {
		t.Errorf("config --set: exit %d, stderr %s; the resolved spec lacks lr = 0.001 or the new sweep axis", r.code, r.stderr)
	}
	if r := execMemo(t, exe, root, "config", "--set", "train.lrr=1", "exp/goldfish-vs-standard.toml"); r.code != 2 || !strings.Contains(r.stderr, `"lrr"`) {
		t.Errorf("config --set train.lrr: exit %d, stderr %q; want exit 2 naming lrr", r.code, r.stderr)
	}
}

// poisonWeight writes v over the first value of tensor name (F32) in a
// directory's model.safetensors: a file that stays well-formed, with one
// non-finite weight.
func poisonWeight(t *testing.T, name string, v float32) func(dir string) {
	return func(dir string) {
		p := filepath.Join(dir, "model.safetensors")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		header, start := safetensorsHeader(t, b)
		putFirstF32(t, header, b[start:], name, v)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkExportedTokenizer: the tokenizer.json `memo export` wrote loads in
// Hugging Face's tokenizers library, which gives docs/HUGGING-FACE.md's sample text
// (and two more) the ids memo gives them with the run's tokenizer.
func checkExportedTokenizer(t *testing.T, runTokenizer, exported string) {
	texts := []string{"Hello world!", "Light is refracted.\n\nQuery 31.  Have not the small Particles?", "Hello<|endoftext|>world"}
	lib, err := hflib.Encode(exported, texts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := data.LoadTokenizer(runTokenizer)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if ids, _ := tok.Encode(text); !slices.Equal(ids, lib[i].IDs) {
			t.Errorf("%q: memo %v, the library on the export %v", text, ids, lib[i].IDs)
		}
	}
}
