package torchx_test

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Bytes must be the slice's own memory in the machine's byte order, and a
// tensor built from it must hold the same values (bool as 0/1 bytes).
func TestBytesAndTensorOf(t *testing.T) {
	f := []float32{1.5, -2, float32(math.Inf(1)), 0}
	fb := torchx.Bytes(f)
	if len(fb) != 16 || binary.NativeEndian.Uint32(fb[4:]) != math.Float32bits(-2) {
		t.Fatalf("torchx.Bytes(%v) = %v", f, fb)
	}
	binary.NativeEndian.PutUint32(fb, math.Float32bits(1))
	if f[0] != 1 {
		t.Fatalf("Bytes is a copy: f[0] = %v after writing 1.0 through it", f[0])
	}
	f[0] = 1.5
	if torchx.Bytes([]int64{}) != nil || torchx.Bytes[bool](nil) != nil {
		t.Fatal("Bytes of an empty slice is not nil")
	}
	if got := torchx.Bytes([]bool{true, false, true}); !slices.Equal(got, []byte{1, 0, 1}) {
		t.Fatalf("torchx.Bytes(bools) = %v, want [1 0 1]", got)
	}

	ft, err := torchx.TensorOf(f, []int64{2, 2})
	if err != nil {
		t.Fatal(err)
	}
	if ft.DType() != gotch.Float || !slices.Equal(ft.MustSize(), []int64{2, 2}) {
		t.Fatalf("torchx.TensorOf(float32s): %v %v", ft.DType(), ft.MustSize())
	}
	got := make([]float32, 4)
	if err := torchx.CopyFloat32(got, ft); err != nil || !slices.Equal(got, f) {
		t.Fatalf("CopyFloat32 = %v, %v; want %v", got, err, f)
	}
	f[1] = 7 // the tensor owns its storage
	if err := torchx.CopyFloat32(got, ft); err != nil || got[1] != -2 {
		t.Fatalf("TensorOf shares the slice's memory: %v", got)
	}

	it, err := torchx.TensorOf([]int64{3, -1, 1 << 40}, []int64{3})
	if err != nil || it.DType() != gotch.Int64 || !slices.Equal(it.Int64Values(), []int64{3, -1, 1 << 40}) {
		t.Fatalf("torchx.TensorOf(int64s) = %v, %v", it.Int64Values(), err)
	}
	dv := []float64{0.1, -math.MaxFloat64, math.SmallestNonzeroFloat64}
	dt, err := torchx.TensorOf(dv, []int64{3, 1})
	if err != nil || dt.DType() != gotch.Double || !slices.Equal(dt.Float64Values(), dv) {
		t.Fatalf("torchx.TensorOf(float64s) = %v, %v; want %v in float64", dt.Float64Values(), err, dv)
	}
	bt, err := torchx.TensorOf([]bool{true, false, true}, []int64{3})
	if err != nil || bt.DType() != gotch.Bool {
		t.Fatalf("torchx.TensorOf(bools): %v", err)
	}
	if sum := bt.MustSum(gotch.Int64, false).Int64Values()[0]; sum != 2 {
		t.Fatalf("bool tensor sums to %d, want 2", sum)
	}
	if _, err := torchx.TensorOf([]float32{1, 2, 3}, []int64{2, 2}); err == nil {
		t.Fatal("TensorOf accepted 3 values for shape [2 2]")
	}
	if et, err := torchx.TensorOf([]float32{}, []int64{0, 3}); err != nil || et.Numel() != 0 || !slices.Equal(et.MustSize(), []int64{0, 3}) {
		t.Fatalf("torchx.TensorOf(no values, [0 3]): %v", err)
	}
	if _, err := torchx.TensorOf([]int64{42}, nil); err == nil {
		t.Fatal("TensorOf made a tensor without a shape")
	}
}

// WithFloat32Storage lends the tensor's storage (writes land in it) and
// only for contiguous float32 CPU tensors; CopyFloat32 checks the length.
func TestFloat32Storage(t *testing.T) {
	x := ts.MustOfSlice([]float32{1, 2, 3, 4, 5, 6}).MustView([]int64{2, 3}, true)
	if err := torchx.WithFloat32Storage(x, func(s []float32) error { s[4] = 50; return nil }); err != nil {
		t.Fatal(err)
	}
	if v := x.Float64Values(); v[4] != 50 {
		t.Fatalf("write through the storage not seen: %v", v)
	}
	cases := []struct {
		name string
		t    *ts.Tensor
		ok   bool
	}{
		{"float32", x, true},
		{"transposed", x.MustT(false), false},
		{"int64", ts.MustOfSlice([]int64{1, 2}), false},
		{"float64", ts.MustOfSlice([]float64{1, 2}), false},
		{"empty", ts.MustZeros([]int64{0}, gotch.Float, gotch.CPU), true},
	}
	for _, c := range cases {
		if got := torchx.HasFloat32Storage(c.t); got != c.ok {
			t.Errorf("%s: HasFloat32Storage = %v, want %v", c.name, got, c.ok)
		}
		dst := make([]float32, c.t.Numel())
		if err := torchx.CopyFloat32(dst, c.t); (err == nil) != c.ok {
			t.Errorf("%s: CopyFloat32 error %v, want ok = %v", c.name, err, c.ok)
		}
	}
	if err := torchx.CopyFloat32(make([]float32, 5), x); err == nil {
		t.Error("CopyFloat32 into 5 values from a tensor of 6 succeeded")
	}
}
