package train

// Rows of token ids and masks as tensors.

import (
	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// boolTensor makes a [dims] bool tensor of a Go slice on dev (a Go bool is
// one byte holding 0 or 1, libtorch's bool layout).
func boolTensor(b []bool, dims []int64, dev gotch.Device) (*ts.Tensor, error) {
	t, err := torchx.TensorOf(b, dims)
	if err != nil {
		return nil, err
	}
	return toDevice(t, dev), nil
}

// batchTensors turns rows of block+1 ids into inputs [B,block] (padding
// embedded as token 0; its targets are ignored anyway) and targets
// [B,block] (padding kept as PadID), both on dev, plus the target rows for
// the masker.
func batchTensors(rows [][]int32, block int, dev gotch.Device) (inp, tgt *ts.Tensor, targets [][]int32) {
	in := make([]int64, 0, len(rows)*block)
	tg := make([]int64, 0, len(rows)*block)
	targets = make([][]int32, len(rows))
	for i, r := range rows {
		for _, id := range r[:block] {
			in = append(in, int64(max(id, 0)))
		}
		for _, id := range r[1 : block+1] {
			tg = append(tg, int64(id))
		}
		targets[i] = r[1 : block+1]
	}
	shape := []int64{int64(len(rows)), int64(block)}
	inp = toDevice(ts.MustOfSlice(in).MustView(shape, true), dev)
	tgt = toDevice(ts.MustOfSlice(tg).MustView(shape, true), dev)
	return inp, tgt, targets
}
