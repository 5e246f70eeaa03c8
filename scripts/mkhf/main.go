// Command mkhf writes a Hugging Face Llama directory (config.json and one
// model.safetensors) of TinyLlama-1.1B's or Llama-2-7B's shape, or one with
// fewer layers, with random weights in BF16 or F32: a model to measure
// loading and inference memory with on a machine without PyTorch
// (scripts/bench-inference-memory.sh). Matrices are N(0, 0.02) from a fixed
// seed, norm gains 1. Usage:
//
//	go run ./scripts/mkhf [-shape tinyllama|llama2-7b] [-dtype bf16|f32] [-layers N] DIR
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/memo-research/memo/internal/safetensors"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
)

func main() {
	shape := flag.String("shape", "tinyllama", "tinyllama (1,100,048,384 parameters) or llama2-7b (6,738,415,616)")
	dtype := flag.String("dtype", "bf16", "the file's dtype: bf16 (as the hub stores both) or f32")
	layers := flag.Int("layers", 0, "layers, when fewer than the shape's (0: all)")
	flag.Parse()
	cfg, ok := shapes[*shape]
	if flag.NArg() != 1 || !ok || (*dtype != "bf16" && *dtype != "f32") || *layers < 0 {
		fmt.Fprintln(os.Stderr, "usage: mkhf [-shape tinyllama|llama2-7b] [-dtype bf16|f32] [-layers N] DIR")
		os.Exit(2)
	}
	if *layers > 0 {
		cfg.Layers = *layers
	}
	if err := write(flag.Arg(0), cfg, *dtype); err != nil {
		fmt.Fprintln(os.Stderr, "mkhf:", err)
		os.Exit(1)
	}
}

// shapes are the published configurations of TinyLlama-1.1B and Llama-2-7B.
var shapes = map[string]model.Config{
	"tinyllama": {Arch: "llama", Dim: 2048, Layers: 22, Heads: 32, KVHeads: 4, FFN: 5632, Vocab: 32000,
		Context: 2048, Untied: true, RopeTheta: 10000, NormEps: 1e-5},
	"llama2-7b": {Arch: "llama", Dim: 4096, Layers: 32, Heads: 32, KVHeads: 32, FFN: 11008, Vocab: 32000,
		Context: 4096, Untied: true, RopeTheta: 10000, NormEps: 1e-5},
}

func write(out string, cfg model.Config, dtype string) error {
	// Unset weights: only their names and shapes are read, and memory
	// left untouched is never resident.
	g, err := model.NewUninitialized(nn.NewVarStore(gotch.CPU).Root(), cfg)
	if err != nil {
		return err
	}
	st := safetensors.F32
	if dtype == "bf16" {
		st = safetensors.BF16
	}
	params := g.Params()
	desc := make([]safetensors.Tensor, len(params))
	for i, p := range params {
		desc[i] = safetensors.Tensor{Name: p.Name, DType: st, Shape: p.Tensor.MustSize()}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var buf []float32
	err = safetensors.Write(filepath.Join(out, "model.safetensors"), desc, nil, func(i int) ([]float32, error) {
		n := int(params[i].Tensor.Numel())
		if cap(buf) < n {
			buf = make([]float32, n)
		}
		v := buf[:n]
		for j := range v {
			v[j] = 1
			if params[i].Decay {
				v[j] = float32(rng.NormFloat64() * 0.02)
			}
		}
		return v, nil
	})
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(g.Config().HFConfig(), "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "config.json"), b, 0o644); err != nil {
		return err
	}
	fmt.Printf("%s: %d parameters, %s\n", out, g.Config().Params(), dtype)
	return nil
}
