//go:build cuda

package torchx

// #include "cudaevent.h"
import "C"

import "unsafe"

// CUDAEvent is a CUDA event with timing on the current device's current
// stream: Record marks the point the GPU reaches in the work queued so
// far, and Elapsed is the GPU's time between two marks.
type CUDAEvent struct{ p unsafe.Pointer }

// NewCUDAEvent makes an event; nil when CUDA cannot (Free a non-nil one).
func NewCUDAEvent() *CUDAEvent {
	p := C.memo_cuda_event_new()
	if p == nil {
		return nil
	}
	return &CUDAEvent{p: p}
}

// Record marks the current stream's position; false when CUDA refused.
func (e *CUDAEvent) Record() bool { return C.memo_cuda_event_record(e.p) == 1 }

// ElapsedMS waits for later and returns the GPU's milliseconds from e to
// later; negative when CUDA cannot tell (an event not recorded).
func (e *CUDAEvent) ElapsedMS(later *CUDAEvent) float64 {
	return float64(C.memo_cuda_event_elapsed_ms(e.p, later.p))
}

// Free releases the event.
func (e *CUDAEvent) Free() { C.memo_cuda_event_free(e.p) }
