package torchx

import (
	"fmt"
	"reflect"
	"runtime"
	"unsafe"

	lib "github.com/sugarme/gotch/libtch"
	"github.com/sugarme/gotch/ts"
)

// gotch's generated in-place methods (MulScalar_, Add_, ...) replace the
// tensor's C handle with the new one libtorch returns and never free the
// old one. On a tensor that is dropped afterwards this leaks its storage (the
// orphaned handle keeps it alive): the optimizer leaked two parameter-sized
// buffers a step this way. These helpers run the op and free the returned
// handle instead, leaving the original handle, and its ownership, alone.
// (They live here, with memo's other gotch glue and unsafe code; the
// optimizer in train uses them.)

func inplace(name string, t *ts.Tensor, op func(out *lib.Ctensor, self lib.Ctensor)) {
	// libtorch's error is thread-local and read by a second C call: hold
	// the thread across both, as memo's copy of gotch does in its own
	// wrappers (scripts/gotchgen/patch.go).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var out lib.Ctensor
	op(&out, lib.Ctensor(t.Ctensor()))
	if err := ts.TorchErr(); err != nil {
		panic(fmt.Sprintf("in-place %s: %v", name, err))
	}
	lib.AtFree(out)
	runtime.KeepAlive(t)
}

// cscalar reads a Scalar's C handle, which gotch does not export.
func cscalar(s *ts.Scalar) lib.Cscalar {
	f := reflect.ValueOf(s).Elem().FieldByName("cscalar")
	return *(*lib.Cscalar)(unsafe.Pointer(f.UnsafeAddr()))
}

// MulScalar_ is t *= v in place (see above).
func MulScalar_(t *ts.Tensor, v float64) {
	s := ts.FloatScalar(v)
	inplace("mul", t, func(o *lib.Ctensor, x lib.Ctensor) { lib.AtgMulScalar_(o, x, cscalar(s)) })
}

// AddScalar_ is t += v in place (see above).
func AddScalar_(t *ts.Tensor, v float64) {
	s := ts.FloatScalar(v)
	inplace("add", t, func(o *lib.Ctensor, x lib.Ctensor) { lib.AtgAddScalar_(o, x, cscalar(s)) })
}

// Add_ is t += other in place (see above).
func Add_(t, other *ts.Tensor) {
	inplace("add", t, func(o *lib.Ctensor, x lib.Ctensor) { lib.AtgAdd_(o, x, lib.Ctensor(other.Ctensor())) })
}

// Lerp_ is t += w·(end − t) in place (see above).
func Lerp_(t, end *ts.Tensor, w float64) {
	s := ts.FloatScalar(w)
	inplace("lerp", t, func(o *lib.Ctensor, x lib.Ctensor) { lib.AtgLerp_(o, x, lib.Ctensor(end.Ctensor()), cscalar(s)) })
}

// Addcmul_ is t += a·b in place (see above).
func Addcmul_(t, a, b *ts.Tensor) {
	inplace("addcmul", t, func(o *lib.Ctensor, x lib.Ctensor) {
		lib.AtgAddcmul_(o, x, lib.Ctensor(a.Ctensor()), lib.Ctensor(b.Ctensor()))
	})
}

// Zero_ sets t to zeros in place (see above).
func Zero_(t *ts.Tensor) {
	inplace("zero", t, func(o *lib.Ctensor, x lib.Ctensor) { lib.AtgZero_(o, x) })
}
