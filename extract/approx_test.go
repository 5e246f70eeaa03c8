package extract

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/train"
)

// An exact attack's slug and recorded config do not mention the
// approximation keys: they are what they were before the keys existed.
func TestExactConfigCanonical(t *testing.T) {
	cfg := DefaultConfig()
	b, err := json.Marshal(cfg.canonical())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"kv_bits", "attention", "speculative", "loki", "sift", "quantspec"} {
		if strings.Contains(string(b), `"`+k+`"`) {
			t.Errorf("exact config JSON mentions %q: %s", k, b)
		}
	}
	if s := cfg.Slug(); !strings.HasPrefix(s, "reference-s50.greedy.") || strings.Count(s, ".") != 2 {
		t.Errorf("exact slug %q", s)
	}
	cfg.Attention = "loki"
	if s := cfg.Slug(); !strings.HasPrefix(s, "reference-s50.greedy.loki-r8-k0.25.") {
		t.Errorf("loki slug %q", s)
	}
}

func TestApproxConfigErrors(t *testing.T) {
	for _, c := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.KVBits = 2 }, "extract.kv_bits = 2: must be 16 (exact), 8 or 4"},
		{func(c *Config) { c.Attention = "flash" }, `extract.attention = "flash": must be one of exact, loki, sift`},
		{func(c *Config) { c.Loki.TopK = 0 }, "extract.loki.top_k = 0"},
		// A count is whole: 1.5 kept one key, 2 two and 1 every one.
		{func(c *Config) { c.Loki.TopK = 1.5 }, "extract.loki.top_k = 1.5: must be a fraction in (0, 1] or a whole count"},
		{func(c *Config) { c.Sift.Quantile = 1 }, "extract.sift.quantile = 1"},
		{func(c *Config) { c.Speculative, c.Decoding = SpecQuantSpec, DecodeBeam }, `needs extract.decoding = "greedy"`},
		{func(c *Config) { c.Speculative, c.KVBits = SpecQuantSpec, 8 }, "set extract.kv_bits = 16"},
		{func(c *Config) { c.QuantSpec.Gamma = 0 }, "extract.quantspec.gamma = 0"},
	} {
		cfg := DefaultConfig()
		c.mod(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

// Every approximation through Run on a trained run: QuantSpec decodes
// every document exactly as plain greedy does; the others record their
// columns, Loki caches its key basis beside the checkpoint, and eval
// summarizes them.
// The Loki rank is bounded by the head dimension only when Loki attends;
// the spec check and the extract stage share the message.
func TestCheckHeadDim(t *testing.T) {
	tests := []struct {
		attention string
		rank      int
		wantErr   string
	}{
		{"loki", 16, ""},
		{"loki", 17, "extract.loki.rank = 17: must be at most the model's head dimension 16"},
		{"exact", 64, ""},
	}
	for _, tt := range tests {
		cfg := DefaultConfig()
		cfg.Attention, cfg.Loki.Rank = tt.attention, tt.rank
		err := cfg.CheckHeadDim(16)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s rank %d: unexpected %v", tt.attention, tt.rank, err)
		case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)):
			t.Errorf("%s rank %d: got %v, want %q", tt.attention, tt.rank, err, tt.wantErr)
		}
	}
}

func TestApproxRunOnATrainedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a dataset and trains a model")
	}
	ctx := context.Background()
	dir, ds, _ := trainTiny(t, func(d *data.Config) {
		d.Targets, d.Controls, d.Validation, d.Background = 6, 6, 2, 4
		d.Repetitions, d.ChunkTokens, d.MinTokens = 4, 64, 40
	}, func(c *train.Config) {
		c.Steps, c.Block, c.BatchSize, c.WarmupSteps = 60, 64, 8, 2
	})
	base := DefaultConfig()
	base.Suffix, base.BatchSize = 24, 5
	outDir := t.TempDir()
	run := func(name string, mod func(*Config)) []runfiles.Completion {
		cfg := base
		mod(&cfg)
		out := filepath.Join(outDir, name+".arrow")
		if err := Run(ctx, cfg, dir, ds, out, nil); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rows, err := eval.ReadCompletions(out)
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	exact := run("exact", func(*Config) {})
	if exact[0].Approx != nil {
		t.Fatal("an exact attack wrote approximation columns")
	}
	spec := run("quantspec", func(c *Config) { c.Speculative, c.QuantSpec.Gamma = SpecQuantSpec, 3 })
	var accept float64
	for i, r := range spec {
		if !reflect.DeepEqual(r.Generated, exact[i].Generated) {
			t.Errorf("doc %d: quantspec %v, greedy %v", r.DocID, r.Generated, exact[i].Generated)
		}
		if r.Approx == nil || r.Approx.ExactAgree != len(r.Generated) || !(r.Approx.SpecAccept >= 0 && r.Approx.SpecAccept <= 1) {
			t.Fatalf("doc %d: %+v", r.DocID, r.Approx)
		}
		accept += r.Approx.SpecAccept
	}
	t.Logf("quantspec acceptance %.3f over %d documents", accept/float64(len(spec)), len(spec))
	for name, mod := range map[string]func(*Config){
		"kv4":  func(c *Config) { c.KVBits = 4 },
		"loki": func(c *Config) { c.Attention, c.Loki.Rank, c.Loki.TopK, c.Loki.CalibrationDocs = "loki", 4, 0.25, 3 },
		"sift": func(c *Config) { c.Attention, c.Sift.Quantile = "sift", 0.9 },
	} {
		rows := run(name, mod)
		var mass, agree float64
		for _, r := range rows {
			a := r.Approx
			if a == nil || a.ExactAgree < 0 || a.ExactAgree > len(r.Generated) || !(a.KVBytesPerToken > 0) {
				t.Fatalf("%s doc %d: %+v", name, r.DocID, a)
			}
			mass += a.AttnMassKept
			agree += float64(a.ExactAgree)
		}
		mass /= float64(len(rows))
		t.Logf("%s: mass kept %.3f, tokens agreeing %.1f of %d", name, mass, agree/float64(len(rows)), base.Suffix)
		if name == "kv4" && mass != 1 || name != "kv4" && !(mass < 1) {
			t.Errorf("%s: mean attention mass kept %v", name, mass)
		}
	}
	ckpts, _ := filepath.Glob(filepath.Join(dir, "checkpoints", "step-*", "loki-basis-*.json"))
	if len(ckpts) != 1 {
		t.Errorf("loki bases beside the checkpoint: %v", ckpts)
	}
	sum, err := eval.Run(eval.DefaultConfig(), filepath.Join(outDir, "sift.arrow"), loss.Config{Strategy: loss.StrategyNone}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Approx == nil || sum.Approx.Method != "sift-q0.9" || sum.Approx.N != len(exact) || !(float64(sum.Approx.AttnMassKept) < 1) || math.IsNaN(float64(sum.Approx.KVBytesPerToken)) {
		t.Errorf("summary approx %+v", sum.Approx)
	}
}

// extract.approximation names what approxName prints, and sets its keys.
func TestApproximationKey(t *testing.T) {
	for _, name := range []string{"exact", "kv8", "kv4", "loki-r8-k0.25", "loki-r4-k16", "sift-q0.9", "quantspec-g4", "kv8+sift-q0.99"} {
		cfg := DefaultConfig()
		cfg.Approximation = name
		r, err := cfg.Resolved()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := r.approxName(); got != name {
			t.Errorf("%q resolves to %q", name, got)
		}
	}
	cfg := DefaultConfig()
	cfg.Approximation = "loki-r8-k0.25"
	r, _ := cfg.Resolved()
	if r.Attention != "loki" || r.Loki.Rank != 8 || r.Loki.TopK != 0.25 || r.KVBits != 16 {
		t.Errorf("loki-r8-k0.25 resolved to %+v", r)
	}
	for _, bad := range []string{"kv2", "loki-r8", "sift-q0.90", "exact+"} {
		cfg.Approximation = bad
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "extract.approximation") {
			t.Errorf("%q: got %v", bad, err)
		}
	}
}

// ApproximationKeys are exactly the keys an approximation name sets: memo
// extract blames --approximation for an error in one of them, and refuses
// their flags beside it.
func TestApproximationKeysAreTheOnesSet(t *testing.T) {
	base := DefaultConfig()
	// Values no name gives, so a key a name sets always changes.
	base.KVBits, base.Attention, base.Speculative = 99, "none-set", "none-set"
	base.Loki = LokiConfig{Rank: 99, TopK: 99, CalibrationDocs: 99}
	base.Sift = SiftConfig{Quantile: 99, Warmup: 99}
	base.QuantSpec = QuantSpecConfig{Gamma: 99}
	set := map[string]bool{}
	for _, name := range []string{"exact", "kv4+loki-r3-k0.5+quantspec-g2", "sift-q0.8"} {
		cfg := base
		cfg.Approximation = name
		r, err := cfg.Resolved()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		before, after := flatKeys(t, base), flatKeys(t, r)
		for k, v := range after {
			if k != "approximation" && fmt.Sprint(v) != fmt.Sprint(before[k]) {
				set[k] = true
			}
		}
	}
	var got []string
	for k := range set {
		got = append(got, k)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(ApproximationKeys))
	if !slices.Equal(got, want) {
		t.Errorf("approximation names set %v; ApproximationKeys say %v", got, want)
	}
}

// flatKeys maps cfg's dotted keys ("loki.rank") to their values, by the
// toml tags that name them in a config file.
func flatKeys(t *testing.T, cfg Config) map[string]any {
	t.Helper()
	out := map[string]any{}
	var walk func(prefix string, v reflect.Value)
	walk = func(prefix string, v reflect.Value) {
		for i := range v.NumField() {
			tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("toml"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			if f := v.Field(i); f.Kind() == reflect.Struct {
				walk(prefix+tag+".", f)
			} else {
				out[prefix+tag] = f.Interface()
			}
		}
	}
	walk("", reflect.ValueOf(cfg))
	return out
}

// The decode benchmark measures every approximation: fp32 bytes by hand
// for exact (nano: 2 layers · 4 KV heads · 2 · 16 dims · 4 bytes per
// cached token, 20 tokens on average over the 7 steps attending 17…23 of
// a 16-token prompt + 8 generated), fewer for a 4-bit cache, Loki and
// Sift (past its 4 warm-up steps).
func TestBenchApproximations(t *testing.T) {
	mc := model.Config{Preset: "nano", Vocab: 64, Seed: 2}
	run := func(a string) BenchResult {
		res, err := Bench(BenchConfig{Model: mc, Prefix: 16, Suffix: 8, Batch: 2, Decoding: DecodeGreedy, Reps: 1, Seed: 1, Approximation: a})
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		return res
	}
	exact := run("exact")
	if want := 1024 * 20.0; exact.KVBytesPerToken != want {
		t.Errorf("exact: %v KV bytes per token, want %v", exact.KVBytesPerToken, want)
	}
	for _, a := range []string{"kv4", "loki-r4-k0.25", "sift-q0.9"} {
		if r := run(a); !(r.KVBytesPerToken > 0 && r.KVBytesPerToken < exact.KVBytesPerToken) {
			t.Errorf("%s: %v KV bytes per token, exact %v", a, r.KVBytesPerToken, exact.KVBytesPerToken)
		}
	}
	if r := run("quantspec-g2"); !(r.SpecAccept > 0 && r.SpecAccept <= 1) {
		t.Errorf("quantspec: acceptance %v", r.SpecAccept)
	}
}

// Approximate attacks run extract's one batching loop, so they honour
// extract.samples and draw from the same random streams as exact ones:
// extract.approximation = "exact" draws exact decoding's guesses and
// measures them (every token agreeing; the decode-step kernel, which
// measured attention does not take, is off so that the logits are equal
// to the bit and the draws can be compared), an 8-bit cache draws samples
// guesses per prompt, and a 4-bit cache decodes beam search (which used
// to panic at its first widened step), each prompt measured.
func TestApproxHonoursSamples(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer torchx.SetKernels(torchx.SetKernels(false))
	ctx := context.Background()
	g := newModel(t, model.Config{Preset: "nano", Vocab: 256, Context: 64, Seed: 3})
	cfg := DefaultConfig()
	cfg.Mode, cfg.Prefix, cfg.Suffix, cfg.Decoding, cfg.Samples, cfg.BatchSize = ModeFixed, 8, 6, DecodeSample, 3, 4
	prompts := BuildPrompts(cfg, opticksDocs(t, 3, 40), 64)
	want, _, err := decodeAll(ctx, g, cfg, prompts, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	named := cfg
	named.Approximation = "exact"
	if named, err = named.Resolved(); err != nil {
		t.Fatal(err)
	}
	beam := cfg
	beam.KVBits, beam.Decoding, beam.Beams, beam.Samples = 4, DecodeBeam, 3, 2
	kv8 := cfg
	kv8.KVBits = 8
	for _, c := range []struct {
		name    string
		cfg     Config
		guesses int
	}{{"exact", named, 3}, {"kv8", kv8, 3}, {"kv4 beam", beam, 2}} {
		if err := c.cfg.Validate(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		gs, ms, err := approxAll(ctx, g, c.cfg, prompts, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.name == "exact" && !reflect.DeepEqual(gs, want) {
			t.Errorf("exact: approxAll's guesses differ from exact decoding's")
		}
		for i, m := range ms {
			if len(gs[i]) != c.guesses || m == nil {
				t.Fatalf("%s prompt %d: %d guesses, metrics %v; want %d and metrics", c.name, i, len(gs[i]), m, c.guesses)
			}
			if m.ExactAgree < 0 || m.ExactAgree > 6 || c.name == "exact" && m.ExactAgree != 6 || !(m.KVBytesPerToken > 0) || m.AttnMassKept != 1 {
				t.Errorf("%s prompt %d: %+v", c.name, i, *m)
			}
		}
	}
	// A one-token beam search never widens the cache past a row a prompt:
	// its measurements were read by beam row, past their end (a panic).
	one := kv8
	one.Decoding, one.Beams, one.Samples, one.Suffix, one.BatchSize = DecodeBeam, 3, 1, 1, 9
	if err := one.Validate(); err != nil {
		t.Fatal(err)
	}
	gs, ms, err := approxAll(ctx, g, one, BuildPrompts(one, opticksDocs(t, 3, 40), 64), nil)
	if err != nil || len(gs) != 3 || ms[2] == nil || ms[2].ExactAgree < 0 || ms[2].ExactAgree > 1 {
		t.Errorf("kv8 beam of one token: %d prompts, metrics %v, %v", len(gs), ms, err)
	}
}
