package train

import (
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// toDevice moves t to dev, dropping the original; a tensor bound for the
// CPU (where every tensor here is made) is returned as it is.
func toDevice(t *ts.Tensor, dev gotch.Device) *ts.Tensor {
	if !dev.IsCuda() {
		return t
	}
	return t.MustTo(dev, true)
}
