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

// BenchmarkGenerateCached times greedy decoding of 50 tokens for 8 prompts.
func BenchmarkGenerateCached(b *testing.B) {
	vs := nn.NewVarStore(gotch.CPU)
	g, err := New(vs.Root(), Config{Preset: "small", Vocab: 4096})
	if err != nil {
		b.Fatal(err)
	}
	prompts := make([][]int32, 8)
	for i := range prompts {
		for j := 0; j < 50+i; j++ {
			prompts[i] = append(prompts[i], int32((i*31+j*7)%4096))
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := g.Generate(prompts, 50, GenOptions{UseCache: true}); err != nil {
			b.Fatal(err)
		}
		torchx.Collect()
	}
}
