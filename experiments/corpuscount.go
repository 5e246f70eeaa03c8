package experiments

import (
	"errors"
	"io/fs"
	"log/slog"
	"path/filepath"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/data/tokindex"
	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/atomicfile"
)

// autoIndexTokens: a run's dataset with at most this many training tokens
// is indexed by the eval stage itself when it has no index (a few seconds;
// every shipped experiment's is well under), so that its summary shows
// extraction against measured counts. Larger ones are counted only once
// `memo index build` has indexed them.
const autoIndexTokens = 20_000_000

// IndexedCorpusCounter returns a counter over the training corpus of the
// run in dir when that corpus has an index (memo index build, or the eval
// stage's own), and nil otherwise: it builds none.
func IndexedCorpusCounter(dir string) (*eval.Counter, func(), error) {
	none := func() {}
	ds, err := data.Open(dir)
	if err != nil {
		return nil, none, nil // not a run with data: nothing to count against
	}
	ix, err := tokindex.OpenDataset(ds)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			// Stale or damaged: the counts are an extra, not the job.
			slog.Warn("eval: the corpus index does not open, so no corpus counts; `memo index build` remakes it", "dataset", ds.Dir(), "err", err)
		}
		return nil, none, nil
	}
	return CounterOf(ds, ix), func() { ix.Close() }, nil
}

// corpusCounter returns a counter over the run's training corpus (nil when
// there is none to use) and a function releasing it.
func corpusCounter(dir string) (*eval.Counter, func(), error) {
	none := func() {}
	ds, err := data.Open(dir)
	if err != nil {
		return nil, none, err
	}
	ix, err := tokindex.OpenDataset(ds)
	small := ds.Report().TrainTokens <= autoIndexTokens
	if err == nil && small && ix.Header().MaxWindow < tokindex.DefaultMaxWindow {
		// memo index build --max-window 4 answers no attack's window: a run
		// counted nothing against it, with a warning alone. A small one
		// is rebuilt to answer every window up to the default.
		slog.Info("eval: the corpus index answers shorter windows than the default; rebuilding it", "max_window", ix.Header().MaxWindow, "dataset", ds.Dir())
		ix.Close()
		err = fs.ErrNotExist
	}
	if err != nil {
		if !small {
			if errors.Is(err, fs.ErrNotExist) {
				slog.Info("eval: no index of the training corpus, so no corpus counts; `memo index build` makes one", "dataset", ds.Dir())
				return nil, none, nil
			}
			return nil, none, err
		}
		// Small: (re)build it, replacing a missing, stale or damaged one.
		path := tokindex.PathFor(ds)
		if _, err := tokindex.BuildDataset(ds, path, 0, nil); err != nil {
			if atomicfile.Unwritable(err) {
				slog.Warn("eval: cannot write the corpus index, so no corpus counts", "path", path, "err", err)
				return nil, none, nil
			}
			return nil, none, err
		}
		if ix, err = tokindex.OpenDataset(ds); err != nil {
			return nil, none, err
		}
	}
	return CounterOf(ds, ix), func() { ix.Close() }, nil
}

// CounterOf is ix's counter, naming ds (the dataset it indexes) as the
// corpus counted in.
func CounterOf(ds *data.Dataset, ix *tokindex.Index) *eval.Counter {
	dir, err := filepath.Abs(ds.Dir())
	if err != nil {
		dir = ds.Dir()
	}
	h := ix.Header()
	return &eval.Counter{Count: ix.CountWindow, Corpus: eval.CountedCorpus{Dataset: dir, Tokenizer: h.Tokenizer, Digest: h.Digest}}
}
