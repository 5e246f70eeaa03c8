package train

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/precision"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"
)

// loraRun is smallRun with adapters of rank 4 on every linear layer of
// the nano Llama, two workers and two micro-batches a step.
func loraRun() (Config, model.Config, loss.Config) {
	cfg, mcfg, lcfg := smallRun()
	cfg.Threads = 2
	cfg.LR = 1e-2
	cfg.LoRA = LoRAConfig{Enabled: true, Rank: 4, Alpha: 8,
		Targets: []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}}
	return cfg, mcfg, lcfg
}

// savedAdapter is the adapters of runDir's newest checkpoint on a fresh
// float32 base of mcfg on the CPU.
func savedAdapter(t *testing.T, runDir string, mcfg model.Config) *model.LoRA {
	t.Helper()
	dir, _, err := checkpoint.LatestGood(runDir)
	if err != nil {
		t.Fatal(err)
	}
	g, err := model.New(nn.NewVarStore(gotch.CPU).Root(), mcfg)
	if err != nil {
		t.Fatal(err)
	}
	return adapterOn(t, g, dir)
}

// adapterOn is the adapters of checkpoint dir on base g.
func adapterOn(t *testing.T, g *model.GPT, dir string) *model.LoRA {
	t.Helper()
	opt, err := checkpoint.ReadAdapterConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	ad, err := model.NewLoRA(g, opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.LoadAdapter(ad, dir); err != nil {
		t.Fatal(err)
	}
	return ad
}

// testLoop builds the loop Run builds, without running it, so that a test
// can look at the model between steps.
func testLoop(t testing.TB, cfg Config, mcfg model.Config, lcfg loss.Config) *loop {
	t.Helper()
	mc, err := mcfg.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	masker, err := loss.New(lcfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := newStream(textSource{ids: opticks(t, 2000), rows: 24}, cfg.Block, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	l := &loop{cfg: cfg, masker: masker, stream: st, block: cfg.Block, total: cfg.Steps, size: 1, runDir: t.TempDir()}
	t.Cleanup(l.dropStrategy)
	if err := l.newModel(mc, gotch.CPU, nil); err != nil {
		t.Fatal(err)
	}
	l.work = newWorkers(l.g, l.workerCount(), cfg.Threads, cfg.Seed)
	t.Cleanup(l.work.stop)
	l.loraWorkers()
	return l
}

// paramValues copies the tensors' values.
func paramValues(ps []model.Param) [][]float64 {
	out := make([][]float64, len(ps))
	for i, p := range ps {
		out[i] = p.Tensor.MustDetach(false).MustView([]int64{-1}, true).Float64Values()
	}
	return out
}

// sameValues compares float32 values (widened exactly to float64).
func sameValues(a, b []float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// maxAbsDiff is the largest |a - b| over two logits tensors.
func maxAbsDiff(a, b *ts.Tensor) float64 {
	d := a.MustSub(b, false).MustAbs(true).MustMax(true)
	defer d.MustDrop()
	return d.Float64Values()[0]
}

// In the loop, before the first step the adapted model is the base (B =
// 0), and over steps with two workers, accumulation and the goldfish loss
// only the adapters move: every base weight stays bit for bit, every
// adapter has moved after two steps (the first moves only B: ∂L/∂A = 0
// while B = 0), and the second worker's adapters are the master's.
func TestLoRALoopOnlyAdaptersMove(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cfg, mcfg, lcfg := loraRun()
	l := testLoop(t, cfg, mcfg, lcfg)
	if len(l.lora) != 2 {
		t.Fatalf("%d adapter sets for 2 workers", len(l.lora))
	}
	if got, want := len(l.opt.params), len(l.lora[0].Params()); got != want {
		t.Fatalf("optimizer over %d tensors, want the %d adapters", got, want)
	}
	ids := ts.MustOfSlice([]int64{5, 17, 99, 3, 200, 45, 7, 8}).MustView([]int64{1, 8}, true)
	defer ids.MustDrop()
	base := l.g.Forward(ids)
	adapted := l.lora[0].Forward(ids)
	if d := maxAbsDiff(base, adapted); d > 1e-6 {
		t.Errorf("before step 1 the adapted logits differ from the base's by %g", d)
	}
	base.MustDrop()
	adapted.MustDrop()

	frozen := paramValues(l.g.Params())
	ad0 := paramValues(l.lora[0].Params())
	for s := 0; s < 3; s++ {
		if _, err := l.trainStep(); err != nil {
			t.Fatal(err)
		}
		l.step++
	}
	checkOnlyAdaptersMoved(t, l, frozen, ad0)
}

// A LoRA run stopped mid-way and started again ends with the adapters,
// AdamW moments and metrics of an uninterrupted one; its checkpoints hold
// the adapters in PEFT's files, no model.safetensors, and the base's record.
func TestLoRAResumeIsExact(t *testing.T) {
	cfg, mcfg, lcfg := loraRun()
	checkResumeExact(t, cfg, mcfg, lcfg)
	dir := t.TempDir()
	cfg.Steps = 4
	if err := Run(context.Background(), cfg, mcfg, lcfg, textSource{ids: opticks(t, 2000), rows: 24}, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	ck, st, err := checkpoint.LatestGood(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.LoRABase == nil || st.LoRABase.Source != "" || st.SHA256[checkpoint.ModelFile] != "" || st.SHA256[checkpoint.PEFTWeightsFile] == "" {
		t.Errorf("LoRA checkpoint %s: base %+v, digests %v; want the seed's base, adapters and no model file", ck, st.LoRABase, st.SHA256)
	}
	// The same directory cannot go on as a full fine-tuning run.
	cfg.LoRA.Enabled = false
	err = Run(context.Background(), cfg, mcfg, lcfg, textSource{ids: opticks(t, 2000), rows: 24}, dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "LoRA checkpoint and this run has train.lora off") {
		t.Errorf("full run resuming a LoRA checkpoint: %v", err)
	}
}

// ZeRO sharding with LoRA is refused by the config check.
func TestLoRAShardRefused(t *testing.T) {
	cfg, _, _ := loraRun()
	for _, shard := range []string{ShardOptimizer, ShardGradients, ShardFull} {
		cfg.Shard = shard
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "train.lora with train.shard") {
			t.Errorf("train.shard = %s with LoRA: %v", shard, err)
		}
	}
}

// Under train.precision = bf16-mixed the adapted weight W + (α/r)·B·A is
// cast for each product like any float32 master weight: a LoRA run trains
// and its adapters get gradients.
func TestLoRABF16Mixed(t *testing.T) {
	cfg, mcfg, lcfg := loraRun()
	cfg.Precision, cfg.Steps, cfg.CheckpointEvery = precision.BF16Mixed, 4, 0
	if err := precision.Check(cfg.Precision, true, gotch.CPU); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	if err := Run(context.Background(), cfg, mcfg, lcfg, textSource{ids: opticks(t, 2000), rows: 24}, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	m := readMetrics(t, dir)
	if len(m) != 4 || !(m[3].GradNorm > 0) || !(m[3].LossKept < m[0].LossKept) {
		t.Errorf("bf16-mixed LoRA metrics: first %+v, last %+v; want 4 steps, a gradient and a falling loss", m[0], m[len(m)-1])
	}
}
