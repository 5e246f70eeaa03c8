// Package parallel runs independent pieces of host work on every core.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// For calls a function for each k in [0, n) on up to GOMAXPROCS
// goroutines, each taking the next k not yet taken, and returns when all
// have returned. Each goroutine gets its function from worker, so that it
// can hold buffers of its own. The calls run in no fixed order, so each
// may touch only its own k's state for the result not to depend on it.
// With one goroutine the calls run in order on the caller's.
func For(n int, worker func() func(k int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		if n > 0 {
			f := worker()
			for k := range n {
				f(k)
			}
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add(workers)
	for range workers {
		go func() {
			defer wg.Done()
			f := worker()
			for k := int(next.Add(1)) - 1; k < n; k = int(next.Add(1)) - 1 {
				f(k)
			}
		}()
	}
	wg.Wait()
}
