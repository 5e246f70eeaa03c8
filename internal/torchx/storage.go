package torchx

// #include <stdlib.h>
// #include "storage.h"
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/sugarme/gotch/ts"
)

// SetData points each params[i] at src[i]'s data (same shape, dtype and
// storage: libtorch's set_), keeping the tensor, its requires_grad and
// every reference to it. Writes through either show in both.
func SetData(params, src []*ts.Tensor) error {
	if len(params) != len(src) {
		return fmt.Errorf("set data: %d parameters, %d sources", len(params), len(src))
	}
	return setData(params, src)
}

// ReleaseData empties params (size [0]): they keep their identity and hold
// no memory until SetData gives them data again. Views taken earlier keep
// the old storage alive.
func ReleaseData(params []*ts.Tensor) error { return setData(params, nil) }

func setData(params, src []*ts.Tensor) error {
	if len(params) == 0 {
		return nil
	}
	pp, f1 := ptrList(params)
	defer f1()
	var ps unsafe.Pointer
	if src != nil {
		var f2 func()
		ps, f2 = ptrList(src)
		defer f2()
	}
	var e *C.char
	rc := C.memo_set_data((*unsafe.Pointer)(pp), (*unsafe.Pointer)(ps), C.int64_t(len(params)), &e)
	runtime.KeepAlive(params)
	runtime.KeepAlive(src)
	if rc != 0 {
		return cErr(e)
	}
	return nil
}
