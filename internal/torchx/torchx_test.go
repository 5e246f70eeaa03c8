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
