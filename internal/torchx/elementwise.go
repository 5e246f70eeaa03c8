package torchx

// #include <stdlib.h>
// #include "elementwise.h"
import "C"

import (
	_ "embed"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"github.com/sugarme/gotch"
	lib "github.com/sugarme/gotch/libtch"
	"github.com/sugarme/gotch/ts"
)

// elementwiseSource is the kernels' CUDA text, compiled by NVRTC on a
// GPU's first call (elementwise_cuda.cpp) and included as host C++ by
// elementwise.cpp.
//
//go:embed elementwise.cu
var elementwiseSource string

func init() {
	src := C.CString(elementwiseSource)
	C.memo_elementwise_source(src)
	C.free(unsafe.Pointer(src))
}

// Rope rotates the first rot entries of x's last dimension by rotate-half
// (x·cos + swapHalves(x)·sinSigned, cos and sinSigned broadcast against
// that part of x) and passes the rest of the dimension through unchanged;
// the result in the promotion of x's and cos's dtypes. Libtorch's ops in
// one Go → C call, bit-identical to calling them one by one; on a GPU,
// memo's kernel where it applies (RopeTo). Panics, like gotch's Must
// functions, if libtorch fails.
func Rope(x, cos, sinSigned *ts.Tensor, rot int64) *ts.Tensor {
	return rope(x, cos, sinSigned, rot, -1)
}

// RopeTo is Rope with the result in dt, as casting Rope's result to dt
// would give it. On a GPU, an x of [B,H,T,D] in float32 or bfloat16
// rotated over all of D, with float32 tables that take no gradient, [T,D]
// or [B,1,T,D] (a padded batch's own positions), goes through memo's
// kernel (elementwise.cu): one pass over x each way, where the
// composition and the cast make seven forward, with the same results bit
// for bit (ElementwiseKernels; MEMO_KERNELS=off or SetKernels(false) keeps
// the composition).
func RopeTo(x, cos, sinSigned *ts.Tensor, rot int64, dt gotch.DType) *ts.Tensor {
	return rope(x, cos, sinSigned, rot, int(dt.CInt()))
}

func rope(x, cos, sinSigned *ts.Tensor, rot int64, out int) *ts.Tensor {
	var e *C.char
	p := C.memo_rope(x.Ctensor(), cos.Ctensor(), sinSigned.Ctensor(), C.int64_t(rot), C.int(out), kernelsOn(), &e)
	runtime.KeepAlive(x)
	runtime.KeepAlive(cos)
	runtime.KeepAlive(sinSigned)
	return fusedResult("rope", p, e)
}

// SwiGLU is SiLU(gate)·up, the gated MLP's product. Libtorch's silu and
// mul, or on a GPU, for contiguous gate and up of one shape in float32 or
// bfloat16, memo's kernel: one pass forward and one backward, which keeps
// gate and up for the backward pass rather than SiLU(gate) too. Its
// results equal the composition's but where CUDA's and libtorch's SiLU
// backward round differently (at most one rounding of the dtype; see
// elementwise.cu). Panics, like gotch's Must functions, if libtorch fails.
func SwiGLU(gate, up *ts.Tensor) *ts.Tensor {
	var e *C.char
	p := C.memo_swiglu(gate.Ctensor(), up.Ctensor(), kernelsOn(), &e)
	runtime.KeepAlive(gate)
	runtime.KeepAlive(up)
	return fusedResult("swiglu", p, e)
}

// SwiGLUJoined is SwiGLU of the two halves of gateUp's last dimension
// (gate first, up second), as a joined gate|up product gives them. On a
// GPU, a contiguous gateUp goes through memo's kernel, which reads the
// halves in place and returns one gradient for gateUp, where autograd
// would sum two zero-padded ones through the halves' views; otherwise
// libtorch's narrow, silu and mul, as SwiGLU of the two views.
func SwiGLUJoined(gateUp *ts.Tensor) *ts.Tensor {
	var e *C.char
	p := C.memo_swiglu_joined(gateUp.Ctensor(), kernelsOn(), &e)
	runtime.KeepAlive(gateUp)
	return fusedResult("swiglu", p, e)
}

// CastCopies is n (1 to 3) copies of x in dt, each its own tensor, as n
// casts of x would give them: the inputs of n products that read one
// activation (a block's normalized x, read by the q, k and v products, or
// by gate and up), so that each product's gradient comes back on its own
// and they are summed in x's dtype. On a GPU, a contiguous float32 x cast
// to bfloat16 goes through memo's kernel: one pass writes one buffer that
// the n copies share (they are only read, and each product keeps its
// input for the backward pass: n buffers would keep n − 1 needless
// copies), and one pass sums their gradients into float32, where the
// composition makes n passes forward and 2n − 1 backward. The copies
// must not be modified in place. Its copies are the casts'
// bit for bit; the gradient's sum may differ from autograd's in the last
// bit, by the order of the additions. Panics, like gotch's Must
// functions, if libtorch fails.
func CastCopies(x *ts.Tensor, dt gotch.DType, n int) []*ts.Tensor {
	var e *C.char
	out := make([]unsafe.Pointer, max(n, 1))
	rc := C.memo_cast_copies(x.Ctensor(), C.int(dt.CInt()), C.int(n), kernelsOn(), &out[0], &e)
	runtime.KeepAlive(x)
	if rc != 0 {
		panic(fmt.Sprintf("cast copies: %v", cErr(e)))
	}
	return wrapTensors(out[:n])
}

// RMSNormCopies is n (1 to 3) copies in dt of RMSNorm(x, w, eps, offset)
// (RMSNorm's result as CastCopies would copy it, into one shared buffer)
// where memo's kernel
// takes them: on a GPU, a contiguous float32 x [..., d] and float32 w [d],
// bfloat16 copies. Its one pass over x forward replaces RMSNorm's and the
// copies' two, and backward one pass gives x's and w's gradients from the
// copies' where the two would keep a float32 gradient between them. The
// results equal the two's within float32 rounding of the norm (its sums
// are added in another order). ok is false, and nothing computed, where
// the kernel does not apply: the caller calls RMSNorm and CastCopies.
// Panics, like gotch's Must functions, if libtorch fails.
func RMSNormCopies(x, w *ts.Tensor, eps float64, offset bool, dt gotch.DType, n int) (ys []*ts.Tensor, ok bool) {
	_, ys, ok = rmsNormCopies(x, nil, w, eps, offset, dt, n)
	return ys, ok
}

// AddRMSNormCopies is RMSNormCopies of the residual sum h = x + delta,
// with h, where memo's kernel takes them: on a GPU, contiguous float32 x
// [..., d] and bfloat16 delta of x's shape (a block's branch output added
// into the residual stream), with RMSNormCopies' w and dt. One pass
// forward, where the addition and the norm make two; backward, one pass
// adds the norm's gradient of h to the gradient h's other readers give
// it and writes x's gradient and delta's, where autograd adds them in a
// pass of its own and casts delta's in another. h is libtorch's sum bit
// for bit; the copies and gradients are RMSNormCopies' of it. ok is false,
// and nothing computed, where the kernel does not apply: the caller adds
// and normalizes. Panics, like gotch's Must functions, if libtorch fails.
func AddRMSNormCopies(x, delta, w *ts.Tensor, eps float64, offset bool, dt gotch.DType, n int) (h *ts.Tensor, ys []*ts.Tensor, ok bool) {
	if fusedAddOff {
		return nil, nil, false
	}
	return rmsNormCopies(x, delta, w, eps, offset, dt, n)
}

// rmsNormCopies is AddRMSNormCopies, or RMSNormCopies (h nil) where delta
// is nil.
func rmsNormCopies(x, delta, w *ts.Tensor, eps float64, offset bool, dt gotch.DType, n int) (h *ts.Tensor, ys []*ts.Tensor, ok bool) {
	var e *C.char
	var hp, dp unsafe.Pointer
	if delta != nil {
		dp = delta.Ctensor()
	}
	out := make([]unsafe.Pointer, max(n, 1))
	off := C.int(0)
	if offset {
		off = 1
	}
	rc := C.memo_rms_norm_copies(x.Ctensor(), dp, w.Ctensor(), C.double(eps), off, C.int(dt.CInt()), C.int(n), kernelsOn(), &hp, &out[0], &e)
	runtime.KeepAlive(x)
	runtime.KeepAlive(delta)
	runtime.KeepAlive(w)
	switch rc {
	case 0:
		return nil, nil, false
	case 1:
		if hp != nil {
			h = ts.New(lib.Ctensor(hp))
		}
		return h, wrapTensors(out[:n]), true
	}
	panic(fmt.Sprintf("rms norm copies: %v", cErr(e)))
}

// fusedAddOff is MEMO_FUSED_ADD=off, read once: AddRMSNormCopies never
// takes its kernel, so a residual sum is libtorch's addition and its norm
// RMSNormCopies', to measure what the one pass gives.
var fusedAddOff = os.Getenv("MEMO_FUSED_ADD") == "off"

// FusedAdd reports whether AddRMSNormCopies may take its kernel (not
// MEMO_FUSED_ADD=off).
func FusedAdd() bool { return !fusedAddOff }

// CrossEntropy is each row's cross-entropy of logits [N,V] against int64
// targets [N], float32 [N], 0 where the target is ignore: libtorch's
// unreduced loss of the logits' float32 values (a bfloat16 x cast first),
// bit for bit what gotch's CrossEntropyLoss gives. On a GPU, contiguous
// bfloat16 logits go through memo's kernel (elementwise.cu): one pass
// forward and one backward, which writes the logits' gradient in
// bfloat16, where the cast and the float32 loss make about eight passes
// over a float32 [N,V] copy. Its losses and gradient equal the
// composition's within float32 rounding (its sums are added in another
// order, and its exp is CUDA's); a target outside [0, V) gives a NaN loss
// there, where libtorch's raises the error this returns.
func CrossEntropy(logits, targets *ts.Tensor, ignore int64) (*ts.Tensor, error) {
	var e *C.char
	p := C.memo_cross_entropy(logits.Ctensor(), targets.Ctensor(), C.int64_t(ignore), kernelsOn(), &e)
	runtime.KeepAlive(logits)
	runtime.KeepAlive(targets)
	if p == nil {
		return nil, fmt.Errorf("cross-entropy: %v", cErr(e))
	}
	return ts.New(lib.Ctensor(p)), nil
}

// wrapTensors wraps C tensor pointers a C call wrote into Go memory (which
// cgo allows: it holds no Go pointers).
func wrapTensors(ps []unsafe.Pointer) []*ts.Tensor {
	ys := make([]*ts.Tensor, len(ps))
	for i, p := range ps {
		ys[i] = ts.New(lib.Ctensor(p))
	}
	return ys
}

// ElementwiseKernels says whether CUDA device index runs memo's
// elementwise kernels (RopeTo, SwiGLU, CastCopies, RMSNormCopies,
// AddRMSNormCopies, CrossEntropy): "on",
// compiling and checking them first if no call has, or "off: " and why it keeps libtorch's
// compositions (MEMO_KERNELS=off, a build without the cuda tag, no NVRTC,
// a failed check against the composition).
func ElementwiseKernels(index int) string {
	if kernelsOff.Load() {
		return "off: MEMO_KERNELS=off"
	}
	p := C.memo_elementwise_status(C.int(index))
	defer C.free(unsafe.Pointer(p))
	if why := C.GoString(p); why != "" {
		return "off: " + why
	}
	return "on"
}

func kernelsOn() C.int {
	if kernelsOff.Load() {
		return 0
	}
	return 1
}

// setElementwiseOnHost runs the GPU kernels' per-element code on CPU
// tensors too, to check it against libtorch's composition (tests).
func setElementwiseOnHost(on bool) {
	v := C.int(0)
	if on {
		v = 1
	}
	C.memo_elementwise_on_host(v)
}

// ElementwiseOnHostForTest runs the GPU kernels' per-element code on CPU
// tensors until the returned function is called: how another package's
// tests take a model's GPU path through the kernels on a machine without
// a GPU. Never for anything but tests (it is slow, one element at a time).
func ElementwiseOnHostForTest() (restore func()) {
	setElementwiseOnHost(true)
	return func() { setElementwiseOnHost(false) }
}

// elementwiseCheckOnHost runs a GPU's start-up check of the kernels with
// their code on the host: "" when it passes (tests).
func elementwiseCheckOnHost() string {
	p := C.memo_elementwise_check_host()
	defer C.free(unsafe.Pointer(p))
	return C.GoString(p)
}

// ElementwiseCalls counts the forward calls memo's elementwise kernels
// have taken in this process (on a GPU, or on the host in tests): how a
// test sees that a pass went through them.
func ElementwiseCalls() int64 { return int64(C.memo_elementwise_calls(-1)) }

// ElementwiseCallsOf is ElementwiseCalls of one kernel: "rope", "swiglu"
// (either form), "copies" (CastCopies), "rms-copies" (RMSNormCopies),
// "add-rms-copies" (AddRMSNormCopies) or "cross-entropy" (CrossEntropy).
// Panics on another name.
func ElementwiseCallsOf(kernel string) int64 {
	kinds := map[string]C.int{"rope": 0, "swiglu": 1, "copies": 2, "rms-copies": 3, "cross-entropy": 4, "add-rms-copies": 5}
	k, ok := kinds[kernel]
	if !ok {
		panic("ElementwiseCallsOf: no kernel " + kernel)
	}
	return int64(C.memo_elementwise_calls(k))
}
