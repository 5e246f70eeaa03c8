package extract

import (
	"context"

	"github.com/memo-research/memo/internal/progress"
	"github.com/memo-research/memo/internal/torchx"
)

// inBatches is the one loop that runs the model over many token windows:
// it orders them by length (so a batch pads little), cuts the order into
// batches of at most batch windows, and calls run with each batch's
// windows and their indexes into windows. run stores its results by
// index. Between batches it checks ctx, frees what libtorch no longer
// holds and moves the progress bar, which is named label.
func inBatches(ctx context.Context, windows [][]int32, batch int, label string, run func(idx []int, ws [][]int32) error) error {
	order := byLength(len(windows), func(i int) int { return len(windows[i]) })
	bar := progress.New(label, len(windows))
	defer bar.Done()
	for lo := 0; lo < len(order); lo += batch {
		if err := ctx.Err(); err != nil {
			return err
		}
		idx := order[lo:min(lo+batch, len(order))]
		ws := make([][]int32, len(idx))
		for k, i := range idx {
			ws[k] = windows[i]
		}
		if err := run(idx, ws); err != nil {
			return err
		}
		torchx.Collect()
		torchx.ReleaseFreeMemory()
		bar.Update(lo+len(idx), "")
	}
	return nil
}
