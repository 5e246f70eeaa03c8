package extract

import (
	"context"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
)

// BenchmarkDecode measures greedy decoding of 50 tokens after 256-token
// prompts on preset small (context raised to 512 to fit them), with and
// without the KV cache. tokens/s counts generated tokens, prefill included.
//
//	go test ./extract/ -run '^$' -bench Decode -benchtime 3x
func BenchmarkDecode(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Progress lines would interleave with the benchmark's own output.
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer slog.SetDefault(prev)
	torchx.Init(benchThreads(), 1)
	const prefix, suffix, batch = 256, 50, 8
	g := newModel(b, model.Config{Preset: "small", Vocab: 4096, Context: 512, Seed: 1})
	docs := make([]data.Doc, batch)
	for i := range docs {
		ids := make([]int32, prefix+suffix)
		for j := range ids {
			ids[j] = int32((i*7919 + j*104729) % 4096)
		}
		docs[i] = data.Doc{ID: int64(i), IDs: ids}
	}
	cfg := DefaultConfig()
	cfg.Mode, cfg.Prefix, cfg.Suffix, cfg.BatchSize = ModeFixed, prefix, suffix, batch
	prompts := BuildPrompts(cfg, docs, 512)
	for _, bc := range []struct {
		name  string
		cache bool
	}{{"cache", true}, {"nocache", false}} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := generateAll(context.Background(), g, cfg, prompts, bc.cache); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch*suffix)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// benchThreads is libtorch's thread count for benchmarks: $MEMO_BENCH_THREADS, default 1.
func benchThreads() int {
	if n, err := strconv.Atoi(os.Getenv("MEMO_BENCH_THREADS")); err == nil && n > 0 {
		return n
	}
	return 1
}
