package torchx

// #include <stdlib.h>
// #include "attention.h"
import "C"

import (
	"runtime"

	"github.com/sugarme/gotch/ts"
)

// FusedAttentionAvailable reports whether this libtorch has
// scaled_dot_product_attention (2.1 and later; not Debian's 1.13).
func FusedAttentionAvailable() bool { return C.memo_sdpa_available() == 1 }

// FusedAttentionGQAAvailable reports whether FusedAttentionGQA can run:
// libtorch 2.5 and later.
func FusedAttentionGQAAvailable() bool { return C.memo_sdpa_gqa_available() == 1 }

// FusedAttention is softmax(q·kᵀ·scale + mask)·v in libtorch's
// scaled_dot_product_attention, differentiable; with causal (and a nil
// mask) under the causal mask of T == S positions. q [B,H,T,hd], k and v
// [B,H,S,hd] and mask (nil, or broadcastable to [B,H,T,S]) share one
// dtype, the result's. ok is false when this libtorch lacks the op.
func FusedAttention(q, k, v, mask *ts.Tensor, scale float64, causal bool) (out *ts.Tensor, ok bool) {
	return sdpa(q, k, v, mask, scale, causal, false)
}

// FusedAttentionGQA is FusedAttention with k and v of KV heads [B,KV,S,hd],
// KV dividing H, key/value head j serving query heads j·H/KV … (j+1)·H/KV−1
// as a repetition of them would, without the copies. ok is false when this
// libtorch lacks it (FusedAttentionGQAAvailable).
func FusedAttentionGQA(q, k, v, mask *ts.Tensor, scale float64, causal bool) (out *ts.Tensor, ok bool) {
	return sdpa(q, k, v, mask, scale, causal, true)
}

func sdpa(q, k, v, mask *ts.Tensor, scale float64, causal, gqa bool) (out *ts.Tensor, ok bool) {
	c, g := C.int(0), C.int(0)
	if causal {
		c = 1
	}
	if gqa {
		g = 1
	}
	var e *C.char
	p := C.memo_sdpa(q.Ctensor(), k.Ctensor(), v.Ctensor(), ctensorOf(mask), C.double(scale), c, g, &e)
	runtime.KeepAlive(q)
	runtime.KeepAlive(k)
	runtime.KeepAlive(v)
	runtime.KeepAlive(mask)
	return kernelResult("scaled_dot_product_attention", p, e)
}
