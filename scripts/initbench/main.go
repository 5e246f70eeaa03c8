// Command initbench times model.New, the drawing of a fresh model's
// weights that training from scratch and memo bench train start with, on
// TinyLlama-1.1B's shape on the CPU, and prints a checksum of the first
// weights (the embedding's and the first layer's first two), which must
// not change when the drawing gets faster. Usage:
//
//	/usr/bin/time -v go run ./scripts/initbench
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
)

func main() {
	torchx.Init(1, 1)
	cfg := model.Config{Dim: 2048, Layers: 22, Heads: 32, KVHeads: 4, FFN: 5632, Vocab: 32000, Context: 256, Untied: true, Seed: 1}
	t0 := time.Now()
	g, err := model.New(nn.NewVarStore(gotch.CPU).Root(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "initbench:", err)
		os.Exit(1)
	}
	took := time.Since(t0)
	var sum float64
	for _, p := range g.Params()[:3] {
		sum += p.Tensor.MustSum(gotch.Double, false).Float64Values()[0]
	}
	fmt.Printf("model.New, %d parameters: %.2f s; checksum %.9g\n", g.Config().Params(), took.Seconds(), sum)
}
