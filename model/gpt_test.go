package model

import (
	"math"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"
)

func newTest(t *testing.T, cfg Config) *GPT {
	t.Helper()
	vs := nn.NewVarStore(gotch.CPU)
	g, err := New(vs.Root(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestParamCountMatchesTensors(t *testing.T) {
	for _, untied := range []bool{false, true} {
		g := newTest(t, Config{Preset: "nano", Vocab: 97, Untied: untied})
		var n int64
		for _, p := range g.Params() {
			sz := int64(1)
			for _, d := range p.Tensor.MustSize() {
				sz *= d
			}
			n += sz
		}
		if n != g.Config().Params() {
			t.Errorf("untied=%v: tensors hold %d values, Params() = %d", untied, n, g.Config().Params())
		}
		names := g.Names()
		if names[0] != "model.embed_tokens.weight" || names[2] != "model.layers.0.self_attn.q_proj.weight" {
			t.Errorf("names start %v", names[:3])
		}
		if last := names[len(names)-1]; untied && last != "lm_head.weight" || !untied && last != "model.norm.weight" {
			t.Errorf("untied=%v: last name %q", untied, last)
		}
	}
}

func TestSameSeedSameWeights(t *testing.T) {
	a := newTest(t, Config{Preset: "nano", Vocab: 50, Seed: 3})
	b := newTest(t, Config{Preset: "nano", Vocab: 50, Seed: 3})
	c := newTest(t, Config{Preset: "nano", Vocab: 50, Seed: 4})
	if !a.Params()[0].Tensor.MustEqual(b.Params()[0].Tensor, false) {
		t.Error("same seed gave different embeddings")
	}
	if a.Params()[0].Tensor.MustEqual(c.Params()[0].Tensor, false) {
		t.Error("different seeds gave the same embeddings")
	}
	std := a.Params()[0].Tensor.MustStd(true, false).Float64Values()[0]
	if math.Abs(std-0.02) > 0.002 {
		t.Errorf("embedding std %.4f, want about 0.02", std)
	}
}

func ids(t *testing.T, rows [][]int64) *ts.Tensor {
	t.Helper()
	flat := []int64{}
	for _, r := range rows {
		flat = append(flat, r...)
	}
	x, err := tensorOf(flat, []int64{int64(len(rows)), int64(len(rows[0]))}, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func maxAbsDiff(a, b *ts.Tensor) float64 {
	d := a.MustSub(b, false).MustAbs(true).MustMax(true)
	return d.Float64Values()[0]
}

func TestReplicaSharesWeights(t *testing.T) {
	g := newTest(t, Config{Preset: "nano", Vocab: 61, Context: 16, Seed: 5})
	r := g.Replica()
	x := ids(t, [][]int64{{1, 2, 3, 4}})
	if d := maxAbsDiff(g.Forward(x), r.Forward(x)); d != 0 {
		t.Fatalf("replica logits differ by %g", d)
	}
	torchx.NoGrad(func() { g.Params()[0].Tensor.MustMulScalar_(ts.FloatScalar(2)) })
	if d := maxAbsDiff(g.Forward(x), r.Forward(x)); d != 0 {
		t.Fatalf("after updating the master, replica logits differ by %g", d)
	}
	loss := r.Forward(x).MustSum(gotch.Float, true)
	loss.MustBackward()
	if g.Params()[0].Tensor.MustGrad(false).MustDefined() {
		t.Error("backward on the replica wrote the master's gradient")
	}
	if !r.Params()[0].Tensor.MustGrad(false).MustDefined() {
		t.Error("backward on the replica left its own gradient undefined")
	}
}
