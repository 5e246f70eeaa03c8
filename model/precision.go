package model

import (
	"fmt"
	"os"
	"sync"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Precisions of a model's matrix products. Training takes fp32 or
// bf16-mixed; inference (attacks, scoring) fp32, bf16 or fp16.
const (
	// PrecisionFP32 computes everything in float32: memo's default, whose
	// results on the CPU are bit-identical to memo before precisions.
	PrecisionFP32 = "fp32"
	// PrecisionBF16Mixed is mixed-precision training: the linear layers'
	// products (the LM head's too) run in bfloat16 on bfloat16 copies of
	// float32 master weights, which the optimizer updates; attention runs
	// in bfloat16 too where libtorch has its fused kernel (2.1 and later,
	// see reducedAttention); norms, the loss and the optimizer state stay
	// float32, as torch.autocast's bf16 policy leaves them.
	PrecisionBF16Mixed = "bf16-mixed"
	// PrecisionBF16 and PrecisionFP16 are inference precisions: the linear
	// layers' weights are held in that dtype and their products computed
	// in it, as is attention where libtorch has its fused kernel;
	// everything else stays float32.
	PrecisionBF16 = "bf16"
	PrecisionFP16 = "fp16"
)

// ParsePrecision checks a precision name for training (fp32, bf16-mixed)
// or inference (fp32, bf16, fp16) and returns the products' dtype.
func ParsePrecision(p string, training bool) (gotch.DType, error) {
	switch {
	case p == "" || p == PrecisionFP32:
		return gotch.Float, nil
	case training && p == PrecisionBF16Mixed:
		return gotch.BFloat16, nil
	case !training && p == PrecisionBF16:
		return gotch.BFloat16, nil
	case !training && p == PrecisionFP16:
		return gotch.Half, nil
	case training:
		return gotch.Float, fmt.Errorf("precision %q: training takes fp32 or bf16-mixed", p)
	}
	return gotch.Float, fmt.Errorf("precision %q: inference takes fp32, bf16 or fp16", p)
}

// CheckPrecision reports whether precision p (a training precision when
// training, else an inference one) computes on dev: a name memo knows,
// and a dtype whose matrix products this libtorch runs there. memo config
// asks it before any work; SetPrecision asks it again.
func CheckPrecision(p string, training bool, dev gotch.Device) error {
	dt, err := ParsePrecision(p, training)
	if err != nil {
		return err
	}
	if err := productsWork(dt, dev); err != nil {
		return fmt.Errorf("precision %s on %s: %w", p, torchxDeviceName(dev), err)
	}
	return nil
}

// SetPrecision sets how g's products compute. For training (bf16-mixed)
// the weights stay float32 and each product casts them, so gradients reach
// the master weights. For inference (bf16, fp16) the linear layers'
// weights are held in that dtype (holdReduced): a model built by
// NewForInference already holds them so, any other is converted once
// and its float32 originals freed. Such a model is for inference only:
// its precision cannot change again. fp32 is a no-op on a float32 model.
func (g *GPT) SetPrecision(p string, training bool) error {
	if err := CheckPrecision(p, training, g.device); err != nil {
		return err
	}
	dt, _ := ParsePrecision(p, training) // CheckPrecision parsed it
	if held := g.heldDType(); held != gotch.Float && (training || held != dt) {
		return fmt.Errorf("precision %s: the model's weights are already held in %s for inference", p, dtypeName(held))
	}
	if training || dt == gotch.Float {
		g.compute = dt
		return nil
	}
	if err := g.holdReduced(dt, false); err != nil {
		return err
	}
	g.compute = dt
	return nil
}

// heldReduced reports whether the weight in slot s is held in a reduced
// inference precision: the blocks' matrices and an untied LM head. Norm
// gains and biases stay float32 (products cast a bias), and so does the
// embedding, whose lookups read float32 rows.
func heldReduced(s slot) bool {
	return !s.bias && !s.mod.isNorm() && (s.layer >= 0 || s.mod == modHead)
}

// WeightBytes is the memory g's weights take as held: each parameter at
// its dtype's size (bf16 linear weights under an inference precision),
// and a tied head's reduced copy.
func (g *GPT) WeightBytes() int64 {
	var n int64
	add := func(t *ts.Tensor) { n += int64(t.Numel()) * int64(t.DType().Size()) }
	for _, p := range g.params {
		add(p.Tensor)
	}
	if g.tiedHead != nil {
		add(g.tiedHead)
	}
	return n
}

// heldDType is the dtype of g's linear weights: float32 unless an
// inference precision holds them reduced.
func (g *GPT) heldDType() gotch.DType { return g.top[modHead].w.DType() }

// holdReduced converts the linear layers' weights to dt and frees their
// float32 originals' memory, so a bf16 model takes about half the memory
// of its float32 one; Params lists the converted tensors, which keep
// requires_grad (GradNorm differentiates with respect to them). A head
// tied to the embedding gets a reduced copy of its own (tiedHead): the
// embedding stays float32 for its lookups. The conversion rounds as the
// per-product cast it replaces did, so results do not change.
//
// With blocksOnly (a LoRA run's frozen base, LoRA.HoldBase) only the
// blocks' matrices are converted: the head and the embedding stay float32.
func (g *GPT) holdReduced(dt gotch.DType, blocksOnly bool) error {
	for v := range g.views {
		if v.DType() != dt { // a joined tensor cannot be converted view by view
			return fmt.Errorf("weights in %s: the model was built for inference in %s (its layers joined); load it in the precision wanted", dtypeName(dt), dtypeName(v.DType()))
		}
	}
	embed := g.top[modEmbed].w
	converted := map[*ts.Tensor]*ts.Tensor{}
	convert := func(w *ts.Tensor) *ts.Tensor {
		if w == nil || w.DType() == dt {
			return w
		}
		if c, ok := converted[w]; ok {
			return c
		}
		var c *ts.Tensor
		torchx.NoGrad(func() { c = w.MustTotype(dt, false) })
		c.MustRequiresGrad_(true)
		converted[w] = c
		return c
	}
	for i := range g.blocks {
		g.blocks[i].each(func(m module, w **ts.Tensor, bias bool) {
			if heldReduced(slot{layer: i, mod: m, bias: bias}) {
				*w = convert(*w)
			}
		})
	}
	if !blocksOnly {
		head := g.top[modHead]
		head.w = convert(head.w)
		g.top[modHead] = head
		if !g.cfg.Untied {
			g.tiedHead = head.w
		}
	}
	var originals []*ts.Tensor
	for i, p := range g.params {
		if c, ok := converted[p.Tensor]; ok && p.Tensor != embed {
			originals = append(originals, p.Tensor)
			g.params[i].Tensor = c
		}
	}
	// Emptied rather than dropped: the VarStore still names them.
	if err := torchx.ReleaseData(originals); err != nil {
		return fmt.Errorf("free the float32 weights: %w", err)
	}
	return nil
}

// PrecisionName is a precision as reported: fp32 when left empty.
func PrecisionName(p string) string {
	if p == "" {
		return PrecisionFP32
	}
	return p
}

// Precision is the dtype g's products compute in (gotch.Float unless
// SetPrecision chose another).
func (g *GPT) Precision() gotch.DType {
	if g.compute == gotch.Uint8 { // the zero value: not set
		return gotch.Float
	}
	return g.compute
}

// product is x·wᵀ + bias (x·w + bias for Conv1D's [in, out] weights) in
// g's precision, returned in float32, or with keep in that precision; a
// float32 product of [N,K] weights is be's.
func (g *GPT) product(be Backend, x, w, bias *ts.Tensor, conv1D, keep bool) *ts.Tensor {
	dt := g.Precision()
	if dt == gotch.Float && !conv1D && w.DType() == gotch.Float {
		return be.Linear(x, w, bias)
	}
	var s scope
	defer s.drop()
	if conv1D {
		w = s.keep(w.MustT(false))
	}
	if w.DType() != dt { // a LoRA base held in bf16 under fp32 products (LoRA.HoldBase) widens exactly
		w = s.keep(w.MustTotype(dt, false))
	}
	if dt != gotch.Float {
		if x.DType() != dt { // a product kept in dt (innerLinear) feeds the next as it is
			x = s.keep(x.MustTotype(dt, false))
		}
		if bias != nil {
			bias = s.keep(bias.MustTotype(dt, false))
		}
	}
	if bias == nil {
		bias = noBias
	}
	y := ts.MustLinear(x, w, bias)
	if dt == gotch.Float || keep {
		return y
	}
	return y.MustTotype(gotch.Float, true)
}

// reducedAttention is attention in g's reduced precision (bf16-mixed,
// bf16, fp16) through libtorch's fused scaled_dot_product_attention, as
// torch.autocast runs it: q, k, v and the mask cast to that dtype, the
// [T,S] scores never stored on a GPU. fullCausal says the mask, when it is
// the shared 2-D one, is the plain causal mask (no sliding window), which
// the kernel then applies itself. ok is false, nothing computed, in fp32,
// with Gemma 2's soft-capping (the kernel has no cap), or when this
// libtorch lacks the kernel (Debian's 1.13): the caller's attention runs
// in float32 then. The approximate-inference methods (model/approx) read
// the scores and never come here.
//
// With gqa, k and v have the model's KV heads, not repeated (nativeGQA).
func (g *GPT) reducedAttention(q, k, v, mask *ts.Tensor, scale float64, fullCausal, gqa bool) (*ts.Tensor, bool) {
	dt := g.Precision()
	if dt == gotch.Float || g.cfg.AttnSoftcap > 0 || !torchx.FusedAttentionAvailable() {
		return nil, false
	}
	var s scope
	defer s.drop()
	cast := func(x *ts.Tensor) *ts.Tensor {
		if x.DType() == dt {
			return x
		}
		return s.keep(x.MustTotype(dt, false))
	}
	causal := false
	if mask != nil && mask.Dim() == 2 && fullCausal && q.MustSize()[2] == k.MustSize()[2] {
		causal, mask = true, nil
	} else if mask != nil {
		mask = cast(mask)
	}
	if gqa {
		return torchx.FusedAttentionGQA(cast(q), cast(k), cast(v), mask, scale, causal)
	}
	return torchx.FusedAttention(cast(q), cast(k), cast(v), mask, scale, causal)
}

// nativeGQA says whether a full pass's grouped-query attention leaves k and
// v unrepeated for libtorch's fused kernel to share (enable_gqa), saving
// the H/KV-fold copies and their backward's sums: on a GPU in reduced
// precision under the plain causal mask, where the flash kernel takes
// grouped heads itself (a padding or window mask would send it to a kernel
// that does not). The CPU always repeats, so its results stay bit for bit
// those of before. MEMO_GQA=off in the environment repeats on a GPU too.
func (g *GPT) nativeGQA(mask *ts.Tensor, window int) bool {
	return g.device.IsCuda() && g.Precision() != gotch.Float && g.cfg.AttnSoftcap == 0 &&
		window == 0 && (mask == nil || mask.Dim() == 2) &&
		torchx.FusedAttentionAvailable() && torchx.FusedAttentionGQAAvailable() && gqaOn
}

// gqaOn is MEMO_GQA != off, read once.
var gqaOn = os.Getenv("MEMO_GQA") != "off"

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
	x := ts.MustOnes([]int64{2, 8}, dt, dev)
	defer x.MustDrop()
	y, err := ts.Linear(x, x, noBias)
	if err == nil {
		y.MustDrop()
		probed.Store(key, nil)
		return nil
	}
	err = fmt.Errorf("libtorch computes no %s matrix products there (%s); use fp32%s", dtypeName(dt), firstLine(err.Error()), otherHint(dt))
	probed.Store(key, err)
	return err
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

func torchxDeviceName(d gotch.Device) string {
	if d.IsCuda() {
		return fmt.Sprintf("cuda:%d", d.Value)
	}
	return "cpu"
}

func dtypeName(dt gotch.DType) string {
	switch dt {
	case gotch.Half:
		return "float16"
	case gotch.BFloat16:
		return "bfloat16"
	}
	return fmt.Sprint(dt)
}
