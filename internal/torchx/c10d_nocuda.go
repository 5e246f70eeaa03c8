//go:build !cuda

package torchx

import "time"

// NewNCCL needs a CUDA libtorch and the cuda build tag.
func NewNCCL(addr string, port, rank, size int, timeout time.Duration) (*ProcessGroup, error) {
	return nil, errNoNCCL
}
