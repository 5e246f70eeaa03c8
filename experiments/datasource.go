package experiments

import (
	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/train"
)

// datasetSource hands the trainer a dataset whose epochs it reads a row at
// a time (data.Stream): the rows of TrainRows in the same order, without
// making them all.
type datasetSource struct{ *data.Dataset }

func (d datasetSource) Epoch(block int, seed int64) (train.Epoch, error) {
	s, err := d.Stream(block, seed)
	if err != nil {
		return nil, err
	}
	return s, nil
}
