package train

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/testrun"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/train/dpaccount"
)

// dpRun is smallRun with DP-SGD on: σ = 1, C = 1, q = batch_size / N.
func dpRun() (Config, model.Config, loss.Config) {
	cfg, mcfg, lcfg := smallRun()
	cfg.DP = DefaultDPConfig()
	cfg.DP.Enabled = true
	cfg.DP.NoiseMultiplier = 1
	return cfg, mcfg, lcfg
}

// With σ = 0, C = ∞ (1e30) and q = 1, a DP-SGD step is the plain step over the
// whole training set: Σ_i ∇L_i / N, with every row keeping all its targets
// (standard loss, no padding), is the gradient of the batch's mean loss.
// Only the summation order differs (rows one at a time against one batched
// pass), so the comparison is to 1e-6 relative, not bit for bit: libtorch's
// CPU backward of one row is not even bit-repeatable within a process
// (docs/MITIGATIONS.md).
func TestDPNoNoiseNoClipIsPlainTraining(t *testing.T) {
	cfg, mcfg, _ := smallRun()
	lcfg := loss.Config{Strategy: loss.StrategyNone}
	const n = 8
	src := textSource{ids: opticks(t, 2000), rows: n}
	cfg.Steps, cfg.BatchSize, cfg.GradAccum, cfg.CheckpointEvery, cfg.EvalEvery = 4, n, 1, 4, 2
	cfg.Threads = 2
	plain, dp := t.TempDir(), t.TempDir()
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, plain, Options{}); err != nil {
		t.Fatal(err)
	}
	// C = 1e30: no row's norm comes near it, so Opacus's factor
	// min(1, C/(‖g‖ + 1e-6)) is exactly 1, as for C = ∞ (which the
	// checkpoint's JSON cannot hold).
	cfg.DP = DPConfig{Enabled: true, MaxGradNorm: 1e30, Delta: 1e-5, SampleRate: 1, Sampling: SamplingPoisson}
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, dp, Options{}); err != nil {
		t.Fatal(err)
	}
	mp, md := readMetrics(t, plain), readMetrics(t, dp)
	for i := range mp {
		for _, c := range []struct {
			name     string
			got, ref float64
		}{{"loss", md[i].LossKept, mp[i].LossKept}, {"grad norm", md[i].GradNorm, mp[i].GradNorm}, {"val loss", md[i].ValLoss, mp[i].ValLoss}} {
			if math.IsNaN(c.ref) && math.IsNaN(c.got) {
				continue
			}
			if d := math.Abs(c.got-c.ref) / math.Abs(c.ref); !(d <= 1e-6) {
				t.Errorf("step %d %s: DP %v, plain %v (%.2g relative)", i+1, c.name, c.got, c.ref, d)
			}
		}
	}
	rel := testrun.RelDiff(t, testrun.Weights(t, dp), testrun.Weights(t, plain))
	t.Logf("final weights agree to %.2g relative (L2)", rel)
	if !(rel <= 1e-6) {
		t.Errorf("final weights differ by %.2g relative, want <= 1e-6", rel)
	}
	st := dpReportOf(t, dp)
	if st.Steps != 4 || !math.IsInf(st.Eps(), 1) || st.SampleRate != 1 || st.Rows != n {
		t.Errorf("DP report %+v: want 4 steps, ε = +Inf (σ = 0), q = 1, N = %d", st, n)
	}
}

// Under DP-SGD the random goldfish strategy draws a fresh mask each step
// a row is sampled, as the plain loop does each pass: with every row in
// every step (q = 1), the kept fraction of the targets, read from the
// step's three losses, changes from step to step. (It was the same at
// every step: each row kept its epoch-0 mask for the whole run.)
func TestDPRandomMaskFreshEachStep(t *testing.T) {
	cfg, mcfg, _ := smallRun()
	lcfg := loss.Config{Strategy: loss.StrategyRandom, K: 2, Seed: 5}
	const n = 8
	src := textSource{ids: opticks(t, 2000), rows: n}
	cfg.Steps, cfg.BatchSize, cfg.GradAccum, cfg.CheckpointEvery, cfg.EvalEvery, cfg.LogEvery = 4, n, 1, 4, 0, 1
	cfg.DP = DPConfig{Enabled: true, MaxGradNorm: 1e30, Delta: 1e-5, SampleRate: 1, Sampling: SamplingPoisson}
	dir := t.TempDir()
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	ms := readMetrics(t, dir)
	if len(ms) != 4 {
		t.Fatalf("%d metrics rows, want 4", len(ms))
	}
	kept := make([]float64, len(ms))
	for i, m := range ms {
		kept[i] = (m.LossAll - m.LossDropped) / (m.LossKept - m.LossDropped)
	}
	t.Logf("kept fraction by step: %v", kept)
	for i := 1; i < len(kept); i++ {
		if math.Abs(kept[i]-kept[0]) < 1e-4 {
			t.Errorf("kept fraction %v at step %d equals step 1's (to 1e-4, the losses' float32 rounding): the random mask did not change (all: %v)", kept[i], i+1, kept)
		}
	}
}

// dpReportOf is the DP report of runDir's newest checkpoint.
func dpReportOf(t *testing.T, runDir string) DPReport {
	t.Helper()
	_, st, err := checkpoint.LatestGood(runDir)
	if err != nil {
		t.Fatal(err)
	}
	r, ok, err := ReadDPReport(st)
	if err != nil || !ok {
		t.Fatalf("checkpoint's DP report: %v (present %v)", err, ok)
	}
	return r
}

// A DP-SGD run stopped after step 6 (checkpoint at 4) and resumed ends
// bit-identical to the uninterrupted one, with the goldfish mask and two
// workers, and reports the same ε: the sample and the noise are functions
// of (seed, step), the accountant travels in the checkpoint.
func TestDPResumeIsExact(t *testing.T) {
	cfg, mcfg, lcfg := dpRun()
	cfg.Threads = 2
	checkResumeExact(t, cfg, mcfg, lcfg)
}

// The accountant's ε in the checkpoint is the closed-form one for the
// run's (q, σ, steps, δ), and the noise changes the weights.
func TestDPReportsEpsilon(t *testing.T) {
	cfg, mcfg, lcfg := dpRun()
	cfg.Steps, cfg.CheckpointEvery = 6, 6
	src := textSource{ids: opticks(t, 2000), rows: 24}
	noisy, quiet := t.TempDir(), t.TempDir()
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, noisy, Options{}); err != nil {
		t.Fatal(err)
	}
	r := dpReportOf(t, noisy)
	want := 4.0 / 24
	if r.SampleRate != want || r.NoiseMultiplier != 1 || r.Steps != 6 || r.Rows != 24 || r.MaxGradNorm != 1 {
		t.Fatalf("DP report %+v: want q = %v, σ = 1, 6 steps, N = 24, C = 1", r, want)
	}
	if want, err := dpaccount.EpsilonOf(r.SampleRate, 1, 6, r.Delta); err != nil || r.Eps() != want {
		t.Fatalf("ε = %v: want the accountant's %v for (q, σ, steps, δ) (%v)", r.Eps(), want, err)
	}
	cfg.DP.NoiseMultiplier = 0
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, quiet, Options{}); err != nil {
		t.Fatal(err)
	}
	if rel := testrun.RelDiff(t, testrun.Weights(t, noisy), testrun.Weights(t, quiet)); !(rel > 1e-6) {
		t.Errorf("σ = 1 and σ = 0 end with weights %.2g apart: the noise did nothing", rel)
	}
}

// target_epsilon gives the σ that NoiseFor finds over the run's steps.
func TestDPTargetEpsilon(t *testing.T) {
	cfg, mcfg, lcfg := dpRun()
	cfg.Steps, cfg.CheckpointEvery = 3, 3
	cfg.DP.NoiseMultiplier, cfg.DP.TargetEpsilon = 0, 8
	src := textSource{ids: opticks(t, 2000), rows: 24}
	dir := t.TempDir()
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	r := dpReportOf(t, dir)
	if !(r.Eps() <= 8 && r.Eps() >= 8*0.99) {
		t.Errorf("target ε 8: spent %v with σ = %v, want within 1 %% below", r.Eps(), r.NoiseMultiplier)
	}
}

// A δ at or above 1/N, known once the stream's N is, is the spec's fault:
// bad input (exit 2), not a failure of the machine (it was exit 1).
func TestDPDeltaAtLeastOneOverNIsBadInput(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cfg, mcfg, lcfg := dpRun()
	cfg.DP.Delta = 0.5
	l := testLoop(t, cfg, mcfg, lcfg)
	err := l.setupDP()
	if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "train.dp.delta = 0.5: must be below 1/N") {
		t.Fatalf("δ = 0.5: %v, want bad input naming train.dp.delta", err)
	}
}

// The noise is N(0, σ²C²) over the rows' clipped sum, divided by q·N: with
// C tiny the gradient handed to the optimizer is almost all noise, and its
// standard deviation over the model's elements is σ·C/(q·N) within five
// standard errors; without noise (a rank other than 0) it is the clipped
// sum alone, far smaller.
func TestDPGradientNoiseScale(t *testing.T) {
	g, rows, block := dpFixture(t)
	w := newWorkers(g, 1, 1, 7)
	defer w.stop()
	d := &dpState{q: 0.25, sigma: 2, clip: 1e-4, n: 24}
	want := d.sigma * d.clip / (d.q * float64(d.n))
	for _, noise := range []bool{true, false} {
		gs, st, err := dpGradient(w, nil, g.Params(), rows, block, d, 7, 3, noise)
		if err != nil {
			t.Fatal(err)
		}
		v := flat(gs)
		dropAll(gs)
		var mean, sq float64
		for _, x := range v {
			mean += x
		}
		mean /= float64(len(v))
		for _, x := range v {
			sq += (x - mean) * (x - mean)
		}
		std := math.Sqrt(sq / float64(len(v)-1))
		if st.Rows != 5 || st.Clipped != 5 {
			t.Errorf("noise %v: %d rows, %d clipped; want 5 and 5 (one row keeps no target)", noise, st.Rows, st.Clipped)
		}
		if !noise {
			if !(std < want/100) {
				t.Errorf("no noise: std %.3g, want far below σC/(qN) = %.3g", std, want)
			}
			continue
		}
		se := 1 / math.Sqrt(2*float64(len(v)))
		t.Logf("std %.6g, want %.6g (%d elements; relative error %.2g, standard error %.2g)", std, want, len(v), std/want-1, se)
		if math.Abs(std/want-1) > 5*se || math.Abs(mean) > 5*want/math.Sqrt(float64(len(v))) {
			t.Errorf("noise std %.6g mean %.3g, want std %.6g mean 0 within five standard errors", std, mean, want)
		}
	}
}

// DP-SGD with a setting its step cannot keep is refused by the config
// check, naming the setting.
func TestDPCombinationsRefused(t *testing.T) {
	tests := []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"sharded state", func(c *Config) { c.Shard = ShardFull }, "train.shard"},
		{"equal-supervised-tokens control", func(c *Config) { c.MatchSupervisedTokens = 4 }, "train.match_supervised_tokens = 4 with train.dp.enabled = true"},
	}
	for _, tt := range tests {
		cfg, _, _ := dpRun()
		tt.set(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate = %v, want an error naming %q", tt.name, err, tt.want)
		}
	}
}

// TestDPRandomMaskRowsRecorded: a DP-SGD checkpoint records the row number
// its random goldfish mask was drawn by; one without it (written before
// 2bda819 moved from the epoch-0 position to step·N + position) is not
// resumed with the random mask, whose rows would change midway, and is
// with a mask that looks at the tokens alone.
func TestDPRandomMaskRowsRecorded(t *testing.T) {
	cfg, mcfg, _ := dpRun()
	cfg.Steps, cfg.CheckpointEvery, cfg.GradAccum = 2, 2, 1
	src := textSource{ids: opticks(t, 2000), rows: 24}
	for _, tc := range []struct {
		strategy string
		refused  bool
	}{{loss.StrategyRandom, true}, {loss.StrategyHashTable, false}} {
		lcfg := loss.Config{Strategy: tc.strategy, K: 2, H: 4, Seed: 5}
		dir := t.TempDir()
		if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{}); err != nil {
			t.Fatal(err)
		}
		if r := dpReportOf(t, dir); r.MaskRows != dpMaskRows {
			t.Fatalf("%s: checkpoint mask_rows %q, want %q", tc.strategy, r.MaskRows, dpMaskRows)
		}
		// As an older memo wrote it.
		stateFile := filepath.Join(dir, checkpoint.DirName, checkpoint.StepName(2), checkpoint.StateFile)
		var st map[string]any
		raw, err := os.ReadFile(stateFile)
		if err == nil {
			err = json.Unmarshal(raw, &st)
		}
		if err != nil {
			t.Fatal(err)
		}
		delete(st["dp"].(map[string]any), "mask_rows")
		if raw, err = json.Marshal(st); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(stateFile, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		err = Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{})
		if tc.refused && (err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "masked each sampled row by its epoch-0 position")) {
			t.Errorf("%s: resuming an older DP checkpoint: %v; want a refusal", tc.strategy, err)
		}
		if !tc.refused && err != nil {
			t.Errorf("%s: resuming an older DP checkpoint: %v", tc.strategy, err)
		}
	}
}

// TestRunSteps: train.epochs counts passes over the stream. A plain step
// takes batch_size rows, a DP-SGD step q·N on average, so with q given
// (or 1, a batch above N) a pass is 1/q steps, as Opacus counts epochs;
// with q = batch_size/N the two agree and the plain count is kept.
func TestRunSteps(t *testing.T) {
	for _, c := range []struct {
		name     string
		epochs   float64
		steps    int
		batch    int
		dp       bool
		q        float64
		perEpoch int
		want     int
	}{
		{"plain", 1, 0, 16, false, 0, 1280, 80},
		{"plain, a part pass", 2.5, 0, 16, false, 0, 1280, 200},
		{"plain, steps given", 1, 7, 16, false, 0, 1280, 7},
		{"DP at q = batch/N", 1, 0, 16, true, 0, 1280, 80},
		{"DP at q = 0.1: ten steps a pass", 1, 0, 16, true, 0.1, 1280, 10},
		{"DP at q = 0.1, three passes", 3, 0, 16, true, 0.1, 1280, 30},
		{"DP, steps given", 1, 7, 16, true, 0.1, 1280, 7},
		{"DP, a quotient rounded up", 0.9, 0, 16, true, 0.03, 1280, 30},
		{"DP, a part step", 0.75, 0, 16, true, 0.1, 1280, 8},
		{"DP, batch above N: q = 1", 2, 0, 64, true, 0, 40, 2},
		{"plain, batch above N", 2, 0, 64, false, 0, 40, 2},
		{"plain, a product rounded up", 1.1, 0, 5, false, 0, 100, 22}, // 22.000000000000004
		{"plain, a part step", 1.01, 0, 5, false, 0, 100, 21},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Epochs: c.epochs, Steps: c.steps, BatchSize: c.batch}
			cfg.DP.Enabled, cfg.DP.SampleRate = c.dp, c.q
			if got := runSteps(cfg, c.perEpoch); got != c.want {
				t.Errorf("runSteps = %d, want %d", got, c.want)
			}
		})
	}
}
