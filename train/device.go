package train

import (
	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// toDevice moves t to dev, dropping the original; a tensor bound for the
// CPU (where every tensor here is made) is returned as it is. A batch goes
// to a GPU without the host waiting for the previous step's work there
// (torchx.ToDevice).
func toDevice(t *ts.Tensor, dev gotch.Device) *ts.Tensor {
	out, err := torchx.ToDevice(t, dev)
	if err != nil {
		panic(err) // libtorch failed to copy a valid tensor, as MustTo would
	}
	return out
}
