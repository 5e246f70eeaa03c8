package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sugarme/gotch/ts"

	"github.com/memo-research/memo/internal/torchx"
)

// loraFamilies are nano models of the three ways memo lays out a block's
// linear layers: separate q/k/v and gated MLP (llama), one fused Conv1D
// q|k|v with a plain MLP (gpt2), per-head fused q|k|v (gpt_neox); and
// targets by their Hugging Face names, with PEFT's suffix rule (gpt2's
// c_proj picks both attn.c_proj and mlp.c_proj).
var loraFamilies = []struct {
	name    string
	cfg     Config
	targets []string
	sites   int // adapted layers per block
}{
	{"llama", Config{Preset: "nano", Vocab: 97, Seed: 1}, []string{"q_proj", "v_proj", "down_proj"}, 3},
	{"gpt2", Config{Arch: "gpt2", Preset: "nano", Vocab: 97, Seed: 3}, []string{"c_attn", "c_proj"}, 3},
	{"gpt_neox", Config{Arch: "gpt_neox", Preset: "nano", Vocab: 97, Seed: 4}, []string{"query_key_value", "dense"}, 2},
}

func loraIDs() *ts.Tensor {
	return ts.MustOfSlice([]int64{1, 5, 9, 2, 7, 7, 3, 0, 4, 8, 6, 1}).MustView([]int64{2, 6}, true)
}

func loraMaxDiff(a, b []float64) (d, scale float64) {
	for i := range a {
		d = math.Max(d, math.Abs(a[i]-b[i]))
		scale = math.Max(scale, math.Abs(b[i]))
	}
	return d, scale
}

// randomizeB gives the zero-initialised B matrices values, as training
// would, so that the adapters change the model.
func randomizeB(t *testing.T, l *LoRA) {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, b := range l.b {
		vals := make([]float32, b.Numel())
		for i := range vals {
			vals[i] = float32(rng.NormFloat64() * 0.05)
		}
		src, err := torchx.TensorOf(vals, b.MustSize())
		if err != nil {
			t.Fatal(err)
		}
		torchx.NoGrad(func() { b.Copy_(src) })
		src.MustDrop()
	}
}

func TestLoRA(t *testing.T) {
	for _, fam := range loraFamilies {
		t.Run(fam.name, func(t *testing.T) {
			g := newTest(t, fam.cfg)
			ids := loraIDs()
			defer ids.MustDrop()
			base := g.Forward(ids)
			want := base.Float64Values()
			base.MustDrop()

			const rank = 4
			l, err := NewLoRA(g, LoRAOptions{Rank: rank, Alpha: 8, Targets: fam.targets, Seed: 9})
			if err != nil {
				t.Fatal(err)
			}
			c := g.Config()
			if n := len(l.Sites()); n != fam.sites*c.Layers {
				t.Fatalf("%d adapted layers, want %d", n, fam.sites*c.Layers)
			}

			// Before the first step B = 0: the adapted model is the base. W + 0
			// is W, but in a new tensor whose alignment may pick another BLAS
			// kernel, so the last bits may differ.
			// The adapted weights themselves are the base's bit for bit.
			l.Apply()
			for i, s := range l.Sites() {
				if !slices.Equal((*l.slot(i)).Float64Values(), l.base[i].Float64Values()) {
					t.Errorf("%s: W + (alpha/r)·B·A with B = 0 is not W bit for bit", s.Path)
				}
			}
			l.Restore()
			out := l.Forward(ids)
			if d, scale := loraMaxDiff(out.Float64Values(), want); d > 1e-6*math.Max(1, scale) {
				t.Errorf("logits with B = 0 differ from the base model's by %g", d)
			}
			out.MustDrop()

			// PEFT's names and shapes: lora_A [r, in], lora_B [out, r],
			// in and out the layer's (Conv1D's weight is [in, out]).
			for i, p := range l.Params() {
				s := l.Sites()[i/2]
				wantName, wantShape := "base_model.model."+s.Path+".lora_A.weight", []int64{rank, s.In}
				if i%2 == 1 {
					wantName, wantShape = "base_model.model."+s.Path+".lora_B.weight", []int64{s.Out, rank}
				}
				if p.Name != wantName || !slices.Equal(p.Tensor.MustSize(), wantShape) {
					t.Errorf("param %d: %s %v, want %s %v", i, p.Name, p.Tensor.MustSize(), wantName, wantShape)
				}
				if !strings.HasPrefix(s.Path, strings.SplitN(archs[c.Arch].Names.Layer, "%", 2)[0]) {
					t.Errorf("%s: not a path of the family's layers", s.Path)
				}
				w, ok := g.Param(s.Path + ".weight")
				if !ok {
					t.Fatalf("%s.weight: no such base weight", s.Path)
				}
				side := w.Tensor.MustSize()
				if s.Conv1D {
					side = []int64{side[1], side[0]}
				}
				if side[0] != s.Out || side[1] != s.In {
					t.Errorf("%s: site %d × %d, base weight %v", s.Path, s.Out, s.In, w.Tensor.MustSize())
				}
			}

			// Only the adapters require gradients, and a step moves only them.
			for _, p := range g.Params() {
				if p.Tensor.MustRequiresGrad() {
					t.Errorf("base weight %s requires grad", p.Name)
				}
			}
			before := make([][]float64, len(g.Params()))
			for i, p := range g.Params() {
				before[i] = p.Tensor.Float64Values()
			}
			adapterBefore := make([][]float64, len(l.Params()))
			for i, p := range l.Params() {
				if !p.Tensor.MustRequiresGrad() {
					t.Errorf("adapter %s does not require grad", p.Name)
				}
				adapterBefore[i] = p.Tensor.Float64Values()
			}
			// Two plain SGD steps: the first moves only B (∂L/∂A = 0 while
			// B = 0, as in PEFT), the second A too.
			for step := 0; step < 2; step++ {
				logits := l.Forward(ids)
				loss := logits.MustSquare(false).MustMean(logits.DType(), true)
				if err := loss.Backward(); err != nil {
					t.Fatal(err)
				}
				torchx.NoGrad(func() {
					for _, p := range l.Params() {
						gr := p.Tensor.MustGrad(false)
						gr.MustMulScalar_(ts.FloatScalar(-0.5))
						torchx.Add_(p.Tensor, gr)
						torchx.Zero_(gr)
						gr.MustDrop()
					}
				})
				loss.MustDrop()
				logits.MustDrop()
			}
			for i, p := range g.Params() {
				if !slices.Equal(p.Tensor.Float64Values(), before[i]) {
					t.Errorf("base weight %s moved", p.Name)
				}
				if gr := p.Tensor.MustGrad(false); gr.MustDefined() {
					t.Errorf("base weight %s has a gradient", p.Name)
				}
			}
			moved := 0
			for i, p := range l.Params() {
				if !slices.Equal(p.Tensor.Float64Values(), adapterBefore[i]) {
					moved++
				}
			}
			if moved != len(l.Params()) {
				t.Errorf("%d of %d adapter tensors moved, want all", moved, len(l.Params()))
			}

			// Merged logits equal the unmerged adapted model's to 1e-5.
			randomizeB(t, l)
			unmerged := l.Forward(ids)
			u := unmerged.Float64Values()
			unmerged.MustDrop()
			if d, _ := loraMaxDiff(u, want); d < 1e-3 {
				t.Fatalf("adapters barely change the logits (%g): the test would not see a wrong merge", d)
			}
			l.Merge()
			merged := g.Forward(ids)
			m := merged.Float64Values()
			merged.MustDrop()
			if d, scale := loraMaxDiff(m, u); d > 1e-5*math.Max(1, scale) {
				t.Errorf("merged logits differ from the unmerged adapted model's by %g (scale %g)", d, scale)
			}
		})
	}
}

func TestLoRABadInput(t *testing.T) {
	g := newTest(t, Config{Preset: "nano", Vocab: 97, Seed: 1})
	for _, c := range []struct {
		name string
		opt  LoRAOptions
		want string
	}{
		{"a target llama lacks", LoRAOptions{Rank: 4, Alpha: 8, Targets: []string{"c_attn"}}, `"c_attn": model.arch llama has no such linear layer`},
		{"rank above a side", LoRAOptions{Rank: 65, Alpha: 8, Targets: []string{"q_proj"}}, "larger than"},
		{"rank 0", LoRAOptions{Rank: 0, Alpha: 8, Targets: []string{"q_proj"}}, "rank 0"},
		{"dropout", LoRAOptions{Rank: 4, Alpha: 8, Dropout: 0.1, Targets: []string{"q_proj"}}, "dropout"},
	} {
		if _, err := NewLoRA(g, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one containing %q", c.name, err, c.want)
		}
	}
	c, err := Config{Arch: "gpt2", Preset: "nano", Vocab: 97}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	names, err := LoRAModuleNames(c)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"c_attn", "c_fc", "c_proj"}) {
		t.Errorf("gpt2's adaptable layers %v, want c_attn c_fc c_proj", names)
	}
}
