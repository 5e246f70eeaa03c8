package torchx

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// TestGotchErrorsStayWithTheirCall runs failing and succeeding gotch calls
// side by side from goroutines that do not hold their threads, with busy
// goroutines keeping the scheduler moving them, as on a loaded machine.
// libtorch records an error in a thread-local slot that gotch reads in a
// second C call; memo's copy of gotch holds the thread across both
// (scripts/gotchgen/patch.go). Without that, a failing call moved between
// the two reads no error and returns an unwritten handle as a tensor (which
// crashes when freed), and a succeeding call on the first thread reads the
// error as its own.
func TestGotchErrorsStayWithTheirCall(t *testing.T) {
	a := ts.MustOnes([]int64{2, 3}, gotch.Float, gotch.CPU)
	b := ts.MustOnes([]int64{4, 5}, gotch.Float, gotch.CPU)
	defer a.MustDrop()
	defer b.MustDrop()
	if _, err := a.Matmul(b, false); err == nil {
		t.Fatal("a 2×3 by 4×5 product succeeded: no error to keep")
	}
	stop := make(chan struct{})
	defer close(stop)
	for range runtime.GOMAXPROCS(0) * 2 {
		go func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				for i := range 1000 {
					n += i
				}
			}
		}()
	}
	var missed, stolen atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func(failing bool) {
			defer wg.Done()
			for range 100 {
				if failing {
					if _, err := a.Matmul(b, false); err == nil {
						missed.Add(1)
					}
					continue
				}
				x, err := a.Add(a, false)
				if err != nil {
					stolen.Add(1)
					continue
				}
				x.MustDrop()
			}
		}(g%2 == 0)
	}
	wg.Wait()
	if missed.Load() != 0 || stolen.Load() != 0 {
		t.Fatalf("%d failing calls missed their error, %d succeeding calls read one as theirs (of 400 each)",
			missed.Load(), stolen.Load())
	}
}
