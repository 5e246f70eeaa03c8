package torchx

// #include <stdlib.h>
// #include "hostcopy.h"
import "C"

import (
	"fmt"
	"os"
	"runtime"

	lib "github.com/sugarme/gotch/libtch"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// asyncCopyBytes bounds the tensors ToDevice copies without waiting:
// batches, token ids, positions and masks, not weights, whose page-locked
// staging copies libtorch would keep cached for the rest of the process.
const asyncCopyBytes = 64 << 20

// ToDevice returns host tensor t on dev and frees t (t itself when dev is
// the CPU). On a GPU a tensor of at most 64 MiB is copied without the host
// waiting for the work already queued there (hostcopy.cpp): through
// page-locked memory, on the device's stream, so that the host can queue
// the next step while the GPU finishes the last. MEMO_ASYNC_COPY=off
// copies every tensor the blocking way, to compare.
func ToDevice(t *ts.Tensor, dev gotch.Device) (*ts.Tensor, error) {
	if !dev.IsCuda() {
		return t, nil
	}
	if asyncCopyOff || t.Numel()*t.DType().Size() > asyncCopyBytes {
		return t.To(dev, true)
	}
	defer t.MustDrop()
	var e *C.char
	p := C.memo_to_device_async(t.Ctensor(), C.int(dev.Value), &e)
	runtime.KeepAlive(t)
	if e != nil {
		return nil, fmt.Errorf("copy to %v: %v", dev, cErr(e))
	}
	return ts.New(lib.Ctensor(p)), nil
}

var asyncCopyOff = os.Getenv("MEMO_ASYNC_COPY") == "off"
