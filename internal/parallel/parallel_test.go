package parallel

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// Every k is visited exactly once, whatever the number of goroutines, and
// each goroutine asks worker for its function once.
func TestForVisitsEachOnce(t *testing.T) {
	for _, procs := range []int{1, 2, 7} {
		was := runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, 3, 1000} {
			seen := make([]atomic.Int32, n)
			var workers atomic.Int32
			For(n, func() func(int) {
				workers.Add(1)
				return func(k int) { seen[k].Add(1) }
			})
			for k := range seen {
				if c := seen[k].Load(); c != 1 {
					t.Errorf("GOMAXPROCS %d, n %d: k %d visited %d times", procs, n, k, c)
				}
			}
			if w := int(workers.Load()); w > min(procs, n) || (n > 0 && w == 0) {
				t.Errorf("GOMAXPROCS %d, n %d: %d workers", procs, n, w)
			}
		}
		runtime.GOMAXPROCS(was)
	}
}
