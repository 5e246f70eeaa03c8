package torchx

import (
	"errors"
	"runtime/debug"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Seeding libtorch must make its random draws repeat.
func TestSeedRepeatsDraws(t *testing.T) {
	Init(1, 42)
	a := ts.MustRandn([]int64{4, 4}, gotch.Float, gotch.CPU).Float64Values()
	Seed(42)
	b := ts.MustRandn([]int64{4, 4}, gotch.Float, gotch.CPU).Float64Values()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("draw %d differs after reseeding: %v vs %v", i, a[i], b[i])
		}
	}
	if got := Threads(); got != 1 {
		t.Fatalf("Threads() = %d after Init(1, ...), want 1", got)
	}
}

// WithCollector runs its function with the collector Init paused back at
// its earlier setting, and pauses it again afterwards, error or not.
func TestWithCollector(t *testing.T) {
	Init(1, 1)
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("after Init the collector setting is %d, want -1 (paused)", got)
	}
	want := int(gcPercent.Load())
	if want < 0 {
		t.Fatalf("setting before Init recorded as %d", want)
	}
	inside := 0
	err := WithCollector(func() error {
		inside = debug.SetGCPercent(want) // reads the setting, leaves it as it was
		return errors.New("stage failed")
	})
	if inside != want || err == nil || err.Error() != "stage failed" {
		t.Errorf("inside WithCollector the setting was %d (want %d), error %v (want the function's)", inside, want, err)
	}
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("after WithCollector the setting is %d, want -1 (paused again)", got)
	}
}

func TestCPUKernels(t *testing.T) {
	k := CPUKernels()
	t.Logf("%+v", k)
	if k.CPUCapability == "" || k.BLAS == "" {
		t.Errorf("CPUKernels() = %+v: libtorch's show_config gave no CPU capability or BLAS", k)
	}
	got := parseShowConfig("PyTorch built with:\n  - CPU capability usage: AVX512\n  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, CXX_COMPILER=/opt/rh/gcc, \n")
	if got != (Kernels{CPUCapability: "AVX512", BLAS: "mkl"}) {
		t.Errorf("parseShowConfig: %+v", got)
	}
}

// A parameter emptied and pointed at new data keeps its identity: it is
// still a leaf that requires grad, backward fills its .grad with the new
// data's shape, and writes through the source show in it.
func TestSetDataKeepsLeaf(t *testing.T) {
	p := ts.MustOnes([]int64{2, 3}, gotch.Float, gotch.CPU).MustSetRequiresGrad(true, true)
	defer p.MustDrop()
	if err := ReleaseData([]*ts.Tensor{p}); err != nil {
		t.Fatal(err)
	}
	if n := p.Numel(); n != 0 {
		t.Fatalf("released parameter has %d elements, want 0", n)
	}
	src := ts.MustOfSlice([]float32{1, 2, 3, 4, 5, 6}).MustView([]int64{2, 3}, true)
	defer src.MustDrop()
	if err := SetData([]*ts.Tensor{p}, []*ts.Tensor{src}); err != nil {
		t.Fatal(err)
	}
	if !p.MustRequiresGrad() {
		t.Fatal("parameter lost requires_grad")
	}
	y := p.MustMul(p, false).MustSum(gotch.Float, true)
	if err := y.Backward(); err != nil {
		t.Fatal(err)
	}
	y.MustDrop()
	g := p.MustGrad(false)
	defer g.MustDrop()
	got := g.Float64Values()
	for i, want := range []float64{2, 4, 6, 8, 10, 12} {
		if got[i] != want {
			t.Fatalf("grad %v, want 2x", got)
		}
	}
	NoGrad(func() { MulScalar_(src, 10) })
	if v := p.Float64Values()[5]; v != 60 {
		t.Fatalf("write through the source: parameter reads %v, want 60", v)
	}
	if err := SetData([]*ts.Tensor{p}, nil); err == nil {
		t.Fatal("SetData with no sources: want an error")
	}
}
