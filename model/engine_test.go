package model_test

import (
	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/precision"
)

func init() {
	model.EngineGenerate = func(g *model.GPT, prompts [][]int32, n int) ([][]int32, error) {
		return engine.Generate(g, prompts, n, engine.GenOptions{UseCache: true})
	}
	model.EngineGradNorm = engine.GradNorm
	model.SetPrecision = precision.Set
	model.NewForInferenceIn = precision.NewForInference
	model.CheckPrecision = precision.Check
}
