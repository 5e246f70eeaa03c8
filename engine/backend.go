package engine

import (
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// backendFor is the backend of kc's passes, chosen once when the cache is
// made (or put under an approximation), around the model's own (g.Backend():
// float32 or the precision a runner set): the approximation's
// (approxBackend) when it has one; on the CPU, the decode kernels
// (decodeKernel); else the model's own.
func backendFor(kc *Cache) model.Backend {
	switch {
	case kc.approx != nil:
		return approxBackend{products: productsFor(kc.g), kc: kc}
	case kc.g.Device() == gotch.CPU:
		return newDecodeKernel(kc.g)
	}
	return kc.g.Backend()
}

// uncached is the pass state of the engine's uncached passes (the
// teacher-forced ones), its backend chosen as a cache's: on the CPU the
// decode kernels, whose products take a short window's few rows.
func uncached(g *model.GPT) *model.PassState {
	if g.Device() == gotch.CPU {
		return &model.PassState{Backend: newDecodeKernel(g)}
	}
	return &model.PassState{Backend: g.Backend()}
}

// products is the products of a backend (model.Backend's Linear).
type products interface {
	Linear(x, w, bias *ts.Tensor, p model.Product) *ts.Tensor
}

// productsFor is g's products: on the CPU, in float32, the row kernel's
// (rowKernel), else the model's own (a reduced precision's are never the
// kernel's).
func productsFor(g *model.GPT) products {
	base := g.Backend()
	if g.Device() == gotch.CPU && base.DType() == gotch.Float {
		return rowKernel{base: base}
	}
	return base
}

// rowKernel is the float32 products of a CPU pass: a decode step's few
// rows take torchx.LinearRows when it applies (no gradients, AVX2, at
// most torchx.MaxKernelRows rows, a weight whose rows lie packed — not
// Conv1D's transposed one, which it would copy whole), where OpenBLAS
// would repack the whole weight for them; the rest are the model's.
type rowKernel struct{ base products }

func (r rowKernel) Linear(x, w, bias *ts.Tensor, p model.Product) *ts.Tensor {
	if w.MustIsContiguous() {
		if y, ok := torchx.LinearRows(x, w, bias); ok {
			return y
		}
	}
	return r.base.Linear(x, w, bias, p)
}

// decodeKernel is the CPU backend: productsFor's products, and the
// model's own attention but for cached decode steps (one query per row,
// no soft-cap), which take torchx.AttendOne: it reads the cache's keys
// and values where they lie. A step the kernel declines (no AVX2,
// MEMO_KERNELS=off) is the model's.
type decodeKernel struct {
	base model.Base
	products
}

func newDecodeKernel(g *model.GPT) decodeKernel {
	return decodeKernel{base: g.Backend(), products: productsFor(g)}
}

func (d decodeKernel) Attend(c *model.AttentionCall) *ts.Tensor {
	if c.KV == nil {
		return d.base.Attend(c)
	}
	k, v := c.KV.Append(c.Layer, c.K, c.V)
	size := c.Q.MustSize()
	b, h, t, hd := size[0], size[1], size[2], size[3]
	if t == 1 && c.Softcap == 0 {
		if att, ok := torchx.AttendOne(c.Q, k, v, c.Mask, c.Scale); ok {
			k.MustDrop()
			v.MustDrop()
			return att.MustView([]int64{b, 1, h * hd}, true)
		}
	}
	return d.base.AttendOver(c, k, v)
}

// approxBackend hands each layer's attention to the cache's
// approximation, the one place exact decoding hands over to it: this
// pass's keys and values go through the approximation's Store into the
// cache and its Attend, under the per-row mask it reads. Its products are
// exact (productsFor).
type approxBackend struct {
	products
	kc *Cache
}

func (a approxBackend) Attend(c *model.AttentionCall) *ts.Tensor {
	kc := a.kc
	var s model.Scope
	defer s.Drop()
	q := c.Q
	size := q.MustSize()
	b, h, t, hd := size[0], size[1], size[2], size[3]
	k, v := kc.Append(c.Layer, kc.approx.Store(c.K), kc.approx.Store(c.V))
	s.Keep(k)
	s.Keep(v)
	if kvh := int64(kc.g.Config().KVHeads); kvh < h {
		k, v = s.Keep(model.RepeatHeads(k, h/kvh)), s.Keep(model.RepeatHeads(v, h/kvh))
	}
	mask := s.Keep(perRowMask(c.Mask, b, t, k.MustSize()[2], kc.g.Device()))
	// The prompt pass is exact: there a last query attends alone. A
	// decode step's measurements need every query.
	narrowOut := false
	if c.LastOnly && t > 1 {
		if c.Past == 0 {
			q = s.Keep(q.MustNarrow(2, t-1, 1, false))
			mask = s.Keep(mask.MustNarrow(2, t-1, 1, false))
		} else {
			narrowOut = true
		}
	}
	att := s.Keep(kc.approx.Attend(kc, c.Layer, q, k, v, mask, c.Scale, c.Softcap)) // [B,H,T',hd]
	if narrowOut {
		att = s.Keep(att.MustNarrow(2, t-1, 1, false))
	}
	tt := att.MustSize()[2]
	return att.MustTranspose(1, 2, false).MustReshape([]int64{b, tt, h * hd}, true)
}

// perRowMask is mask as the [B,1,T,S] per-row mask approximations read:
// a shared [T,S] one expanded, and none (a decode step without padding
// attends every key) all zeros.
func perRowMask(mask *ts.Tensor, b, t, s int64, dev gotch.Device) *ts.Tensor {
	switch {
	case mask == nil:
		return ts.MustZeros([]int64{b, 1, t, s}, gotch.Float, dev)
	case mask.Dim() == 2:
		return mask.MustExpand([]int64{b, 1, t, s}, false, false)
	}
	return mask.MustShallowClone()
}
