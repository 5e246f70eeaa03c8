package train

import (
	"testing"

	"github.com/memo-research/memo/model"
)

// BenchmarkTrainStepSmall is `memo bench train` at its defaults: one
// optimizer step of the small preset (vocab 4096, 16×256 tokens, 2 workers).
// Run: go test ./train -run '^$' -bench TrainStep -benchtime 3x
func BenchmarkTrainStepSmall(b *testing.B) {
	res, err := Bench(BenchConfig{Model: model.Config{Preset: "small", Vocab: 4096}, Seq: 256, Batch: 16,
		Steps: b.N, Warmup: 1, Threads: 2, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(res.TokensPerS, "tokens/s")
	b.ReportMetric(res.MFU, "mfu")
	b.ReportMetric(res.PeakGFLOPs, "peak-GFLOP/s")
}
