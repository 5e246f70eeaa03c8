package torchx

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Go slices as tensor data and tensor storage as Go slices, without the
// element-by-element reflection gotch's own copies go through (for a decode
// step's logits or a model's weights that costs more than the arithmetic).
// This is the one place outside the pure-Go file readers that reads memory
// through unsafe.

// Element is a Go type whose memory layout is a libtorch dtype's: bool (one
// byte holding 0 or 1), float32, float64 and int64.
type Element interface {
	bool | float32 | float64 | int64
}

// Bytes is the memory of s as bytes, not a copy; nil when s is empty.
func Bytes[T Element](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}

// DType is T's libtorch dtype.
func DType[T Element]() gotch.DType {
	var zero T
	switch any(zero).(type) {
	case bool:
		return gotch.Bool
	case int64:
		return gotch.Int64
	case float64:
		return gotch.Double
	}
	return gotch.Float
}

// hostTensors counts TensorOf's tensors (HostTensorsMade).
var hostTensors atomic.Int64

// HostTensorsMade is how many tensors TensorOf has made from Go values
// in this process: a test's check that a pass meant for a CUDA graph
// makes none (a graph would replay the copy of the capture's values).
func HostTensorsMade() int64 { return hostTensors.Load() }

// TensorOf copies vals into a new CPU tensor of shape dims and T's dtype.
// The tensor owns its storage (it is not a view of vals).
// One copy, into the new tensor's storage: gotch's OfDataSize copies
// through a C buffer of its own first.
func TensorOf[T Element](vals []T, dims []int64) (*ts.Tensor, error) {
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	if len(dims) == 0 { // gotch's generated calls index a shape's first entry
		return nil, fmt.Errorf("tensor of %d values: no shape given (a 0-dimensional tensor is not made here)", len(vals))
	}
	if n != int64(len(vals)) || n < 0 {
		return nil, fmt.Errorf("tensor of shape %v: %d values given, want %d", dims, len(vals), n)
	}
	t, err := ts.Empty(dims, DType[T](), gotch.CPU)
	if err != nil {
		return nil, err
	}
	hostTensors.Add(1)
	if n > 0 {
		src := Bytes(vals)
		copy(unsafe.Slice((*byte)(t.MustDataPtr()), len(src)), src)
		runtime.KeepAlive(t)
	}
	return t, nil
}

// HasFloat32Storage reports whether t is a contiguous float32 tensor on the
// CPU: one whose storage WithFloat32Storage can lend as a []float32.
func HasFloat32Storage(t *ts.Tensor) bool {
	return t.DType() == gotch.Float && !t.MustDevice().IsCuda() && t.MustIsContiguous()
}

// WithFloat32Storage calls fn with t's storage as a []float32 of
// t.Numel() values, not a copy: what fn writes, t holds (write only where
// no autograd graph uses t). The slice is valid only while fn runs, which
// keeps t alive; fn must not keep it. t must satisfy HasFloat32Storage.
func WithFloat32Storage(t *ts.Tensor, fn func([]float32) error) error {
	if !HasFloat32Storage(t) {
		return fmt.Errorf("tensor of %v on %v (contiguous: %v): want a contiguous float32 tensor on the CPU", t.DType(), t.MustDevice(), t.MustIsContiguous())
	}
	n := int(t.Numel())
	if n == 0 {
		return fn(nil)
	}
	err := fn(unsafe.Slice((*float32)(t.MustDataPtr()), n))
	runtime.KeepAlive(t)
	return err
}

// CopyFloat32 copies the values of t, a tensor satisfying
// HasFloat32Storage, into dst, which must hold exactly t.Numel() values.
func CopyFloat32(dst []float32, t *ts.Tensor) error {
	return WithFloat32Storage(t, func(src []float32) error {
		if len(src) != len(dst) {
			return fmt.Errorf("copy a tensor of %d values into a slice of %d", len(src), len(dst))
		}
		copy(dst, src)
		return nil
	})
}
