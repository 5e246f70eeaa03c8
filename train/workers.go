package train

import (
	"runtime"
	"sync"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
)

// workers run a micro-batch's forward and backward in parallel on several
// OS threads, each with single-threaded libtorch and its own replica of the
// model: on a small CPU this beats libtorch's own threading, whose OpenMP
// and BLAS synchronisation dominates the small products of these models.
// Worker 0's replica is the model itself; the others' gradients are added
// into it in worker order, so the result depends on the worker count only.
type workers struct {
	reps []*model.GPT
	jobs []chan func()
	wg   sync.WaitGroup
}

// newWorkers starts n workers (n >= 1). With n == 1 jobs run on the
// caller's thread with libtorch's threads set to threads (0 = default).
func newWorkers(g *model.GPT, n, threads int, seed int64) *workers {
	w := &workers{reps: []*model.GPT{g}}
	if n <= 1 {
		torchx.Init(threads, uint64(seed))
		return w
	}
	torchx.Init(1, uint64(seed))
	for i := 1; i < n; i++ {
		w.reps = append(w.reps, g.Replica())
	}
	for i := 0; i < n; i++ {
		ch := make(chan func())
		w.jobs = append(w.jobs, ch)
		go func() {
			// Pinned for life: libtorch's grad mode and OpenMP thread
			// count are per OS thread.
			runtime.LockOSThread()
			torchx.Init(1, uint64(seed))
			for job := range ch {
				job()
				w.wg.Done()
			}
		}()
	}
	return w
}

func (w *workers) n() int { return len(w.reps) }

// run calls fn(i, replica i) on every worker and waits for all.
func (w *workers) run(fn func(i int, g *model.GPT)) {
	if len(w.jobs) == 0 {
		fn(0, w.reps[0])
		return
	}
	w.wg.Add(len(w.jobs))
	for i, ch := range w.jobs {
		ch <- func() { fn(i, w.reps[i]) }
	}
	w.wg.Wait()
}

// zeroGrads clears every replica's gradients.
func (w *workers) zeroGrads() {
	for _, r := range w.reps {
		zeroGrads(r.Params())
	}
}

// reduceGrads adds the replicas' gradients into the model's, in order.
func (w *workers) reduceGrads() {
	if len(w.reps) == 1 {
		return
	}
	master := w.reps[0].Params()
	torchx.NoGrad(func() {
		for _, r := range w.reps[1:] {
			addGrads(master, r.Params())
		}
	})
}

// addGrads adds src's gradients into dst's, parameter by parameter, where
// both have one (call it without gradients).
func addGrads(dst, src []model.Param) {
	for i, p := range src {
		g := p.Tensor.MustGrad(false)
		if g.MustDefined() {
			mg := dst[i].Tensor.MustGrad(false)
			if mg.MustDefined() {
				torchx.Add_(mg, g)
			}
			mg.MustDrop()
		}
		g.MustDrop()
	}
}

// stop ends the worker goroutines.
func (w *workers) stop() {
	for _, ch := range w.jobs {
		close(ch)
	}
	w.jobs = nil
}

// split cuts n rows into k contiguous near-equal parts: part i is
// rows [lo(i), lo(i+1)).
func split(n, k, i int) (lo, hi int) { return n * i / k, n * (i + 1) / k }

// runSplit cuts n rows into one contiguous part per worker (at most n
// parts) and calls fn(i, replica i, part i's bounds) on each at once; it
// returns the number of parts.
func (w *workers) runSplit(n int, fn func(i int, g *model.GPT, lo, hi int)) int {
	k := min(w.n(), n)
	w.run(func(i int, g *model.GPT) {
		if i < k {
			lo, hi := split(n, k, i)
			fn(i, g, lo, hi)
		}
	})
	return k
}
