package extract

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/engine/approx"
	"github.com/memo-research/memo/model"
)

// TestGuessLogProbByHand works the sequence log-probabilities of the toy
// Markov chain out by hand: top-1 sampling from 0 takes 1 (0.6) then one
// of the three tied at 1/3, and scores the guess under the untruncated
// distribution; beam
// width 2 keeps 2 → 0 (0.4 · 0.9 = 0.36) first and 1 → 0 (0.2) second. A
// greedy decoder's only guess carries no log-probability.
func TestGuessLogProbByHand(t *testing.T) {
	d := decoder{cfg: DefaultConfig()}
	g, err := d.guesses(&markov{table: toy}, [][]int32{{0}}, 2, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g[0][0].IDs, []int32{1, 0}) || g[0][0].LogProb != 0 {
		t.Errorf("greedy guess %+v, want [1 0] with no log p", g[0][0])
	}
	top1 := decoder{cfg: DefaultConfig()}
	top1.cfg.Decoding, top1.cfg.TopK = DecodeSample, 1
	g, err = top1.guesses(&markov{table: toy}, [][]int32{{0}}, 2, 2, []*rand.Rand{sampleRNG(1, 0), sampleRNG(2, 0)})
	if err != nil {
		t.Fatal(err)
	}
	wantLP := math.Log(0.6) + math.Log(1.0/3)
	for j, x := range g[0] {
		if len(x.IDs) != 2 || x.IDs[0] != 1 || math.Abs(x.LogProb-wantLP) > 1e-6 {
			t.Errorf("top-1 sample %d: %+v, want [1 _] with log p %.6f", j, x, wantLP)
		}
	}
	b, err := d.beamGuesses(&markov{table: toy}, [][]int32{{0}}, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		ids []int32
		lp  float64
	}{{[]int32{2, 0}, math.Log(0.3999 * 0.9)}, {[]int32{1, 0}, math.Log(0.6 / 3)}}
	for j, w := range want {
		if !reflect.DeepEqual(b[0][j].IDs, w.ids) || math.Abs(b[0][j].LogProb-w.lp) > 1e-6 || b[0][j].Sample != j {
			t.Errorf("beam %d = %+v, want %v with log p %.6f", j, b[0][j], w.ids, w.lp)
		}
	}
}

// TestGuessRNGKeepsOneSample: draw 0 is the stream one sample per prompt
// has always used, and draws differ from each other.
func TestGuessRNGKeepsOneSample(t *testing.T) {
	a, b, c := guessRNG(5, 17, 0), sampleRNG(5, 17), guessRNG(5, 17, 1)
	for range 10 {
		x, y, z := a.Uint64(), b.Uint64(), c.Uint64()
		if x != y {
			t.Fatal("draw 0 is not sampleRNG's stream")
		}
		if x == z {
			t.Fatal("draws 0 and 1 share a stream")
		}
	}
}

func TestRankGuesses(t *testing.T) {
	gs := []Guess{{Sample: 0, LogProb: -3}, {Sample: 1, LogProb: -1}, {Sample: 2, LogProb: -3}, {Sample: 3, LogProb: -2}}
	rankGuesses(gs)
	var order []int
	for _, g := range gs {
		order = append(order, g.Sample)
	}
	if !reflect.DeepEqual(order, []int{1, 3, 0, 2}) {
		t.Errorf("ranked samples %v, want [1 3 0 2]", order)
	}
}

// TestSharedPromptMatchesSeparatePrompts: N samples of a prompt run once
// and expanded in the KV cache draw exactly what N copies of the prompt,
// each run in full, draw with the same generators — on a real model.
func TestSharedPromptMatchesSeparatePrompts(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g := newModel(t, model.Config{Preset: "nano", Vocab: 256, Context: 64, Seed: 3})
	cfg := DefaultConfig()
	cfg.Decoding, cfg.Temperature, cfg.TopK = DecodeSample, 1.3, 40
	d := decoder{cfg: cfg}
	prompts := [][]int32{[]int32("Of the Refractions"), []int32("Light is")}
	const per, n = 4, 12
	rngs := func() []*rand.Rand {
		var out []*rand.Rand
		for p := range prompts {
			for j := 0; j < per; j++ {
				out = append(out, guessRNG(7, int64(p), j))
			}
		}
		return out
	}
	shared, err := d.guesses(engine.NewStepper(g, true), prompts, n, per, rngs())
	if err != nil {
		t.Fatal(err)
	}
	var copies [][]int32
	for _, p := range prompts {
		for range per {
			copies = append(copies, p)
		}
	}
	separate, err := d.guesses(engine.NewStepper(g, true), copies, n, 1, rngs())
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[string]bool{}
	for p := range prompts {
		for j := 0; j < per; j++ {
			a, b := shared[p][j], separate[p*per+j][0]
			if !reflect.DeepEqual(a.IDs, b.IDs) || math.Abs(a.LogProb-b.LogProb) > 1e-4 {
				t.Errorf("prompt %d sample %d: shared %v (%.5f), separate %v (%.5f)", p, j, a.IDs, a.LogProb, b.IDs, b.LogProb)
			}
			if a.LogProb >= 0 || math.IsNaN(a.LogProb) {
				t.Errorf("prompt %d sample %d: log p %v, want < 0", p, j, a.LogProb)
			}
			distinct[fmt.Sprint(p, a.IDs)] = true
		}
	}
	if len(distinct) < len(prompts)*2 {
		t.Errorf("only %d distinct guesses of %d: the draws do not differ", len(distinct), len(prompts)*per)
	}
}

// TestDecodeAllRanksAndTrims: decodeAll returns samples guesses per
// attacked prompt, ranked, as long as the suffix, and its best is what
// generateAll returns.
func TestDecodeAllRanksAndTrims(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g := newModel(t, model.Config{Preset: "nano", Vocab: 256, Context: 64, Seed: 3})
	cfg := DefaultConfig()
	cfg.Mode, cfg.Prefix, cfg.Suffix, cfg.Decoding, cfg.Samples, cfg.BatchSize = ModeFixed, 8, 6, DecodeSample, 3, 4
	prompts := BuildPrompts(cfg, opticksDocs(t, 3, 40), 64)
	gs, ms, err := decodeAll(context.Background(), g, cfg, prompts, true, nil)
	if err != nil || ms != nil {
		t.Fatal(err)
	}
	top, err := generateAll(context.Background(), g, cfg, prompts, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range prompts {
		if len(gs[i]) != 3 {
			t.Fatalf("prompt %d: %d guesses, want 3", i, len(gs[i]))
		}
		for j, x := range gs[i] {
			if len(x.IDs) != 6 || j > 0 && x.LogProb > gs[i][j-1].LogProb {
				t.Errorf("prompt %d guess %d: %d tokens, log p %v after %v: want 6 tokens, ranked", i, j, len(x.IDs), x.LogProb, gs[i][max(j-1, 0)].LogProb)
			}
		}
		if !reflect.DeepEqual(top[i], gs[i][0].IDs) {
			t.Errorf("prompt %d: generateAll %v, best guess %v", i, top[i], gs[i][0].IDs)
		}
	}
}

func TestSamplesValidate(t *testing.T) {
	for _, c := range []struct {
		dec           string
		samples, beam int
		want          string
	}{
		{DecodeGreedy, 2, 4, `extract.samples = 2: greedy decoding has one guess per prompt`},
		{DecodeBeam, 5, 4, `extract.samples = 5: beam search returns at most its 4 beams`},
		{DecodeSample, 0, 4, `extract.samples = 0: must be between 1 and 10000`},
	} {
		cfg := DefaultConfig()
		cfg.Decoding, cfg.Samples, cfg.Beams = c.dec, c.samples, c.beam
		if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s samples=%d: %v, want %q", c.dec, c.samples, err, c.want)
		}
	}
	approx := DefaultConfig()
	approx.Decoding, approx.Samples, approx.KVBits = DecodeSample, 2, 8
	if err := approx.Validate(); err != nil {
		t.Errorf("samples with an approximate cache: %v", err)
	}
	ok := DefaultConfig()
	ok.Decoding, ok.Samples = DecodeBeam, 4
	if err := ok.Validate(); err != nil {
		t.Errorf("beam with samples = beams: %v", err)
	}
}

func TestCheckpointSteps(t *testing.T) {
	for _, c := range []struct {
		v     any
		all   bool
		steps []int
		err   string
	}{
		{nil, false, nil, ""}, {"last", false, nil, ""}, {"all", true, nil, ""},
		{[]any{int64(20), int64(10)}, false, []int{10, 20}, ""},
		{[]any{float64(5)}, false, []int{5}, ""},
		{"every", false, nil, `extract.checkpoints = every: unknown value`},
		{[]any{}, false, nil, "the list is empty"},
		{[]any{int64(3), int64(3)}, false, nil, "step 3 is listed twice"},
		{[]any{int64(0)}, false, nil, "step 0 is below 1"},
		{[]any{"x"}, false, nil, "step x is not an integer"},
		{int64(4), false, nil, "not a string or a list"},
	} {
		cfg := DefaultConfig()
		cfg.Checkpoints = c.v
		all, steps, err := cfg.CheckpointSteps()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want %q", c.v, err, c.err)
			}
			continue
		}
		if err != nil || all != c.all || !reflect.DeepEqual(steps, c.steps) {
			t.Errorf("%v: %v %v %v, want %v %v", c.v, all, steps, err, c.all, c.steps)
		}
	}
}

// TestSlugIgnoresDefaults: a config without the samples and checkpoints
// keys keeps its file name; samples > 1 changes it.
func TestSlugIgnoresDefaults(t *testing.T) {
	a := DefaultConfig()
	b := a
	b.Samples, b.Checkpoints = 0, nil
	if a.Slug() != b.Slug() {
		t.Errorf("default samples/checkpoints change the slug: %s vs %s", a.Slug(), b.Slug())
	}
	c := a
	c.Checkpoints = "all"
	if a.Slug() != c.Slug() {
		t.Error("extract.checkpoints changes the slug of one checkpoint's attack")
	}
	d := a
	d.Decoding, d.Samples = DecodeSample, 10
	e := d
	e.Samples = 1
	if d.Slug() == e.Slug() {
		t.Error("samples = 10 and samples = 1 share a slug")
	}
	// A decoding's keys under another decoding change nothing it
	// computes, nor its file name; under their own decoding they do.
	for _, tc := range []struct {
		decoding string
		set      func(*Config)
		changes  bool
	}{
		{DecodeGreedy, func(c *Config) { c.TopK = 40 }, false},
		{DecodeGreedy, func(c *Config) { c.Temperature, c.TopP = 0.5, 0.9 }, false},
		{DecodeGreedy, func(c *Config) { c.Beams = 8 }, false},
		{DecodeBeam, func(c *Config) { c.TopK = 40 }, false},
		{DecodeBeam, func(c *Config) { c.Beams = 8 }, true},
		{DecodeSample, func(c *Config) { c.Beams = 8 }, false},
		{DecodeSample, func(c *Config) { c.TopK = 40 }, true},
		{DecodeSample, func(c *Config) { c.Temperature = 0.5 }, true},
	} {
		base := DefaultConfig()
		base.Decoding = tc.decoding
		set := base
		tc.set(&set)
		if changed := base.Slug() != set.Slug(); changed != tc.changes {
			t.Errorf("%s: slug changed %v, want %v (%s vs %s)", tc.decoding, changed, tc.changes, base.Slug(), set.Slug())
		}
	}
}

// logitsOnly hides a stepper's greedy methods, so that guesses decodes
// greedily from the logits on the host, as before the argmax moved to
// the device.
type logitsOnly struct{ stepper }

// Greedy guesses through the device's argmax (engine.Stepper's
// StartGreedy and NextGreedy) must be the guesses engine.Greedy picks from
// the logits, on a real model, exact and under an approximation, and the
// decode bench's timing wrapper must keep the device path.
func TestGreedyGuessesOnDeviceMatchLogits(t *testing.T) {
	g := newModel(t, model.Config{Preset: "nano", Vocab: 256, Context: 64, Seed: 5})
	d := decoder{cfg: DefaultConfig()}
	prompts := [][]int32{[]int32("Of the Refractions"), []int32("Light is"), []int32("x")}
	const n = 16
	for name, mk := range exactAndKV8(t, g) {
		if _, ok := mk().(greedyStepper); !ok {
			t.Fatalf("%s: the stepper takes no greedy steps on the device", name)
		}
		want, err := d.guesses(logitsOnly{mk()}, prompts, n, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.guesses(mk(), prompts, n, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: greedy on the device %v, from the logits %v", name, got, want)
		}
		lm, tm := timed(mk())
		if _, ok := lm.(greedyStepper); !ok {
			t.Errorf("%s: the bench's timed stepper hides the greedy steps", name)
		}
		timedGot, err := d.guesses(lm, prompts, n, 1, nil)
		if err != nil || !reflect.DeepEqual(timedGot, want) || tm.prefill <= 0 {
			t.Errorf("%s: timed greedy %v (%v, prefill %v), want %v and a prefill time", name, timedGot, err, tm.prefill, want)
		}
	}
}

// exactAndKV8 makes g's steppers of the exact cache and of an 8-bit
// quantized one (package approx), by name.
func exactAndKV8(t *testing.T, g *model.GPT) map[string]func() stepper {
	return map[string]func() stepper{
		"exact": func() stepper { return engine.NewStepper(g, true) },
		"kv8": func() stepper {
			s, err := approx.NewStepper(g, approx.Approx{KVBits: 8})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
}

// maxLogit is math.Max folded over the logits, bit for bit: NaN, ±Inf
// and the sign of a zero maximum included.
func TestMaxLogitIsMathMax(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	for _, logits := range [][]float32{
		{1, 3, 2},
		{-5, -1, -7},
		{negZero, -1},
		{negZero, 0, negZero},
		{0, negZero},
		{-1, nan, 4},
		{nan, inf, 1},
		{inf, nan},
		{-inf, -inf},
		{-inf, nan},
		{nan},
		{},
	} {
		want := math.Inf(-1)
		for _, v := range logits {
			want = math.Max(want, float64(v))
		}
		got := maxLogit(logits)
		if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("maxLogit(%v) = %v (bits %x), math.Max's fold %v (bits %x)", logits, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
}

// Sampling and beam search pick a step's rows on every core: their
// guesses, log-probabilities included, must not depend on how many.
func TestGuessesIndependentOfCores(t *testing.T) {
	g := newModel(t, model.Config{Preset: "nano", Vocab: 512, Context: 64, Seed: 7})
	prompts := [][]int32{[]int32("Of the Refractions"), []int32("Light is"), []int32("x"), []int32("Opticks")}
	const per, n = 3, 10
	cfg := DefaultConfig()
	cfg.Decoding, cfg.TopK, cfg.TopP = DecodeSample, 50, 0.95
	sample := decoder{cfg: cfg}
	cfg.Decoding = DecodeBeam
	beam := decoder{cfg: cfg}
	run := func(procs int) (samples, beams [][]Guess) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		var rngs []*rand.Rand
		for p := range prompts {
			for j := 0; j < per; j++ {
				rngs = append(rngs, guessRNG(11, int64(p), j))
			}
		}
		samples, err := sample.guesses(engine.NewStepper(g, true), prompts, n, per, rngs)
		if err != nil {
			t.Fatal(err)
		}
		beams, err = beam.beamGuesses(engine.NewStepper(g, true), prompts, n, per)
		if err != nil {
			t.Fatal(err)
		}
		return samples, beams
	}
	s1, b1 := run(1)
	s4, b4 := run(4)
	if !reflect.DeepEqual(s1, s4) {
		t.Errorf("sampling on 1 core %v, on 4 %v", s1, s4)
	}
	if !reflect.DeepEqual(b1, b4) {
		t.Errorf("beam search on 1 core %v, on 4 %v", b1, b4)
	}
}
