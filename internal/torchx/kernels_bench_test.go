package torchx_test

import (
	"fmt"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// BenchmarkLinearRows compares the kernel with libtorch's linear on a
// decode step's products (the small preset's q|k|v, gate|up, down and
// LM head at batch 8).
func BenchmarkLinearRows(b *testing.B) {
	torchx.Init(1, 1)
	for _, sh := range [][3]int64{{8, 768, 256}, {8, 1376, 256}, {8, 256, 688}, {8, 4096, 256}} {
		m, n, k := sh[0], sh[1], sh[2]
		x := ts.MustRandn([]int64{m, k}, gotch.Float, gotch.CPU)
		w := ts.MustRandn([]int64{n, k}, gotch.Float, gotch.CPU)
		for _, kernel := range []bool{true, false} {
			b.Run(fmt.Sprintf("%dx%dx%d/kernel=%v", m, n, k, kernel), func(b *testing.B) {
				timeLinear(b, kernel, x, func(int) *ts.Tensor { return w })
				b.ReportMetric(float64(2*m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkLinearRowsCold is BenchmarkLinearRows with the weights out of
// cache: each product reads the next of 64 weight matrices (90 MB).
func BenchmarkLinearRowsCold(b *testing.B) {
	torchx.Init(1, 1)
	m, n, k := int64(8), int64(1376), int64(256)
	x := ts.MustRandn([]int64{m, k}, gotch.Float, gotch.CPU)
	ws := make([]*ts.Tensor, 64)
	for i := range ws {
		ws[i] = ts.MustRandn([]int64{n, k}, gotch.Float, gotch.CPU)
	}
	for _, kernel := range []bool{true, false} {
		b.Run(fmt.Sprintf("kernel=%v", kernel), func(b *testing.B) {
			timeLinear(b, kernel, x, func(i int) *ts.Tensor { return ws[i%len(ws)] })
			b.ReportMetric(float64(n*k*4)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// timeLinear runs b.N products of x by weight(i), by the kernel or by
// libtorch's linear.
func timeLinear(b *testing.B, kernel bool, x *ts.Tensor, weight func(i int) *ts.Tensor) {
	torchx.NoGrad(func() {
		for i := 0; i < b.N; i++ {
			var y *ts.Tensor
			if kernel {
				y, _ = torchx.LinearRows(x, weight(i), nil)
			} else {
				y = ts.MustLinear(x, weight(i), ts.NewTensor())
			}
			y.MustDrop()
		}
	})
}
