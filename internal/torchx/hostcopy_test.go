package torchx

import (
	"runtime"
	"slices"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// ToDevice keeps a host tensor on the CPU as it is. On a GPU (scripts/gpu
// runs this there) a copy queued without waiting must hold the host's
// values when the work queued after it reads them, the source freed at
// once: a few hundred copies of changing values, each summed on the
// device right after, as a training step's batches and a decoding step's
// ids are; and a tensor over the limit takes the blocking way.
func TestToDevice(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	x := ts.MustOfSlice([]int64{1, 2, 3})
	if y, err := ToDevice(x, gotch.CPU); err != nil || y != x {
		t.Fatalf("ToDevice to the CPU: %v, %v; want the tensor itself", y, err)
	}
	if !gotch.CUDA.IsAvailable() {
		t.Skip("the copies to a GPU need one")
	}
	dev := gotch.CudaBuilder(0)
	for _, off := range []bool{false, true} {
		was := asyncCopyOff
		asyncCopyOff = off
		var sums []*ts.Tensor
		var want []int64
		for i := range 300 {
			vals := make([]int64, 4096)
			var s int64
			for j := range vals {
				vals[j] = int64(i*7 + j%13)
				s += vals[j]
			}
			y, err := ToDevice(ts.MustOfSlice(vals), dev)
			if err != nil {
				t.Fatal(err)
			}
			sums = append(sums, y.MustSum(gotch.Int64, true))
			want = append(want, s)
		}
		var got []int64
		for _, s := range sums {
			got = append(got, s.MustTo(gotch.CPU, true).Int64Values()[0])
		}
		if !slices.Equal(got, want) {
			t.Errorf("MEMO_ASYNC_COPY off %v: the device summed %v…, the host %v…", off, got[:4], want[:4])
		}
		asyncCopyOff = was
	}
	big := ts.MustZeros([]int64{asyncCopyBytes/4 + 1}, gotch.Float, gotch.CPU)
	y, err := ToDevice(big, dev)
	if err != nil || !y.MustDevice().IsCuda() {
		t.Fatalf("a tensor over the limit: %v on %v", err, y.MustDevice())
	}
	y.MustDrop()
}
