package train

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"
)

// logitsOf is g's logits of ids, without gradients.
func logitsOf(forward func(*ts.Tensor) *ts.Tensor, ids *ts.Tensor) *ts.Tensor {
	var out *ts.Tensor
	torchx.NoGrad(func() { out = forward(ids) })
	return out
}

// A LoRA run from another run's weights (train.init_from) is read back by
// memo's model loader (extract, score) as base + adapters, and written by
// export --merge as a plain model: both give the unmerged adapted model's
// logits (model.LoRA.Forward on the base and the saved adapters) to 1e-5,
// and differ from the base's. A merge of a full checkpoint, or of adapters
// whose base is gone, is bad input.
func TestLoRALoadAndExportMerged(t *testing.T) {
	src := textSource{ids: opticks(t, 2000), rows: 24}
	cfg, mcfg, lcfg := loraRun()
	cfg.Steps, cfg.CheckpointEvery = 6, 0
	full := cfg
	full.LoRA.Enabled = false
	baseRun, loraDir := t.TempDir(), t.TempDir()
	if err := Run(context.Background(), full, mcfg, lcfg, src, baseRun, Options{}); err != nil {
		t.Fatal(err)
	}
	cfg.InitFrom = baseRun
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, loraDir, Options{}); err != nil {
		t.Fatal(err)
	}
	ck, err := checkpoint.Resolve(loraDir)
	if err != nil {
		t.Fatal(err)
	}
	baseCk, err := checkpoint.Resolve(baseRun)
	if err != nil {
		t.Fatal(err)
	}
	ids := ts.MustOfSlice([]int64{5, 17, 99, 3, 200, 45, 7, 8, 120, 64}).MustView([]int64{2, 5}, true)
	defer ids.MustDrop()

	// The unmerged adapted model, built by hand.
	mc, _ := mcfg.Resolve()
	g, err := model.New(nn.NewVarStore(gotch.CPU).Root(), mc)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.LoadSourceWeights(g, baseCk); err != nil {
		t.Fatal(err)
	}
	baseLogits := logitsOf(g.Forward, ids)
	unmerged := logitsOf(adapterOn(t, g, ck).Forward, ids)
	if d := maxAbsDiff(unmerged, baseLogits); d < 1e-3 {
		t.Fatalf("adapted logits differ from the base's by only %g: the adapters did not train", d)
	}

	loaded, _, err := checkpoint.LoadModel(loraDir, "cpu", "fp32")
	if err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(logitsOf(loaded.Forward, ids), unmerged); d > 1e-5 {
		t.Errorf("memo's loader of the LoRA run: logits differ from the unmerged adapted model's by %g", d)
	}
	out := filepath.Join(t.TempDir(), "merged")
	if err := checkpoint.ExportMerged(context.Background(), ck, out, checkpoint.ExportOptions{BOS: -1, EOS: -1}); err != nil {
		t.Fatal(err)
	}
	merged, _, err := checkpoint.LoadModel(out, "cpu", "fp32")
	if err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(logitsOf(merged.Forward, ids), unmerged); d > 1e-5 {
		t.Errorf("export --merge: logits differ from the unmerged adapted model's by %g", d)
	}

	if err := checkpoint.ExportMerged(context.Background(), baseCk, filepath.Join(t.TempDir(), "x"), checkpoint.ExportOptions{}); !badinput.Is(err) {
		t.Errorf("export --merge of a full checkpoint: %v, want bad input", err)
	}
	if err := checkpoint.Export(context.Background(), ck, filepath.Join(t.TempDir(), "x"), checkpoint.ExportOptions{}); !badinput.Is(err) {
		t.Errorf("export without --merge of a LoRA checkpoint: %v, want bad input", err)
	}
	if err := os.Rename(baseRun, baseRun+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.ExportMerged(context.Background(), ck, filepath.Join(t.TempDir(), "x"), checkpoint.ExportOptions{}); !badinput.Is(err) || !strings.Contains(err.Error(), "LoRA base") {
		t.Errorf("export --merge with the base gone: %v, want bad input naming the base", err)
	}
	if _, _, err := checkpoint.LoadModel(loraDir, "cpu", "fp32"); !badinput.Is(err) {
		t.Errorf("loading adapters with the base gone: %v, want bad input", err)
	}
}
