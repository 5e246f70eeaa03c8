package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"github.com/memo-research/memo/internal/torchx"
)

// LoRA is a set of low-rank adapters (Hu et al. 2021, arXiv 2106.09685) on
// some of a GPT's linear layers, laid out as Hugging Face's PEFT lays them
// out: for a layer W (out × in), A (r × in, PEFT's lora_A, drawn as PEFT's
// kaiming_uniform_(a=√5) draws it: U(−1/√in, 1/√in)) and B (out × r,
// lora_B, zero), and the layer computes Wx + (alpha/r)·B·A·x. The base
// weights are frozen: only A and B require gradients.
//
// The seam is the weight, not the activation: for a forward pass Apply
// puts W + (alpha/r)·B·A (transposed for GPT-2's Conv1D, PEFT's
// fan_in_fan_out) in the layer's slot, a tensor of the autograd graph, and
// Restore puts W back. Every path of the forward (fused q|k|v products,
// joined gate|up, caches) then sees the adapted layer without a change,
// and ∂L/∂A, ∂L/∂B are exact. The price is one out×r×in product per
// adapted layer and forward, small beside the batch's products, and no
// adapter dropout (which acts on the input x): LoRAOptions.Dropout must be
// 0 until the activation-side seam exists.
type LoRA struct {
	g       *GPT
	opt     LoRAOptions
	sites   []LoRASite
	a, b    []*ts.Tensor // per site: lora_A [r, in], lora_B [out, r]
	base    []*ts.Tensor // per site: the frozen weight, while applied
	applied bool
}

// LoRAOptions are the adapters' settings, train.lora's keys.
type LoRAOptions struct {
	Rank    int
	Alpha   float64
	Dropout float64
	Targets []string
	// Seed draws the A matrices.
	Seed int64
}

// NewLoRA adds adapters to g's layers that opt.Targets name (PEFT's
// target_modules rule) and freezes g's own weights. g must be a trainable
// model (New or a checkpoint's load), not one NewForInference joined.
func NewLoRA(g *GPT, opt LoRAOptions) (*LoRA, error) {
	if g.views != nil {
		return nil, errors.New("lora: the model's weights are joined for inference; load it for training")
	}
	if opt.Rank < 1 || !(opt.Alpha > 0) {
		return nil, fmt.Errorf("lora: rank %d and alpha %v: want rank >= 1 and alpha > 0", opt.Rank, opt.Alpha)
	}
	if opt.Dropout != 0 {
		return nil, fmt.Errorf("lora: dropout %v: memo's adapters sit on the weight, where dropout on the input cannot act; use 0", opt.Dropout)
	}
	sites, err := LoRASites(g.cfg, opt.Targets, opt.Rank)
	if err != nil {
		return nil, err
	}
	l := &LoRA{g: g, opt: opt, sites: sites}
	rng := rand.New(rand.NewPCG(uint64(opt.Seed), 0x6c6f7261)) // "lora"
	r := int64(opt.Rank)
	for _, s := range sites {
		bound := 1 / math.Sqrt(float64(s.In))
		vals := make([]float32, r*s.In)
		for i := range vals {
			vals[i] = float32((2*rng.Float64() - 1) * bound)
		}
		a, err := torchx.TensorOf(vals, []int64{r, s.In})
		if err != nil {
			return nil, fmt.Errorf("lora: %s: %w", s.Path, err)
		}
		a = a.MustTo(g.device, true)
		a.MustRequiresGrad_(true)
		b := ts.MustZeros([]int64{s.Out, r}, a.DType(), g.device)
		b.MustRequiresGrad_(true)
		l.a = append(l.a, a)
		l.b = append(l.b, b)
	}
	for _, p := range g.params {
		p.Tensor.MustRequiresGrad_(false)
	}
	if g.tiedHead != nil {
		g.tiedHead.MustRequiresGrad_(false)
	}
	return l, nil
}

// Scaling is alpha/r, what B·A is multiplied by (PEFT's scaling).
func (l *LoRA) Scaling() float64 { return l.opt.Alpha / float64(l.opt.Rank) }

// Device is the device of the model the adapters sit on.
func (l *LoRA) Device() gotch.Device { return l.g.device }

// Options are the adapters' settings.
func (l *LoRA) Options() LoRAOptions { return l.opt }

// Sites are the adapted layers, in layer and module order.
func (l *LoRA) Sites() []LoRASite { return l.sites }

// Params are the adapters, the only tensors that train, under PEFT's
// names in adapter_model.safetensors:
// base_model.model.<module path>.lora_A.weight and .lora_B.weight.
func (l *LoRA) Params() []Param {
	out := make([]Param, 0, 2*len(l.sites))
	for i, s := range l.sites {
		out = append(out,
			Param{Name: "base_model.model." + s.Path + ".lora_A.weight", Tensor: l.a[i], Decay: true, Layer: s.layer},
			Param{Name: "base_model.model." + s.Path + ".lora_B.weight", Tensor: l.b[i], Decay: true, Layer: s.layer})
	}
	return out
}

// delta is site i's (alpha/r)·B·A in the layout of its base weight
// ([out, in], or [in, out] for Conv1D), part of the autograd graph.
func (l *LoRA) delta(i int) *ts.Tensor {
	d := l.b[i].MustMatmul(l.a[i], false).MustMulScalar(ts.FloatScalar(l.Scaling()), true)
	if l.sites[i].Conv1D {
		d = d.MustTranspose(0, 1, true).MustContiguous(true)
	}
	return d
}

// slot is site i's weight slot in the model.
func (l *LoRA) slot(i int) **ts.Tensor {
	s := l.sites[i]
	return &l.g.blocks[s.layer].mods[s.mod].w
}

// Apply makes the model's forward passes adapted ones, until Restore.
func (l *LoRA) Apply() {
	if l.applied {
		return
	}
	l.base = make([]*ts.Tensor, len(l.sites))
	for i := range l.sites {
		w := l.slot(i)
		l.base[i] = *w
		d := l.delta(i)
		*w = l.base[i].MustAdd(d, false)
		d.MustDrop()
	}
	l.applied = true
}

// Restore puts the frozen weights back in their slots and drops this
// package's handles on the adapted ones. Forward restores before the
// backward pass; the autograd graph holds its own references to the
// adapted weights, which live until that pass frees the graph.
func (l *LoRA) Restore() {
	if !l.applied {
		return
	}
	for i := range l.sites {
		w := l.slot(i)
		(*w).MustDrop()
		*w = l.base[i]
	}
	l.base, l.applied = nil, false
}

// Forward is the adapted model's logits, unmerged: the base weights and
// the adapters stay apart. Gradients reach the adapters.
func (l *LoRA) Forward(ids *ts.Tensor) *ts.Tensor {
	l.Apply()
	defer l.Restore()
	return l.g.Forward(ids)
}

// ForwardForLoss is Forward for a pass whose logits only the loss reads
// (GPT.ForwardForLoss).
func (l *LoRA) ForwardForLoss(ids *ts.Tensor) *ts.Tensor {
	l.Apply()
	defer l.Restore()
	return l.g.ForwardForLoss(ids)
}

// Merge adds (alpha/r)·B·A into each adapted layer's weight in place
// (PEFT's merge_and_unload), so that g alone computes the adapted model:
// what `memo export --merge` writes. The adapters stay as they are; the
// caller must not use Forward after merging (it would add them twice).
func (l *LoRA) Merge() {
	l.Restore()
	torchx.NoGrad(func() {
		for i := range l.sites {
			d := l.delta(i)
			torchx.Add_(*l.slot(i), d)
			d.MustDrop()
		}
	})
}

// HoldBase holds the frozen base's block matrices (not the embedding,
// the LM head, norms or biases) in bfloat16 when dt is, halving
// their memory, while the adapters, their gradients and the optimizer's
// state stay float32 and the products compute in the model's training
// precision: under fp32 each product widens the bf16 weight exactly, and
// Apply's W + (alpha/r)·B·A is float32, so the only change is the base's
// rounding to bf16 (RoundBase makes the same model in float32). float32
// leaves the base as it is (package precision's BaseDType names both).
// Call it once the base is loaded and before Replica (replicas alias the
// weights it replaces).
func (l *LoRA) HoldBase(dt gotch.DType) error {
	if ok, err := reducedBase(dt); !ok {
		return err
	}
	if err := l.g.hold(gotch.BFloat16, blockMatrix); err != nil {
		return fmt.Errorf("lora: hold the base in bf16: %w", err)
	}
	for _, p := range l.g.params {
		p.Tensor.MustRequiresGrad_(false)
	}
	return nil
}

// RoundBase rounds the base's block matrices to bfloat16 in place, kept
// float32, when dt is bfloat16: the model HoldBase trained on, in the form
// inference and Merge take (W + (alpha/r)·B·A added in float32, as each
// training forward added it).
func (l *LoRA) RoundBase(dt gotch.DType) error {
	if ok, err := reducedBase(dt); !ok {
		return err
	}
	torchx.NoGrad(func() {
		for i := range l.g.blocks {
			l.g.blocks[i].each(func(m module, w **ts.Tensor, bias bool) {
				if *w != nil && blockMatrix(slot{layer: i, mod: m, bias: bias}) && (*w).DType() == gotch.Float {
					r := (*w).MustTotype(gotch.BFloat16, false).MustTotype(gotch.Float, true)
					(*w).Copy_(r)
					r.MustDrop()
				}
			})
		}
	})
	return nil
}

// blockMatrix names the weights a LoRA base holds reduced: the blocks'
// matrices of heldReduced's, not the head.
func blockMatrix(s slot) bool { return s.layer >= 0 && heldReduced(s) }

// reducedBase checks a LoRA base's dtype: true for bfloat16, false (and
// no error) for float32.
func reducedBase(dt gotch.DType) (bool, error) {
	switch dt {
	case gotch.Float:
		return false, nil
	case gotch.BFloat16:
		return true, nil
	}
	return false, fmt.Errorf("lora: base in %s: want float32 or bfloat16", DTypeName(dt))
}

// Replica is l's adapters on r, a replica of l's model (GPT.Replica): r's
// own weights are frozen again (Replica makes them trainable leaves), and
// its adapters are leaves that share l's storage, so that the optimizer's
// in-place update of l's adapters reaches every replica, while each
// replica's backward fills its own gradients (the caller adds them into
// l's, as it does the replicas' weight gradients).
func (l *LoRA) Replica(r *GPT) *LoRA {
	out := &LoRA{g: r, opt: l.opt, sites: l.sites}
	for i := range l.sites {
		out.a = append(out.a, l.a[i].MustDetach(false).MustSetRequiresGrad(true, true))
		out.b = append(out.b, l.b[i].MustDetach(false).MustSetRequiresGrad(true, true))
	}
	for _, p := range r.params {
		p.Tensor.MustRequiresGrad_(false)
	}
	if r.tiedHead != nil {
		r.tiedHead.MustRequiresGrad_(false)
	}
	return out
}
