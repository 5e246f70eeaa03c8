package precision

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// The product probe keeps libtorch's error on its own goroutine while
// others call into libtorch beside it, none holding its OS thread: every
// probe of float16 on the CPU (which Debian's libtorch cannot multiply)
// fails, and no other call reads the probe's error as its own. Without
// the probe holding its thread, both go wrong within a second here.
func TestProbeKeepsItsErrorBesideOtherCalls(t *testing.T) {
	if probeProducts(gotch.Half, gotch.CPU) == nil {
		t.Skip("this libtorch multiplies float16 on the CPU: no error to keep")
	}
	var missed, stolen atomic.Int64
	var wg sync.WaitGroup
	// Goroutines that only compute keep the scheduler moving the others
	// between threads, as a loaded machine does.
	stop := make(chan struct{})
	defer close(stop)
	for b := 0; b < 4; b++ {
		go func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				for i := 0; i < 1000; i++ {
					n += i
				}
			}
		}()
	}
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(prober bool) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				if prober {
					if probeProducts(gotch.Half, gotch.CPU) == nil {
						missed.Add(1)
					}
					continue
				}
				x, err := ts.Ones([]int64{2, 8}, gotch.Float, gotch.CPU)
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
		t.Fatalf("%d probes missed their error, %d other calls read it as theirs", missed.Load(), stolen.Load())
	}
}
