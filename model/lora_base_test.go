package model

import (
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// bf16BaseTol bounds the logits of a LoRA model whose base's block
// matrices are rounded to bfloat16 (8 significant bits: relative error
// up to 2⁻⁹ a weight) against the float32 base's, relative to the
// logits' scale; measured 1.0e-3 to 2.2e-3 on these nano models.
const bf16BaseTol = 1e-2

// With train.lora.base_precision = "bf16" (HoldBase) the base's block
// matrices take half their bytes, the rest of the model (embedding, head,
// norms) and the adapters stay float32, the logits stay within
// bf16BaseTol of the float32 base's, gradients reach the adapters alone,
// and RoundBase builds the same model in float32 (what the scoring stages
// and Merge load): logits equal to 1e-6.
func TestLoRAHoldBaseBF16(t *testing.T) {
	for _, fam := range loraFamilies {
		t.Run(fam.name, func(t *testing.T) {
			if err := CheckPrecision("bf16", false, gotch.CPU); err != nil {
				t.Skip(err)
			}
			ids := loraIDs()
			defer ids.MustDrop()
			opt := LoRAOptions{Rank: 4, Alpha: 8, Targets: fam.targets, Seed: 9}
			adapted := func() (*GPT, *LoRA) {
				g := newTest(t, fam.cfg)
				l, err := NewLoRA(g, opt)
				if err != nil {
					t.Fatal(err)
				}
				randomizeB(t, l)
				return g, l
			}
			g32, l32 := adapted()
			out := l32.Forward(ids)
			want := out.Float64Values()
			out.MustDrop()

			g, l := adapted()
			var blockBytes int64
			for i := range g.blocks {
				g.blocks[i].each(func(m module, w **ts.Tensor, bias bool) {
					if *w != nil && heldReduced(slot{layer: i, mod: m, bias: bias}) {
						blockBytes += int64((*w).Numel()) * 4
					}
				})
			}
			before := g.WeightBytes()
			if err := l.HoldBase(gotch.BFloat16); err != nil {
				t.Fatal(err)
			}
			if got := before - g.WeightBytes(); got != blockBytes/2 {
				t.Errorf("bf16 base saves %d bytes, want half the blocks' %d", got, blockBytes)
			}
			if dt := g.top[modEmbed].w.DType(); dt != gotch.Float {
				t.Errorf("embedding held in %v, want float32", dt)
			}
			for _, p := range l.Params() {
				if p.Tensor.DType() != gotch.Float {
					t.Errorf("adapter %s in %v, want float32", p.Name, p.Tensor.DType())
				}
			}
			out = l.Forward(ids)
			got := out.Float64Values()
			d, scale := loraMaxDiff(got, want)
			t.Logf("bf16 base: logits within %.3g of the fp32 base's (scale %.3g)", d, scale)
			if d > bf16BaseTol*max(1, scale) || d == 0 {
				t.Errorf("logits with a bf16 base differ from the fp32 base's by %g (scale %g), want (0, %g]", d, scale, bf16BaseTol*max(1, scale))
			}
			loss := out.MustSquare(false).MustMean(gotch.Float, true)
			if err := loss.Backward(); err != nil {
				t.Fatal(err)
			}
			loss.MustDrop()
			out.MustDrop()
			for _, p := range l.Params() {
				gr := p.Tensor.MustGrad(false)
				if !gr.MustDefined() {
					t.Errorf("adapter %s has no gradient over a bf16 base", p.Name)
				}
				gr.MustDrop()
			}
			for _, p := range g.Params() {
				if p.Tensor.MustRequiresGrad() {
					t.Errorf("base weight %s requires grad", p.Name)
				}
			}

			// RoundBase: the same model in float32.
			if err := l32.RoundBase(gotch.BFloat16); err != nil {
				t.Fatal(err)
			}
			out = l32.Forward(ids)
			if d, scale := loraMaxDiff(out.Float64Values(), got); d > 1e-6*max(1, scale) {
				t.Errorf("RoundBase's float32 model differs from the bf16-held one by %g", d)
			}
			out.MustDrop()
			if g32.WeightBytes() != before {
				t.Errorf("RoundBase changed the weights' bytes")
			}
		})
	}
}

func TestLoRABasePrecisionBadInput(t *testing.T) {
	g := newTest(t, Config{Preset: "nano", Vocab: 97, Seed: 1})
	l, err := NewLoRA(g, LoRAOptions{Rank: 4, Alpha: 8, Targets: []string{"q_proj"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range []gotch.DType{gotch.Half, gotch.Double} {
		if err := l.HoldBase(dt); err == nil || !strings.Contains(err.Error(), "want float32 or bfloat16") {
			t.Errorf("HoldBase(%v): %v", dt, err)
		}
	}
	if err := l.HoldBase(gotch.Float); err != nil || g.top[modEmbed].w.DType() != gotch.Float || g.blocks[0].mods[modQ].w.DType() != gotch.Float {
		t.Errorf("HoldBase(float32): %v, or the weights changed", err)
	}
}
