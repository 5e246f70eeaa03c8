//go:build !cuda

package torchx

// CUDAEvent is a CUDA event; a build without the cuda tag has none.
type CUDAEvent struct{}

// NewCUDAEvent is nil in a build without the cuda tag.
func NewCUDAEvent() *CUDAEvent { return nil }

// Record is false: no event to record.
func (e *CUDAEvent) Record() bool { return false }

// ElapsedMS is -1: CUDA cannot tell.
func (e *CUDAEvent) ElapsedMS(later *CUDAEvent) float64 { return -1 }

// Free does nothing.
func (e *CUDAEvent) Free() {}
