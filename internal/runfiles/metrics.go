package runfiles

import (
	"errors"
	"os"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/memo-research/memo/internal/arrowsafe"
	"github.com/memo-research/memo/internal/atomicfile"
)

// MetricsFile is the per-step metrics table in the run directory.
const MetricsFile = "metrics.arrow"

// Metric is one optimizer step's row of metrics.arrow. Losses are mean
// cross-entropy in nats; LossDropped is NaN when the mask dropped nothing and
// ValLoss is NaN on steps without validation.
type Metric struct {
	Step        int64
	LossKept    float64
	LossAll     float64
	LossDropped float64
	LR          float64
	GradNorm    float64
	TokensPerS  float64
	ValLoss     float64
	ElapsedS    float64
}

// MetricsSchema is metrics.arrow's schema (Arrow IPC file format).
var MetricsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "step", Type: arrow.PrimitiveTypes.Int64},
	{Name: "loss_kept", Type: arrow.PrimitiveTypes.Float64},
	{Name: "loss_all", Type: arrow.PrimitiveTypes.Float64},
	{Name: "loss_dropped", Type: arrow.PrimitiveTypes.Float64},
	{Name: "lr", Type: arrow.PrimitiveTypes.Float64},
	{Name: "grad_norm", Type: arrow.PrimitiveTypes.Float64},
	{Name: "tokens_per_s", Type: arrow.PrimitiveTypes.Float64},
	{Name: "val_loss", Type: arrow.PrimitiveTypes.Float64},
	{Name: "elapsed_s", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// WriteMetrics rewrites path atomically with rows.
func WriteMetrics(path string, rows []Metric) error {
	b := array.NewRecordBuilder(memory.DefaultAllocator, MetricsSchema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.Step)
		for i, v := range []float64{r.LossKept, r.LossAll, r.LossDropped, r.LR, r.GradNorm, r.TokensPerS, r.ValLoss, r.ElapsedS} {
			b.Field(i + 1).(*array.Float64Builder).Append(v)
		}
	}
	rec := b.NewRecord()
	defer rec.Release()
	return atomicfile.Create(path, func(f *os.File) error {
		w, err := ipc.NewFileWriter(f, ipc.WithSchema(MetricsSchema), ipc.WithAllocator(memory.DefaultAllocator))
		if err != nil {
			return err
		}
		err = w.Write(rec)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		return err
	})
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
// (arrowsafe) first, so that a corrupt file is an error naming it.
func readMetricsFrom(path string, src arrowsafe.Source) ([]Metric, error) {
	var out []Metric
	err := arrowsafe.Read(path, src, MetricsSchema, func(rec arrow.Record) error {
		steps := rec.Column(0).(*array.Int64)
		col := func(j int) *array.Float64 { return rec.Column(j).(*array.Float64) }
		for k := 0; k < int(rec.NumRows()); k++ {
			out = append(out, Metric{
				Step: steps.Value(k), LossKept: col(1).Value(k), LossAll: col(2).Value(k),
				LossDropped: col(3).Value(k), LR: col(4).Value(k), GradNorm: col(5).Value(k),
				TokensPerS: col(6).Value(k), ValLoss: col(7).Value(k), ElapsedS: col(8).Value(k),
			})
		}
		return nil
	})
	return out, err
}
