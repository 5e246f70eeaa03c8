package data

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memo-research/memo/internal/progress"
)

// tokenizeStream chunks and encodes the documents read gives, in parallel
// workers fed through a short queue, and moves each chunk's title, text and
// ids to the spool in input order as the results come in: memory holds the
// documents in flight and the table's fixed-size rows, not the corpus. The
// chunks that do not round-trip come back as rejections (in input order)
// and as rows marked failed. total, when known (> 0), sizes the progress
// bar. It returns the number of documents read.
func tokenizeStream(ctx context.Context, tok *Tokenizer, sp *spool, read func(emit func(rawDoc)) error, total, chunkTokens, minTokens int, times *buildTimes) (*docTable, []Rejected, int, error) {
	type result = tokenized
	type job struct {
		i int
		d rawDoc
	}
	workers := runtime.GOMAXPROCS(0)
	work := make(chan job, 2*workers)
	// Results are put back in input order as they come in: pending holds
	// only those that finished ahead of an earlier one (a few, with the
	// queue this short), not one entry per document of the corpus.
	var (
		mu       sync.Mutex
		pending  = map[int]result{}
		next     int
		tab      = newDocTable(sp)
		rej      []Rejected
		firstErr error
		wg       sync.WaitGroup
	)
	// Documents, tokens and MB/s of text, on a terminal or every 30 s.
	bar := progress.New("data: tokenize documents", total)
	start := time.Now()
	var done, tokens, bytes atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := tok.forWorker()
			for j := range work {
				r := tokenizeOne(w.Encode, w, j.d, chunkTokens, minTokens, times)
				n := 0
				for _, c := range r.cands {
					if !c.failed {
						n += len(c.ids)
					}
				}
				mu.Lock()
				pending[j.i] = r
				t0 := time.Now()
				for r, ok := pending[next]; ok; r, ok = pending[next] {
					delete(pending, next)
					if r.err != nil && firstErr == nil {
						firstErr = r.err
					}
					for k, c := range r.cands {
						if err := tab.add(c, k == 0, c.failed); err != nil && firstErr == nil {
							firstErr = err
						}
					}
					rej = append(rej, r.rej...)
					next++
				}
				since(&times.spool, t0)
				mu.Unlock()
				tokens.Add(int64(n))
				times.bytes.Add(int64(len(j.d.Text)))
				mb := float64(bytes.Add(int64(len(j.d.Text)))) / (1 << 20)
				bar.Update(int(done.Add(1)), fmt.Sprintf("%d tokens, %.1f MB/s", tokens.Load(), mb/max(time.Since(start).Seconds(), 1e-9)))
			}
		}()
	}
	n := 0
	last := time.Now() // the reader's time runs from one document's hand-over to the next
	readErr := read(func(d rawDoc) {
		if ctx.Err() != nil {
			return // cancelled: the rest is skipped, the error returned below
		}
		since(&times.read, last)
		work <- job{n, d}
		last = time.Now()
		n++
	})
	since(&times.read, last)
	close(work)
	wg.Wait()
	bar.Done()
	if readErr != nil {
		return nil, nil, 0, readErr
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, 0, err
	}
	if err := sp.flush(); err != nil {
		return nil, nil, 0, err
	}
	if firstErr != nil {
		return nil, nil, 0, firstErr
	}
	return tab, rej, n, nil
}
