package train

import (
	"fmt"

	"github.com/memo-research/memo/model"
)

// stageUnits groups the indices of params by the stage of the forward pass
// that reads them (model.Pass; each parameter's Param.Layer): unit 0 the
// embedding stage, unit 1+i block i, the last unit the head stage, for a
// model of layers blocks. These are what train.shard = "full" gathers one
// at a time. Every parameter is in one unit, and a unit's parameters must
// be consecutive in Params — a unit is read as one flat vector — which the
// model's layout keeps and this checks.
func stageUnits(params []model.Param, layers int) ([][]int, error) {
	out := make([][]int, layers+2)
	for i, p := range params {
		u := 1 + p.Layer
		switch {
		case p.Layer == model.BeforeBlocks:
			u = 0
		case p.Layer == model.AfterBlocks:
			u = layers + 1
		case p.Layer < 0 || p.Layer >= layers:
			return nil, fmt.Errorf("train.shard = full: parameter %s in layer %d of %d", p.Name, p.Layer, layers)
		}
		if idx := out[u]; len(idx) > 0 && idx[len(idx)-1] != i-1 {
			return nil, fmt.Errorf("train.shard = full: parameter %s is apart from the rest of its stage's", p.Name)
		}
		out[u] = append(out[u], i)
	}
	return out, nil
}

// headUnits are the units (of stageUnits) the head stage reads: the last,
// and with a tied head also unit 0, whose embedding is the head's weight.
func headUnits(layers int, untied bool) []int {
	if untied {
		return []int{layers + 1}
	}
	return []int{layers + 1, 0}
}
