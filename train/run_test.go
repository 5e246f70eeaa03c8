package train

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
)

func smallRun() (Config, model.Config, loss.Config) {
	cfg := DefaultConfig()
	cfg.Steps = 12
	cfg.Block = 32
	cfg.BatchSize = 4
	cfg.GradAccum = 2
	cfg.WarmupSteps = 3
	cfg.EvalEvery = 5
	cfg.CheckpointEvery = 4
	cfg.KeepCheckpoints = 0
	cfg.LogEvery = 2
	cfg.Seed = 7
	mcfg := model.Config{Preset: "nano", Vocab: 256, Context: 64, Seed: 3}
	lcfg := loss.Config{Strategy: loss.StrategyHashTable, K: 4, H: 13}
	return cfg, mcfg, lcfg
}

func checkpointDigest(t *testing.T, runDir string) string {
	t.Helper()
	dir, st, err := checkpoint.LatestGood(runDir)
	if err != nil || dir == "" {
		t.Fatalf("no good checkpoint in %s: %v", runDir, err)
	}
	// A LoRA run's checkpoint holds adapters instead of model.safetensors.
	return st.SHA256[checkpoint.ModelFile] + st.SHA256[checkpoint.PEFTWeightsFile] + st.SHA256[checkpoint.OptimizerFile]
}

func readMetrics(t *testing.T, runDir string) []Metric {
	t.Helper()
	m, err := runfiles.ReadMetrics(filepath.Join(runDir, runfiles.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameMetrics(t *testing.T, a, b []Metric) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d metric rows vs %d", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		same := func(p, q float64) bool { return p == q || math.IsNaN(p) && math.IsNaN(q) }
		if x.Step != y.Step || !same(x.LossKept, y.LossKept) || !same(x.LossAll, y.LossAll) ||
			!same(x.LossDropped, y.LossDropped) || !same(x.GradNorm, y.GradNorm) || !same(x.ValLoss, y.ValLoss) || x.LR != y.LR {
			t.Fatalf("row %d differs:\n%+v\n%+v", i, x, y)
		}
	}
}

func TestSameSeedBitIdentical(t *testing.T) {
	cfg, mcfg, lcfg := smallRun()
	src := textSource{ids: opticks(t, 2000), rows: 24}
	a, b := t.TempDir(), t.TempDir()
	for _, dir := range []string{a, b} {
		if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if da, db := checkpointDigest(t, a), checkpointDigest(t, b); da != db {
		t.Errorf("same config and seed, different weights: %s vs %s", da[:12], db[:12])
	}
	ma, mb := readMetrics(t, a), readMetrics(t, b)
	sameMetrics(t, ma, mb)
	if len(ma) != cfg.Steps {
		t.Fatalf("%d metric rows, want %d", len(ma), cfg.Steps)
	}
	last := ma[len(ma)-1]
	if !(last.LossKept < ma[0].LossKept) || math.IsNaN(last.ValLoss) || !math.IsNaN(ma[0].ValLoss) || math.IsNaN(ma[4].ValLoss) {
		t.Errorf("metrics: first %+v, last %+v: want falling loss and val_loss at steps 5, 10, 12 only", ma[0], last)
	}
	if math.IsNaN(last.LossDropped) || last.LossAll == last.LossKept {
		t.Errorf("goldfish k=4 should drop targets: %+v", last)
	}

	cfg.Seed = 8
	c := t.TempDir()
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, c, Options{}); err != nil {
		t.Fatal(err)
	}
	if checkpointDigest(t, a) == checkpointDigest(t, c) {
		t.Error("a different stream seed gave the same weights")
	}
}

// A run stopped mid-way (as by kill -9: no final checkpoint) and started
// again must end bit-identical to an uninterrupted one.
// Run with two workers, so the replicas' gradient reduction is covered too.
func TestResumeIsExact(t *testing.T) {
	cfg, mcfg, lcfg := smallRun()
	cfg.Threads = 2
	checkResumeExact(t, cfg, mcfg, lcfg)
}

func TestCorruptCheckpointRefused(t *testing.T) {
	cfg, mcfg, lcfg := smallRun()
	cfg.Steps = 8
	src := textSource{ids: opticks(t, 2000), rows: 24}
	dir := t.TempDir()
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	newest := filepath.Join(dir, checkpoint.DirName, checkpoint.StepName(8))
	f := filepath.Join(newest, checkpoint.ModelFile)
	info, _ := os.Stat(f)
	if err := os.Truncate(f, info.Size()/2); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := checkpoint.Load(newest, "cpu"); err == nil || !strings.Contains(err.Error(), "truncated or corrupt") {
		t.Errorf("checkpoint.Load of a truncated checkpoint: %v, want a truncated-or-corrupt error", err)
	}
	got, st, err := checkpoint.LatestGood(dir)
	if err != nil || st.Step != 4 {
		t.Fatalf("LatestGood = %s step %d (%v), want the step-4 checkpoint", got, st.Step, err)
	}
	// Loading the run refuses its damaged newest checkpoint by name rather
	// than quietly using step 4; step 4, named, loads.
	if _, _, _, err := checkpoint.Load(dir, "cpu"); err == nil || !strings.Contains(err.Error(), checkpoint.StepName(8)) {
		t.Errorf("checkpoint.Load(run dir) with a corrupt newest checkpoint: %v, want an error naming it", err)
	}
	g, _, loaded, err := checkpoint.Load(got, "cpu")
	if err != nil || g.Config().Vocab != 256 || len(g.Params()) == 0 || loaded != got {
		t.Fatalf("checkpoint.Load(%s): %v (loaded %s)", got, err, loaded)
	}
	// Resuming uses step 4 and finishes the run again.
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, st, _ := checkpoint.LatestGood(dir); st.Step != 8 {
		t.Errorf("after resuming, latest good checkpoint is step %d, want 8", st.Step)
	}
}

func TestInitFrom(t *testing.T) {
	cfg, mcfg, lcfg := smallRun()
	cfg.Steps = 4
	src := textSource{ids: opticks(t, 2000), rows: 24}
	pre := t.TempDir()
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, pre, Options{}); err != nil {
		t.Fatal(err)
	}
	cfg.InitFrom = pre
	cfg.Steps = 1
	cfg.LR, cfg.MinLR = 1e-9, 0
	ft := t.TempDir()
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, ft, Options{}); err != nil {
		t.Fatal(err)
	}
	a, _, _, _ := checkpoint.Load(pre, "cpu")
	b, _, _, _ := checkpoint.Load(ft, "cpu")
	diff := a.Params()[0].Tensor.MustSub(b.Params()[0].Tensor, false).MustAbs(true).MustMax(true).Float64Values()[0]
	if diff > 1e-6 {
		t.Errorf("fine-tuned weights moved %g from the init_from weights with lr 1e-9", diff)
	}
	mcfg.Dim = 32
	mcfg.Heads = 2
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, t.TempDir(), Options{}); err == nil || !strings.Contains(err.Error(), "init_from") {
		t.Errorf("init_from with another model shape: %v, want an init_from error", err)
	}
}

// nano must be able to memorize a few hundred tokens of real text.
func TestNanoMemorizes(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Steps = 150
	cfg.Block = 64
	cfg.BatchSize = 5
	cfg.LR, cfg.MinLR = 1e-2, 1e-3
	cfg.WarmupSteps = 10
	cfg.WeightDecay = 0
	cfg.EvalEvery = 0
	cfg.CheckpointEvery = 0
	cfg.Seed = 1
	src := textSource{ids: opticks(t, 321), rows: 5}
	dir := t.TempDir()
	start := time.Now()
	if err := Run(context.Background(), cfg, model.Config{Preset: "nano", Vocab: 256, Context: 64, Seed: 1},
		loss.Config{Strategy: loss.StrategyNone}, src, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	m := readMetrics(t, dir)
	last := m[len(m)-1]
	t.Logf("loss %.4f → %.4f over %d steps, %.1f s (%.1f s training)", m[0].LossAll, last.LossAll, len(m), wall.Seconds(), last.ElapsedS)
	if !(last.LossAll < 0.1) {
		t.Errorf("final loss on 320 memorized tokens %.4f, want < 0.1", last.LossAll)
	}
	// "Well under a minute", the whole Run (setup, validation, checkpoint
	// included); about 9 s on the 2-core development machine.
	if limit := 45 * time.Second; wall > limit {
		t.Errorf("nano took %.1f s to memorize, want < %v", wall.Seconds(), limit)
	}
	// The memorized text comes back by greedy decoding.
	g, _, _, err := checkpoint.Load(dir, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	ids := src.ids
	out, err := engine.Generate(g, [][]int32{ids[:16]}, 32, engine.GenOptions{UseCache: true})
	if err != nil {
		t.Fatal(err)
	}
	match := 0
	for i, id := range out[0] {
		if id == ids[16+i] {
			match++
		}
	}
	if match < 28 {
		t.Errorf("greedy continuation matched %d/32 memorized bytes: %q vs %q", match, bytesOf32(out[0]), bytesOf32(ids[16:48]))
	}
}

func bytesOf32(ids []int32) string {
	b := make([]byte, len(ids))
	for i, id := range ids {
		b[i] = byte(id)
	}
	return string(b)
}

func TestConfigValidate(t *testing.T) {
	bad := []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.BatchSize = 0 }, "train.batch_size"},
		{func(c *Config) { c.BatchSize, c.GradAccum = 6, 4 }, "train.batch_size = 6"},
		{func(c *Config) { c.LR = 0 }, "train.lr"},
		{func(c *Config) { c.MinLR = 1 }, "train.min_lr"},
		{func(c *Config) { c.Beta2 = 1 }, "train.beta2"},
		{func(c *Config) { c.Epochs, c.Steps = 0, 0 }, "train.epochs"},
		{func(c *Config) { c.Clip = -1 }, "train.clip"},
	}
	for _, b := range bad {
		c := DefaultConfig()
		b.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("Validate() = %v, want an error naming %q", err, b.want)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("default config: %v", err)
	}
}

func TestSchedule(t *testing.T) {
	c := DefaultConfig()
	c.LR, c.MinLR, c.WarmupSteps = 1, 0.1, 10
	cases := []struct {
		step int
		want float64
	}{{1, 0.1}, {10, 1}, {55, 0.55}, {100, 0.1}}
	for _, k := range cases {
		if got := c.lrAt(k.step, 100); math.Abs(got-k.want) > 1e-12 {
			t.Errorf("lr at step %d = %g, want %g", k.step, got, k.want)
		}
	}
}

// namedSource is a textSource that names its contents, as a
// *data.Dataset does (Digest).
type namedSource struct {
	textSource
	digest string
}

func (s namedSource) Digest() string { return s.digest }

// TestResumeRefusesAnotherDataset: a run whose data was built again with
// other documents does not resume its checkpoints (an environment probe
// saw a rebuilt data stage followed by a "resumed" finished train stage,
// and the old data's model attacked with the new targets, exit 0); the
// same data resumes, and a checkpoint that records none is resumed as
// before.
func TestResumeRefusesAnotherDataset(t *testing.T) {
	cfg, mcfg, lcfg := smallRun()
	cfg.Steps, cfg.GradAccum = 4, 1
	text := textSource{ids: opticks(t, 2000), rows: 24}
	dir := t.TempDir()
	if err := Run(context.Background(), cfg, mcfg, lcfg, namedSource{text, "aaaa"}, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	_, st, err := checkpoint.LatestGood(dir)
	if err != nil || st.Dataset != "aaaa" {
		t.Fatalf("state.json dataset %q (%v), want the source's digest", st.Dataset, err)
	}
	err = Run(context.Background(), cfg, mcfg, lcfg, namedSource{text, "bbbb"}, dir, Options{})
	if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "was trained on another dataset (digest aaaa; this run's data/ is bbbb") {
		t.Errorf("resume on another dataset: %v; want a bad-input refusal naming both digests", err)
	}
	for _, src := range []Source{namedSource{text, "aaaa"}, text} {
		if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{}); err != nil {
			t.Errorf("resume with %T: %v", src, err)
		}
	}
	cfg.NoResume = true
	if err := Run(context.Background(), cfg, mcfg, lcfg, namedSource{text, "bbbb"}, dir, Options{}); err != nil {
		t.Errorf("train.no_resume on another dataset: %v", err)
	}
}

// TestThreadsRestoredAfterTraining: training runs on train.threads and
// hands the command's thread count back: memo run's attack and scoring
// after it ran on train.threads and gave other losses than the same
// stages run again alone.
func TestThreadsRestoredAfterTraining(t *testing.T) {
	runtime.LockOSThread() // libtorch's thread count is the OS thread's
	defer runtime.UnlockOSThread()
	cfg, mcfg, lcfg := smallRun()
	cfg.Steps, cfg.Threads = 2, 1
	defer torchx.SetThreads(torchx.Threads())
	torchx.SetThreads(2)
	if err := Run(context.Background(), cfg, mcfg, lcfg, textSource{ids: opticks(t, 2000), rows: 24}, t.TempDir(), Options{}); err != nil {
		t.Fatal(err)
	}
	if got := torchx.Threads(); got != 2 {
		t.Errorf("%d libtorch threads after training on train.threads = 1, want the 2 from before", got)
	}
}
