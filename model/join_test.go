package model

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"
)

// An inference model (NewForInference), whose layers are joined, computes
// what the separate weights computed, bit for bit: logits, cached greedy
// decoding, gradient norms, and a WithMatrices copy's decoding; in
// float32 and in bf16, with and without biases. Its parameters are views
// of the joined tensors, and another precision cannot be set on it.
func TestInferenceModelComputesTheSame(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ids := ts.MustOfSlice([]int64{1, 5, 9, 2, 7, 7, 3, 60, 11, 12, 4, 4, 0, 12, 33, 8}).MustView([]int64{2, 8}, true)
	windows := [][]int32{{1, 5, 9, 2, 7, 7, 3, 60}, {11, 12, 4, 4, 0, 12, 33, 8, 2}}
	prompts := [][]int32{{1, 5, 9}, {7, 3, 60, 2}}
	for _, tc := range []struct {
		name      string
		cfg       Config
		precision string
	}{
		{"llama fp32", Config{Preset: "nano", Vocab: 97, Context: 32, Seed: 9}, "fp32"},
		{"llama bf16 untied", Config{Preset: "nano", Vocab: 97, Context: 32, Seed: 9, Untied: true}, "bf16"},
		{"qwen2 biases fp32", Config{Arch: "qwen2", Preset: "nano", Vocab: 97, Context: 32, Seed: 3, Bias: true}, "fp32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newModel := func() *GPT {
				g, err := New(nn.NewVarStore(gotch.CPU).Root(), tc.cfg)
				if err != nil {
					t.Fatal(err)
				}
				if err := SetPrecision(g, tc.precision, false); err != nil {
					t.Fatal(err)
				}
				return g
			}
			apart := newModel()
			joined, err := NewForInferenceIn(nn.NewVarStore(gotch.CPU).Root(), tc.cfg, tc.precision)
			if err != nil {
				t.Fatal(err)
			}
			// Filled as a loader fills it: parameter by parameter.
			views := 0
			for i, p := range joined.Params() {
				q := apart.Params()[i]
				if p.Name != q.Name || p.Tensor.DType() != q.Tensor.DType() {
					t.Fatalf("parameter %d: %s %v, apart %s %v", i, p.Name, p.Tensor.DType(), q.Name, q.Tensor.DType())
				}
				torchx.NoGrad(func() { p.Tensor.Copy_(q.Tensor) })
				if _, ok := joined.views[p.Tensor]; ok {
					views++
				}
			}
			if err := SetPrecision(joined, tc.precision, false); err != nil { // a tied head's copy
				t.Fatal(err)
			}
			if want := 5 * joined.Config().Layers; views < want {
				t.Fatalf("%d parameters are views of joined tensors, want at least %d (q, k, v, gate, up per layer)", views, want)
			}
			for _, b := range joined.blocks {
				if b.joined.QKV == nil || b.joined.GateUp == nil || (tc.cfg.Bias && b.joined.QKVBias == nil) {
					t.Fatal("a layer without its joined tensors")
				}
			}
			if apart.WeightBytes() != joined.WeightBytes() {
				t.Errorf("WeightBytes %d joined, %d apart", joined.WeightBytes(), apart.WeightBytes())
			}
			logits := func(g *GPT) string {
				var out string
				torchx.NoGrad(func() { out = fmt.Sprint(rowsOf(g.Forward(ids).MustView([]int64{1, -1}, true), 1)[0]) })
				return out
			}
			if logits(apart) != logits(joined) {
				t.Error("logits differ")
			}
			gen := func(g *GPT) string {
				out, err := EngineGenerate(g, prompts, 6)
				if err != nil {
					t.Fatal(err)
				}
				return fmt.Sprint(out)
			}
			if a, b := gen(apart), gen(joined); a != b {
				t.Errorf("greedy tokens %s joined, %s apart", b, a)
			}
			half := func(w *ts.Tensor) *ts.Tensor { return w.MustMulScalar(ts.FloatScalar(0.5), false) }
			if a, b := gen(apart.WithMatrices(half)), gen(joined.WithMatrices(half)); a != b {
				t.Errorf("a WithMatrices copy's tokens %s joined, %s apart", b, a)
			}
			ga, err := EngineGradNorm(apart, windows)
			if err != nil {
				t.Fatal(err)
			}
			gb, err := EngineGradNorm(joined, windows)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(ga) != fmt.Sprint(gb) || ga[0] == 0 {
				t.Errorf("gradient norms %v joined, %v apart", gb, ga)
			}
			if tc.precision == "fp32" {
				if err := SetPrecision(joined, "bf16", false); err == nil {
					t.Error("bf16 set on a model joined in float32: accepted")
				} else if logits(apart) != logits(joined) {
					t.Error("a refused precision changed the joined model")
				}
			}
			// Release empties every weight, joined tensors included.
			bases := []*ts.Tensor{joined.blocks[0].joined.QKV, joined.blocks[0].joined.GateUp}
			if err := joined.Release(); err != nil {
				t.Fatal(err)
			}
			if n := joined.WeightBytes(); n != 0 {
				t.Errorf("after Release the weights hold %d bytes", n)
			}
			for _, b := range bases {
				if b.Numel() != 0 {
					t.Errorf("after Release a joined tensor holds %d values", b.Numel())
				}
			}
		})
	}
}
