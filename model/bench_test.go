package model

import (
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"

	"github.com/memo-research/memo/internal/torchx"
)

// BenchmarkForwardSmall times one forward pass of the small preset on 8×256 tokens.
func BenchmarkForwardSmall(b *testing.B) {
	vs := nn.NewVarStore(gotch.CPU)
	g, err := New(vs.Root(), Config{Preset: "small", Vocab: 4096})
	if err != nil {
		b.Fatal(err)
	}
	ids := ts.MustRandint(4096, []int64{8, 256}, gotch.Int64, gotch.CPU)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		torchx.NoGrad(func() { g.Forward(ids).MustDrop() })
		torchx.Collect()
	}
}
