// Package precision is how a model's products compute: the precision
// names a spec takes (train.precision, extract.precision,
// train.lora.base_precision), their checks against what this libtorch
// multiplies on a device, and the backend of a reduced precision
// (bf16-mixed, bf16, fp16), which a runner sets once as the model's own
// (Set): its products and attention in that dtype, and the GPU's choices
// of how the recipe lays out its products. Package model holds the
// weights in a dtype (GPT.HoldReduced) and runs whichever backend it is
// given; it never asks which dtype it computes in.
package precision

import (
	"fmt"
	"sync"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"
)

// Precisions of a model's matrix products. Training takes fp32 or
// bf16-mixed; inference (attacks, scoring) fp32, bf16 or fp16.
const (
	// FP32 computes everything in float32: memo's default, whose results
	// on the CPU are bit-identical to memo before precisions.
	FP32 = "fp32"
	// BF16Mixed is mixed-precision training: the linear layers' products
	// (the LM head's too) run in bfloat16 on bfloat16 copies of float32
	// master weights, which the optimizer updates; attention runs in
	// bfloat16 too where libtorch has its fused kernel (2.1 and later, see
	// Backend); norms, the loss and the optimizer state stay float32, as
	// torch.autocast's bf16 policy leaves them.
	BF16Mixed = "bf16-mixed"
	// BF16 and FP16 are inference precisions: the linear layers' weights
	// are held in that dtype and their products computed in it, as is
	// attention where libtorch has its fused kernel; everything else
	// stays float32. BF16 is also the reduced LoRA base
	// (train.lora.base_precision, BaseDType).
	BF16 = "bf16"
	FP16 = "fp16"
)

// Parse checks a precision name for training (fp32, bf16-mixed) or
// inference (fp32, bf16, fp16) and returns the products' dtype.
func Parse(p string, training bool) (gotch.DType, error) {
	switch {
	case p == "" || p == FP32:
		return gotch.Float, nil
	case training && p == BF16Mixed:
		return gotch.BFloat16, nil
	case !training && p == BF16:
		return gotch.BFloat16, nil
	case !training && p == FP16:
		return gotch.Half, nil
	case training:
		return gotch.Float, fmt.Errorf("precision %q: training takes fp32 or bf16-mixed", p)
	}
	return gotch.Float, fmt.Errorf("precision %q: inference takes fp32, bf16 or fp16", p)
}

// BaseDType is the dtype a LoRA run's frozen base is held in
// (model.LoRA.HoldBase, RoundBase): float32 for fp32 or "", bfloat16 for
// bf16.
func BaseDType(p string) (gotch.DType, error) {
	switch p {
	case "", FP32:
		return gotch.Float, nil
	case BF16:
		return gotch.BFloat16, nil
	}
	return gotch.Float, fmt.Errorf("lora: base precision %q: want fp32 or bf16", p)
}

// Name is a precision as reported: fp32 when left empty.
func Name(p string) string {
	if p == "" {
		return FP32
	}
	return p
}

// Check reports whether precision p (a training precision when training,
// else an inference one) computes on dev: a name memo knows, and a dtype
// whose matrix products this libtorch runs there. memo config asks it
// before any work; Set asks it again.
func Check(p string, training bool, dev gotch.Device) error {
	dt, err := Parse(p, training)
	if err != nil {
		return err
	}
	if err := productsWork(dt, dev); err != nil {
		return fmt.Errorf("precision %s on %s: %w", p, torchx.DeviceName(dev), err)
	}
	return nil
}

// Set makes p g's precision, once, before g runs. For training
// (bf16-mixed) the weights stay float32 and each product casts them, so
// gradients reach the master weights. For inference (bf16, fp16) the
// linear layers' weights are held in that dtype (GPT.HoldReduced): a model
// built by NewForInference already holds them so, any other is converted
// once and its float32 originals freed. Such a model is for inference
// only: its precision cannot change again. fp32 on a float32 model is
// the float32 backend.
func Set(g *model.GPT, p string, training bool) error {
	if err := Check(p, training, g.Device()); err != nil {
		return err
	}
	dt, _ := Parse(p, training) // Check parsed it
	if held := g.HeldDType(); held != gotch.Float && (training || held != dt) {
		return fmt.Errorf("precision %s: the model's weights are already held in %s for inference", p, model.DTypeName(held))
	}
	if !training && dt != gotch.Float {
		if err := g.HoldReduced(dt); err != nil {
			return err
		}
	}
	g.SetBackend(New(g, dt))
	return nil
}

// NewForInference is model.NewForInference in precision p (fp32, bf16,
// fp16), checked first, with p's backend set.
func NewForInference(p *nn.Path, cfg model.Config, precision string) (*model.GPT, error) {
	if err := Check(precision, false, p.Device()); err != nil {
		return nil, err
	}
	dt, _ := Parse(precision, false) // Check parsed it
	g, err := model.NewForInference(p, cfg, dt)
	if err != nil {
		return nil, err
	}
	g.SetBackend(New(g, dt))
	return g, nil
}

// probed caches productsWork's answers by dtype and device.
var probed sync.Map

// productsWork reports whether libtorch multiplies matrices of dtype dt on
// dev, by trying one small product: Debian's libtorch 1.13 has no float16
// products on the CPU, and a GPU may lack bfloat16.
func productsWork(dt gotch.DType, dev gotch.Device) error {
	if dt == gotch.Float {
		return nil
	}
	key := fmt.Sprint(dt, dev)
	if v, ok := probed.Load(key); ok {
		err, _ := v.(error)
		return err
	}
	err := probeProducts(dt, dev)
	probed.Store(key, err)
	return err
}

// probeProducts is productsWork's probe, uncached. It expects a libtorch
// error from goroutines that hold no thread: gotch's Linear keeps the
// failing call and the read of its thread-local error on one OS thread
// (scripts/gotchgen/patch.go), which the input-error contract's cases,
// running side by side, once showed it did not.
func probeProducts(dt gotch.DType, dev gotch.Device) error {
	x := ts.MustOnes([]int64{2, 8}, dt, dev)
	defer x.MustDrop()
	y, err := ts.Linear(x, x, noBias)
	if err == nil {
		y.MustDrop()
		return nil
	}
	return fmt.Errorf("libtorch computes no %s matrix products there (%s); use fp32%s", model.DTypeName(dt), firstLine(err.Error()), otherHint(dt))
}

func otherHint(dt gotch.DType) string {
	if dt == gotch.Half {
		return ", bf16, or a CUDA device"
	}
	return ""
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}
