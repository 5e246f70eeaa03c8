package engine

import (
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch/ts"
)

// joins keeps, for the passes of one cache, each layer's separately
// stored weights concatenated for one product each (model.Joins): made on
// a layer's first use with GPT.JoinLayer, freed with the cache. That is
// about one more copy of the blocks' weights for the cache's life (2.5 GB
// beside a 1.1B Llama's 4.4 GB in float32), which a model built for
// inference does not need: its weights are stored joined (NewForInference)
// and the pass never asks.
type joins struct {
	g      *model.GPT
	layers []model.Joined
}

// Layer is layer li's joined weights, made on first use.
func (j *joins) Layer(li int) model.Joined {
	if j.layers == nil {
		j.layers = make([]model.Joined, j.g.Config().Layers)
	}
	f := &j.layers[li]
	if f.QKV == nil && f.GateUp == nil {
		*f = j.g.JoinLayer(li)
	}
	return *f
}

// drop frees the joined weights.
func (j *joins) drop() {
	for _, f := range j.layers {
		for _, t := range []*ts.Tensor{f.QKV, f.QKVBias, f.GateUp, f.GateUpBias} {
			if t != nil {
				t.MustDrop()
			}
		}
	}
	j.layers = nil
}
