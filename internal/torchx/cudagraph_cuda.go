//go:build cuda

package torchx

// #include <stdlib.h>
// #include "cudagraph.h"
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/sugarme/gotch"
)

// Graph is a captured CUDA graph (at::cuda::CUDAGraph): the kernels a
// function queued, replayed on the current stream with the same
// addresses, so their inputs are tensors whose values are copied in
// before each replay and their outputs tensors made during the capture.
type Graph struct{ p unsafe.Pointer }

// GraphsAvailable reports whether this build can capture CUDA graphs.
func GraphsAvailable() bool { return true }

// OnSideStream runs run with the side stream that CaptureGraph captures
// on as dev's current stream, in order with the work queued before and
// after: what a capture's first run does, so that libtorch's per-stream
// state (cuBLAS's workspace) exists before capture.
func OnSideStream(dev gotch.Device, run func()) (err error) {
	runtime.LockOSThread() // the current stream is the OS thread's
	defer runtime.UnlockOSThread()
	var e *C.char
	st := C.memo_side_stream_enter(C.int(dev.Value), &e)
	if st == nil {
		return fmt.Errorf("side stream of %v: %v", dev, cErr(e))
	}
	defer func() {
		if C.memo_side_stream_leave(st, &e) != 0 && err == nil {
			err = fmt.Errorf("side stream of %v: %v", dev, cErr(e))
		}
	}()
	run()
	return nil
}

// CaptureGraph captures the libtorch work run queues on dev, without
// running it; a panic in run (an operation a capture does not allow)
// ends the capture and comes back as the error.
func CaptureGraph(dev gotch.Device, run func()) (g *Graph, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var e *C.char
	p := C.memo_graph_capture_begin(C.int(dev.Value), &e)
	if p == nil {
		return nil, fmt.Errorf("capture a CUDA graph on %v: %v", dev, cErr(e))
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("capture a CUDA graph on %v: %v", dev, r)
			}
		}()
		run()
	}()
	if C.memo_graph_capture_end(p, &e) != 0 && err == nil {
		err = fmt.Errorf("capture a CUDA graph on %v: %v", dev, cErr(e))
	}
	if err != nil {
		C.memo_graph_free(p)
		return nil, err
	}
	return &Graph{p: p}, nil
}

// Replay queues the captured kernels on the current stream.
func (g *Graph) Replay() error {
	var e *C.char
	if C.memo_graph_replay(g.p, &e) != 0 {
		return fmt.Errorf("replay a CUDA graph: %v", cErr(e))
	}
	return nil
}

// Free releases the graph and its memory pool.
func (g *Graph) Free() {
	if g.p != nil {
		C.memo_graph_free(g.p)
		g.p = nil
	}
}
