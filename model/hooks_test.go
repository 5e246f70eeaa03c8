package model

// The engine's decoding and gradient norm (package engine, which imports
// model, so this package's own tests cannot), set by engine_test.go, an
// external test file: the tests of how weights are held (join_test.go,
// precision_test.go) check greedy tokens and gradient norms through them.
var (
	EngineGenerate func(g *GPT, prompts [][]int32, n int) ([][]int32, error)
	EngineGradNorm func(g *GPT, windows [][]int32) ([]float64, error)
)
