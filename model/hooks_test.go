package model

import (
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
)

// The engine's decoding and gradient norm (package engine, which imports
// model, so this package's own tests cannot), set by engine_test.go, an
// external test file: the tests of how weights are held (join_test.go,
// lora_base_test.go) check greedy tokens and gradient norms through them.
// Likewise package precision's Set, NewForInference and Check, which set
// a model's backend and name its precisions.
var (
	EngineGenerate    func(g *GPT, prompts [][]int32, n int) ([][]int32, error)
	EngineGradNorm    func(g *GPT, windows [][]int32) ([]float64, error)
	SetPrecision      func(g *GPT, p string, training bool) error
	NewForInferenceIn func(p *nn.Path, cfg Config, precision string) (*GPT, error)
	CheckPrecision    func(p string, training bool, dev gotch.Device) error
)
