package loss

import (
	"fmt"
	"testing"
)

// BenchmarkMask measures mask throughput on 2048-target rows at k=4, h=13.
func BenchmarkMask(b *testing.B) {
	const width = 2048
	rows := make([][]int32, 64)
	for i := range rows {
		rows[i] = randomTokens(uint64(i), width, 0, 50257)
	}
	dropped := make([]bool, width)
	for _, strategy := range Strategies {
		cfg := Config{Strategy: strategy, K: 4, H: 13, Seed: 1, ExemptIDs: []int32{50256}}
		b.Run(fmt.Sprintf("%s/k4/h13", strategy), func(b *testing.B) {
			m := mustNew(b, cfg)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m.Mask(rows[i%len(rows)], dropped)
			}
			b.ReportMetric(float64(b.N)*width/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
