package model

import (
	"math"
	"runtime"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"
)

// bf16-mixed products stay close to float32 ones and their gradients
// reach the float32 master weights; fp32 is the float32 forward bit for
// bit; inference bf16 keeps the logits close; a precision the phase does
// not take is refused.
func TestPrecisions(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cfg := Config{Preset: "nano", Vocab: 97, Context: 32, Seed: 9}
	ids := ts.MustOfSlice([]int64{1, 5, 9, 2, 7, 7, 3, 60, 11, 12, 4, 4, 0, 12, 33, 8}).MustView([]int64{2, 8}, true)
	forward := func(g *GPT) []float32 {
		var out []float32
		torchx.NoGrad(func() {
			l := g.Forward(ids)
			out = rowsOf(l.MustView([]int64{1, -1}, true), 1)[0]
		})
		return out
	}
	g, err := New(nn.NewVarStore(gotch.CPU).Root(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := forward(g)
	if err := g.SetPrecision(PrecisionFP32, true); err != nil {
		t.Fatal(err)
	}
	for i, v := range forward(g) {
		if v != want[i] {
			t.Fatalf("fp32 after SetPrecision differs at %d: %v vs %v", i, v, want[i])
		}
	}
	worst := func(got []float32) float64 {
		w := 0.0
		for i := range got {
			w = math.Max(w, math.Abs(float64(got[i]-want[i])))
		}
		return w
	}
	if err := g.SetPrecision(PrecisionBF16Mixed, true); err != nil {
		t.Fatal(err)
	}
	if d := worst(forward(g)); d == 0 || d > 0.05 {
		t.Errorf("bf16-mixed logits differ from fp32 by %g: want a bf16 rounding (0, 0.05]", d)
	}
	logits := g.Forward(ids)
	loss := logits.MustSquare(true).MustMean(gotch.Float, true)
	loss.MustBackward()
	for _, p := range g.Params() {
		gr := p.Tensor.MustGrad(false)
		if gr.DType() != gotch.Float || gr.MustAbs(false).MustSum(gotch.Float, true).Float64Values()[0] == 0 {
			t.Errorf("%s: gradient %v, want a nonzero float32 gradient on the master weight", p.Name, gr.DType())
		}
	}
	inf, err := New(nn.NewVarStore(gotch.CPU).Root(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := inf.SetPrecision(PrecisionBF16, false); err != nil {
		t.Fatal(err)
	}
	if d := worst(forward(inf)); d == 0 || d > 0.05 {
		t.Errorf("bf16 inference logits differ from fp32 by %g: want (0, 0.05]", d)
	}
	got, err := inf.Generate([][]int32{{1, 5, 9}}, 4, GenOptions{UseCache: true})
	if err != nil || len(got[0]) != 4 {
		t.Errorf("bf16 generate: %v, %v", got, err)
	}
	if err := productsWork(gotch.Half, gotch.CPU); err != nil {
		fp16, _ := New(nn.NewVarStore(gotch.CPU).Root(), cfg)
		if err := fp16.SetPrecision(PrecisionFP16, false); err == nil {
			t.Error("fp16 on a CPU without float16 products accepted")
		} else {
			t.Log(err)
		}
	}
	for _, c := range []struct {
		p        string
		training bool
	}{{"bf16", true}, {"bf16-mixed", false}, {"fp8", false}} {
		if _, err := ParsePrecision(c.p, c.training); err == nil {
			t.Errorf("precision %q (training %v) accepted", c.p, c.training)
		}
	}
}
