package train

import (
	"context"
	"testing"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/data"
)

// lazySource reads a real dataset's epochs row by row, as experiments
// hands it to the trainer.
type lazySource struct{ *data.Dataset }

func (l lazySource) Epoch(block int, seed int64) (Epoch, error) {
	s, err := l.Stream(block, seed)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// TestLazyStreamResumesExactly: on a real dataset whose epoch is 7 steps,
// a 12-step run reading rows lazily (data.Stream) ends with the weights
// and metrics of the run that materializes every epoch (TrainRows), and
// one stopped mid-epoch after 6 steps (last checkpoint at step 4) and
// resumed ends with them too: same rows, same order, across the epoch
// boundary.
func TestLazyStreamResumesExactly(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three small runs")
	}
	dcfg := data.DefaultConfig()
	dcfg.Tokenizer, dcfg.CacheDir = "bpe:300", t.TempDir()
	dcfg.Targets, dcfg.Controls, dcfg.Validation, dcfg.Background = 4, 2, 2, 6
	dcfg.Repetitions, dcfg.ChunkTokens, dcfg.MinTokens, dcfg.DedupWords = 2, 64, 20, 0
	dir := t.TempDir()
	if err := data.Build(context.Background(), dcfg, dir); err != nil {
		t.Fatal(err)
	}
	ds, err := data.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, mcfg, lcfg := smallRun()
	mcfg.Vocab = 300
	s, err := ds.Stream(cfg.Block, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	if per := s.Len() / cfg.BatchSize; per < 7 || per > 11 {
		t.Fatalf("%d rows per epoch: want 7 to 11 steps of %d rows, so that 12 steps cross an epoch and step 6 is inside the first", s.Len(), cfg.BatchSize)
	}
	materialized, whole, broken := t.TempDir(), t.TempDir(), t.TempDir()
	if err := Run(context.Background(), cfg, mcfg, lcfg, ds, materialized, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), cfg, mcfg, lcfg, lazySource{ds}, whole, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), cfg, mcfg, lcfg, lazySource{ds}, broken, Options{StopAfter: 6}); err != nil {
		t.Fatal(err)
	}
	if _, st, _ := checkpoint.LatestGood(broken); st.Step != 4 {
		t.Fatalf("after stopping at step 6 the latest checkpoint is step %d, want 4", st.Step)
	}
	if err := Run(context.Background(), cfg, mcfg, lcfg, lazySource{ds}, broken, Options{}); err != nil {
		t.Fatal(err)
	}
	m := checkpointDigest(t, materialized)
	if w := checkpointDigest(t, whole); w != m {
		t.Errorf("lazy stream ends with other weights than TrainRows: %s vs %s", w[:12], m[:12])
	}
	if b := checkpointDigest(t, broken); b != m {
		t.Errorf("lazy stream resumed mid-epoch ends with other weights: %s vs %s", b[:12], m[:12])
	}
	sameMetrics(t, readMetrics(t, materialized), readMetrics(t, whole))
	sameMetrics(t, readMetrics(t, materialized), readMetrics(t, broken))
}
