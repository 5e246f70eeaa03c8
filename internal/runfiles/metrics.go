package runfiles

import (
	"errors"
	"io"
	"os"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/memo-research/memo/internal/arrowsafe"
)

// Metric is one optimizer step's row of metrics.arrow. Losses are mean
// cross-entropy in nats; LossDropped is NaN when the mask dropped nothing and
// ValLoss is NaN on steps without validation.
type Metric struct {
	Step        int64   `arrow:"step,required"`
	LossKept    float64 `arrow:"loss_kept"`
	LossAll     float64 `arrow:"loss_all"`
	LossDropped float64 `arrow:"loss_dropped"`
	LR          float64 `arrow:"lr"`
	GradNorm    float64 `arrow:"grad_norm"`
	TokensPerS  float64 `arrow:"tokens_per_s"`
	ValLoss     float64 `arrow:"val_loss"`
	ElapsedS    float64 `arrow:"elapsed_s"`
}

// Metrics is metrics.arrow's codec (Arrow IPC file format).
var Metrics = NewTable[Metric](MetricsFile)

// WriteMetrics rewrites path atomically with rows, as one record batch.
func WriteMetrics(path string, rows []Metric) error {
	return Metrics.WriteIPC(path, rows, max(len(rows), 1), nil)
}

// ReadMetrics reads metrics.arrow; a missing file gives no rows.
func ReadMetrics(path string) ([]Metric, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readMetricsFrom(path, f)
}

// readMetricsFrom reads a metrics file from src, each batch validated
// (arrowsafe) first, so that a corrupt file is an error naming it. A file
// in the IPC stream format (another writer's convention) reads too.
func readMetricsFrom(path string, src arrowsafe.Source) ([]Metric, error) {
	rows, _, err := Metrics.ReadIPC(path, src)
	if err == nil {
		return rows, nil
	}
	if _, serr := src.Seek(0, io.SeekStart); serr != nil {
		return nil, err
	}
	var out []Metric
	if serr := arrowsafe.ReadStream(path, src, func(rec arrow.Record) error {
		var err error
		out, err = Metrics.Rows(out, rec)
		return err
	}); serr != nil {
		return nil, err
	}
	return out, nil
}
