package experiments

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseErrorsOnSpec runs the strict decoding on the real Spec (the
// load tests use a stand-in): nested unknown keys, wrong types, bad sweep
// values, each a one-line ConfigError with file, line and key.
func TestParseErrorsOnSpec(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		line      int
		key       string
		want      []string // substrings of the one-line error
	}{
		{"empty spec", "", 0, "", []string{"x.toml: the spec sets no key: write at least name"}},
		{"comments only", "\ufeff# a comment\n\n", 0, "", []string{"x.toml: the spec sets no key"}},
		{"empty tables only", "[model]\n[train]\n", 0, "", []string{"x.toml: the spec sets no key"}},
		{"unknown nested key", "name = 'x'\n[train]\nsteps = 10\nlearning_rat = 1e-3\n", 4, "train.learning_rat",
			[]string{`x.toml:4: train.learning_rat: unknown key "learning_rat" in [train]`, `see ` + "`memo config --defaults`"}},
		{"unknown nested key suggests", "[goldfish]\nstrategie = 'static'\n", 2, "goldfish.strategie",
			[]string{`unknown key "strategie" in [goldfish]; did you mean "strategy"?`, "valid keys: "}},
		{"unknown key in dotted table", "[model]\npreset = 'tiny'\nlayer = 2\n", 3, "model.layer",
			[]string{`x.toml:3: model.layer: unknown key "layer" in [model]; did you mean "layers"?`}},
		{"unknown table", "[evall]\nfpr = 0.1\n", 1, "evall",
			[]string{`unknown key "evall" at the top level; did you mean "eval"?`}},
		{"wrong type int", "\n[train]\nbatch_size = 'sixteen'\n", 3, "train.batch_size",
			[]string{"x.toml:3: train.batch_size: wrong type: the value is a TOML string, the key takes an integer"}},
		{"wrong type float", "[train]\nlr = 'fast'\n", 2, "train.lr",
			[]string{"x.toml:2: train.lr: wrong type: the value is a TOML string, the key takes a number"}},
		{"wrong type array", "[data]\nsources = 'opticks'\n", 2, "data.sources",
			[]string{"x.toml:2: data.sources: wrong type", "array"}},
		{"wrong type bool", "[model]\nuntied = 1\n", 2, "model.untied",
			[]string{"x.toml:2: model.untied: wrong type", "true or false"}},
		{"integer past 64 bits", "[train]\nsteps = 99999999999999999999\n", 2, "train.steps",
			[]string{"x.toml:2: train.steps: the integer is out of range"}},
		{"float past 1.8e308", "[train]\nlr = 1e400\n", 2, "train.lr",
			[]string{"x.toml:2: train.lr: the number is out of range (a TOML float"}},
		{"hf: in train.init_from", "[train]\ninit_from = 'hf:../testdata/hf/llama-gqa-tied'\n", 2, "train.init_from",
			[]string{"a Hugging Face model goes in model.init_from"}},
		{"two unknown keys, both named", "[train]\nlearning_rate = 1e-3\n[model]\nn_layer = 2\n", 2, "train.learning_rate",
			[]string{`x.toml:2: train.learning_rate: unknown key "learning_rate" in [train]; did you mean "lr"?`, "; also unknown: model.n_layer (line 4)"}},
		{"tokenizer past an imported vocabulary", "[data]\ntokenizer = 'bpe:400'\n[model]\ninit_from = 'hf:../testdata/hf/llama-gqa-tied'\n", 2, "data.tokenizer",
			[]string{`x.toml:2: data.tokenizer = "bpe:400" has 400 tokens, the model of model.init_from`, "they do not belong together"}},
		{"k below 2", "[goldfish]\nk = 1\n", 2, "goldfish.k",
			[]string{"x.toml:2: goldfish.k = 1: must be 0 (standard loss) or >= 2"}},
		{"prefix+suffix over context", "[model]\npreset = 'tiny'\n[extract]\nmode = 'fixed'\nprefix = 200\nsuffix = 100\n", 5, "extract.prefix",
			[]string{"prefix 200 + suffix 100 = 300 tokens exceed the model context 256"}},
		// Found by memo config rather than minutes into memo run.
		{"block over context", "[model]\npreset = 'nano'\n[train]\nblock = 4096\n", 4, "train.block",
			[]string{"x.toml:4: train.block = 4096: must be <= model.context = 256"}},
		{"missing reference model", "[extract]\nreference = 'no/such/run'\n", 2, "extract.reference",
			[]string{`x.toml:2: extract.reference = "no/such/run": no/such/run: no complete checkpoint`}},
		// An unquoted dotted axis is a table: named, with its line and how
		// to write it (it said "the key takes an array of integers").
		{"unquoted dotted sweep axis", "[sweep]\ngoldfish.k = [0, 4]\n", 2, "sweep.goldfish",
			[]string{`x.toml:2: sweep.goldfish: wrong type: the value is a TOML table, the key takes an array of values: quote a dotted axis, "goldfish.k" = [...]`}},
		{"scalar sweep axis", "[sweep]\n\"goldfish.k\" = 4\n", 2, "sweep.goldfish.k",
			[]string{`x.toml:2: sweep.goldfish.k: wrong type: the value is a TOML integer, the key takes an array of values`}},
		{"an exempt id past int32", "[goldfish]\nk = 4\nexempt_ids = [1, 99999999999]\n", 3, "goldfish.exempt_ids",
			[]string{`x.toml:3: goldfish.exempt_ids: an element of the array: 99999999999 does not fit: the key takes a 32-bit integer`}},
		{"missing eval reference", "[eval]\nreference = 'no/such/run'\n", 2, "eval.reference",
			[]string{`x.toml:2: eval.reference = "no/such/run": no such file or directory: want a run directory holding completions.arrow`}},
		{"eval reference a directory without completions", "[eval]\nreference = '.'\n", 2, "eval.reference",
			[]string{`eval.reference = ".": no such file or directory`}},
		{"missing hf reference model", "[extract]\nreference = 'hf:no/such/dir'\n", 2, "extract.reference",
			[]string{`x.toml:2: extract.reference = "hf:no/such/dir": no/such/dir: no config.json: not a Hugging Face model directory`}},
		{"hf reference that is a memo run", "[extract]\nreference = 'hf:../testdata/hf'\n", 2, "extract.reference",
			[]string{`no config.json: not a Hugging Face model directory`}},
		{"vocabulary below the tokenizer's", "[data]\ntokenizer = 'bpe:300'\n[model]\nvocab = 10\n", 4, "model.vocab",
			[]string{`x.toml:4: model.vocab = 10, but data.tokenizer = "bpe:300" has 300 tokens`}},
		{"loki rank over the head dimension", "[model]\npreset = 'nano'\n[extract]\nattention = 'loki'\nloki.rank = 1000\n", 5, "extract.loki.rank",
			[]string{"x.toml:5: extract.loki.rank = 1000: must be at most the model's head dimension"}},
		{"loki rank over the head dimension, by name", "[model]\npreset = 'nano'\n[extract]\napproximation = 'loki-r1000-k0.5'\n", 4, "extract.approximation",
			[]string{"extract.loki.rank = 1000: must be at most the model's head dimension"}},
		{"missing init_from", "[train]\ninit_from = 'no/such/run'\n", 2, "train.init_from",
			[]string{`x.toml:2: train.init_from = "no/such/run": no/such/run: no complete checkpoint`}},
		{"init_from of another shape", "[model]\npreset = 'tiny'\n[train]\ninit_from = '../testdata/hf/llama-gqa-tied'\n", 4, "train.init_from",
			[]string{"the weights do not fit"}},
		{"txt directory without text", "[data]\nsources = ['txt:internal']\n", 2, "data.sources",
			[]string{`x.toml:2: data.sources: "txt:internal": no .txt files under internal`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseBytes("x.toml", []byte(tc.doc))
			ce := wantConfigError(t, err, tc.line, tc.want...)
			if ce.Key != tc.key {
				t.Errorf("key = %q, want %q (%s)", ce.Key, tc.key, err)
			}
		})
	}
}

// TestExpandErrorsPointAtAxis: a bad sweep value is reported at the axis's
// line in the sweep file, not at a line of the generated point spec.
func TestExpandErrorsPointAtAxis(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		line      int
		want      string
	}{
		{"value out of range", "seed = 3\n[goldfish]\nh = 13\n[sweep]\n\"goldfish.k\" = [0, 1]\n", 5,
			"sw.toml:5: sweep.goldfish.k: grid point k=1: goldfish.k = 1: must be 0 (standard loss) or >= 2"},
		{"wrong type", "[sweep]\n\"model.preset\" = ['tiny']\n\"goldfish.k\" = [0, 'four']\n", 3,
			"sw.toml:3: sweep.goldfish.k: grid point k=four_preset=tiny: goldfish.k: wrong type: the value is a TOML string, the key takes an integer"},
		{"unknown preset", "[sweep]\n\"model.preset\" = ['tiny', 'huge-typo']\n", 2,
			"sw.toml:2: sweep.model.preset: grid point preset=huge-typo: model.preset"},
		{"axis over LoRA while it is off", "[train.lora]\nenabled = false\n[sweep]\n\"train.lora.rank\" = [4, 8]\n", 4,
			"sw.toml:4: sweep.train.lora.rank: train.lora.enabled is false at every point, so this axis changes nothing"},
		{"axis over DP while it is off", "[sweep]\n\"goldfish.k\" = [0, 4]\n\"train.dp.noise_multiplier\" = [0.5, 2.0]\n", 3,
			"sw.toml:3: sweep.train.dp.noise_multiplier: train.dp.enabled is false at every point"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := ParseBytes("sw.toml", []byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			_, err = spec.Expand()
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (%T), want *ConfigError", err, err)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
				t.Errorf("error = %q, want one line containing %q", msg, tc.want)
			}
			if ce.Line != tc.line || ce.File != "sw.toml" {
				t.Errorf("file:line = %s:%d, want sw.toml:%d", ce.File, ce.Line, tc.line)
			}
		})
	}
}

// An axis over a mitigation's settings is taken when the mitigation is on
// at some point: swept beside train.lora.enabled, or on in the spec.
func TestExpandTakesLiveMitigationAxes(t *testing.T) {
	for _, doc := range []string{
		"[sweep]\n\"train.lora.enabled\" = [false, true]\n\"train.lora.rank\" = [4, 8]\n",
		"[train.dp]\nenabled = true\nnoise_multiplier = 1.0\n[sweep]\n\"train.dp.max_grad_norm\" = [0.5, 1.0]\n",
	} {
		spec, err := ParseBytes("sw.toml", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := spec.Expand(); err != nil {
			t.Errorf("%q: %v", doc, err)
		}
	}
}

// A grid of more than maxSweepPoints points is refused when the spec
// loads, before it is expanded (nine axes of ten values asked for a
// billion runs and exhausted memory; found by fuzzing).
func TestSweepGridBounded(t *testing.T) {
	var doc strings.Builder
	doc.WriteString("[sweep]\n")
	for _, key := range []string{"train.lr", "train.seed", "train.steps", "goldfish.h", "data.seed"} {
		fmt.Fprintf(&doc, "%q = [%s]\n", key, strings.Repeat("1, ", 9)+"2")
	}
	_, err := ParseBytes("big.toml", []byte(doc.String()))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Line != 1 || !strings.Contains(err.Error(), "more than 10000 points (data.seed 10 × goldfish.h 10 × train.lr 10 × train.seed 10 × train.steps 10 values") {
		t.Fatalf("a 100000-point grid: %v", err)
	}
}

// TestUnfetchedCorpusIsConfigError: a built-in corpus missing from the cache
// fails when the spec loads, pointing at `memo data fetch`.
func TestUnfetchedCorpusIsConfigError(t *testing.T) {
	cache := t.TempDir()
	doc := func(extra string) []byte {
		return []byte("[data]\ncache_dir = '" + cache + "'\n" + extra)
	}
	for _, tc := range []struct {
		name, extra string
		line        int
		want        string // "" when the spec must load
	}{
		{"opticks needs no fetch", "sources = ['opticks']\n", 0, ""},
		{"moby-dick not fetched", "sources = ['opticks', 'moby-dick']\n", 3, "run `memo data fetch moby-dick` first"},
		{"kjv not fetched", "sources = ['kjv']\n", 3, "run `memo data fetch kjv` first"},
		{"gpt2 tokenizer not fetched", "tokenizer = 'gpt2'\n", 3, "run `memo data fetch gpt2` first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseBytes("x.toml", doc(tc.extra))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Line != tc.line || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a ConfigError at line %d containing %q", err, tc.line, tc.want)
			}
		})
	}

	// Once fetched (data's layout: the .complete marker, or kjv.txt), they load.
	for name, marker := range map[string]string{"moby-dick": ".complete", "gpt2": ".complete", "kjv": "kjv.txt"} {
		dir := filepath.Join(cache, "corpora", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, marker), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ParseBytes("x.toml", doc("sources = ['moby-dick', 'kjv']\ntokenizer = 'gpt2'\n")); err != nil {
		t.Errorf("fetched corpora: %v", err)
	}
}

// TestCheckRanks: a batch that does not split into the ranks is refused
// before the run starts, naming the key.
func TestCheckRanks(t *testing.T) {
	spec, err := ParseBytes("x.toml", []byte("[train]\nbatch_size = 8\ngrad_accum = 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		n    int
		want string
	}{
		{1, ""}, {2, ""}, {4, ""},
		{3, "x.toml: train.batch_size = 8: must be a multiple of 3 processes × train.grad_accum = 2"},
		{8, "must be a multiple of 8 processes"},
	} {
		err := spec.CheckRanks(tc.n)
		var ce *ConfigError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%d ranks: %v", tc.n, err)
		case tc.want != "" && (!errors.As(err, &ce) || ce.Key != "train.batch_size" || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%d ranks: %v, want a ConfigError on train.batch_size containing %q", tc.n, err, tc.want)
		}
	}
}

// TestCheckRanksEachPoint: every point of a sweep is held to the ranks,
// naming the point; a sweep whose points all split passes.
func TestCheckRanksEachPoint(t *testing.T) {
	spec, err := ParseBytes("sw.toml", []byte("[train]\nbatch_size = 8\n[sweep]\n\"train.batch_size\" = [8, 12]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.CheckRanksEachPoint(4); err != nil {
		t.Errorf("4 ranks, batches 8 and 12: %v", err)
	}
	var ce *ConfigError
	err = spec.CheckRanksEachPoint(8)
	if !errors.As(err, &ce) || ce.Key != "train.batch_size" || !strings.Contains(err.Error(), "sweep point batch_size=12: ") || !strings.Contains(err.Error(), "train.batch_size = 12: must be a multiple of 8 processes") {
		t.Errorf("8 ranks, batch 12: %v, want a ConfigError naming the point", err)
	}
}

// TestCheckRanksShard: train.shard needs two or more ranks.
func TestCheckRanksShard(t *testing.T) {
	spec, err := ParseBytes("x.toml", []byte("[train]\nbatch_size = 8\nshard = \"optimizer\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	var ce *ConfigError
	if err := spec.CheckRanks(1); !errors.As(err, &ce) || ce.Key != "train.shard" || !strings.Contains(err.Error(), "needs 2 or more processes") {
		t.Errorf("1 rank: %v, want a ConfigError on train.shard", err)
	}
	for _, n := range []int{2, 4} {
		if err := spec.CheckRanks(n); err != nil {
			t.Errorf("%d ranks: %v", n, err)
		}
	}
}

// [[sweep_points]] add runs to the grid: the matched-tokens control beside
// a sweep over k is one more point, named after its own keys, training its
// own model, and sweep.json's columns gain the key only it sets. Its bad
// values and unknown keys are reported at their line.
func TestSweepPoints(t *testing.T) {
	doc := "[goldfish]\nh = 13\n[sweep]\n\"goldfish.k\" = [0, 4]\n" +
		"[[sweep_points]]\n\"goldfish.k\" = 0\n\"train.match_supervised_tokens\" = 4\n"
	spec, err := ParseBytes("sw.toml", []byte(doc))
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
	}
	if want := "k=0 k=4 k=0_match_supervised_tokens=4"; strings.Join(names, " ") != want {
		t.Fatalf("points %v, want %s", names, want)
	}
	x := pts[2]
	if x.Spec.Train.MatchSupervisedTokens != 4 || x.Spec.Goldfish.K != 0 || x.Spec.Goldfish.H != 13 || x.Reuses != "" {
		t.Errorf("extra point: match %d, k %d, h %d, reuses %q; want 4, 0, 13 and its own training",
			x.Spec.Train.MatchSupervisedTokens, x.Spec.Goldfish.K, x.Spec.Goldfish.H, x.Reuses)
	}
	if pts[0].Spec.Train.MatchSupervisedTokens != 0 {
		t.Error("the extra point's key leaked into the grid")
	}
	if cols := spec.sweepColumns(); strings.Join(cols, " ") != "goldfish.k train.match_supervised_tokens" {
		t.Errorf("sweep.json columns %v", cols)
	}
	// Keys are shortened over every point: a DP-only and a LoRA-only
	// point were both "k=0_enabled=true", and refused as repeats.
	mit, err := ParseBytes("sw.toml", []byte("[[sweep_points]]\n\"goldfish.k\" = 0\n\"train.dp.enabled\" = true\n"+
		"[[sweep_points]]\n\"goldfish.k\" = 0\n\"train.lora.enabled\" = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	pts, err = mit.Expand()
	if err != nil || len(pts) != 2 || pts[0].Name != "k=0_train-dp-enabled=true" || pts[1].Name != "k=0_train-lora-enabled=true" {
		t.Errorf("DP and LoRA points: %v, %v; want k=0_train-dp-enabled=true and k=0_train-lora-enabled=true", pts, err)
	}
	// Extra points without a grid are the whole sweep.
	only, err := ParseBytes("sw.toml", []byte("[[sweep_points]]\n\"goldfish.k\" = 4\n"))
	if err != nil {
		t.Fatal(err)
	}
	if pts, err := only.Expand(); err != nil || len(pts) != 1 || pts[0].Name != "k=4" {
		t.Errorf("only [[sweep_points]]: %v, %v; want the one point k=4", pts, err)
	}
	for _, tc := range []struct {
		doc  string
		line int
		want string
	}{
		{"[sweep]\n\"goldfish.k\" = [0]\n[[sweep_points]]\n\"goldfish.k\" = 1\n", 4,
			"sweep_points.goldfish.k: [[sweep_points]] point k=1: goldfish.k = 1: must be 0"},
		{"[sweep]\n\"goldfish.k\" = [0]\n[[sweep_points]]\n\"goldfish.kk\" = 1\n", 4,
			`[[sweep_points]] number 1: "goldfish.kk" is not a key of the spec`},
		{"[sweep]\n\"goldfish.k\" = [0]\n[[sweep_points]]\n\"goldfish.k\" = 0\n", 0,
			`two sweep points are both named "k=0"`},
	} {
		spec, err := ParseBytes("sw.toml", []byte(tc.doc))
		if err == nil {
			_, err = spec.Expand()
		}
		var ce *ConfigError
		if !errors.As(err, &ce) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one line containing %q", tc.doc, err, tc.want)
			continue
		}
		if tc.line != 0 && ce.Line != tc.line {
			t.Errorf("%q: line %d, want %d", tc.doc, ce.Line, tc.line)
		}
	}
}
