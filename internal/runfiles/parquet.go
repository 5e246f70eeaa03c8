package runfiles

import (
	"io"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/compress"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// ScoresSchema is the schema of scores.parquet, one row per document.
// Undefined values (no reference model, a document too short to attack)
// are NaN, first_divergence is -1 for a document not attacked. mink_pp,
// p_extract (natural log; −Inf when the decoding cannot produce the
// suffix), recall and grad_norm are extract's columns, copied.
var ScoresSchema = arrow.NewSchema([]arrow.Field{
	{Name: "doc_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "split", Type: arrow.BinaryTypes.String},
	{Name: "title", Type: arrow.BinaryTypes.String},
	{Name: "status", Type: arrow.BinaryTypes.String},
	{Name: "repetitions", Type: arrow.PrimitiveTypes.Int32},
	{Name: "n_tokens", Type: arrow.PrimitiveTypes.Int32},
	{Name: "prefix_len", Type: arrow.PrimitiveTypes.Int32},
	{Name: "suffix_len", Type: arrow.PrimitiveTypes.Int32},
	{Name: "exact_match", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "token_accuracy", Type: arrow.PrimitiveTypes.Float64},
	{Name: "first_divergence", Type: arrow.PrimitiveTypes.Int32},
	{Name: "rougeL", Type: arrow.PrimitiveTypes.Float64},
	{Name: "rougeL_precision", Type: arrow.PrimitiveTypes.Float64},
	{Name: "rougeL_recall", Type: arrow.PrimitiveTypes.Float64},
	{Name: "rouge1", Type: arrow.PrimitiveTypes.Float64},
	{Name: "rouge2", Type: arrow.PrimitiveTypes.Float64},
	{Name: "loss", Type: arrow.PrimitiveTypes.Float64},
	{Name: "zlib_len", Type: arrow.PrimitiveTypes.Int32},
	{Name: "zlib_ratio", Type: arrow.PrimitiveTypes.Float64},
	{Name: "mink", Type: arrow.PrimitiveTypes.Float64},
	{Name: "ref_loss", Type: arrow.PrimitiveTypes.Float64},
	{Name: "ref_diff", Type: arrow.PrimitiveTypes.Float64},
	{Name: "mink_pp", Type: arrow.PrimitiveTypes.Float64},
	{Name: "p_extract", Type: arrow.PrimitiveTypes.Float64},
	{Name: "recall", Type: arrow.PrimitiveTypes.Float64},
	{Name: "grad_norm", Type: arrow.PrimitiveTypes.Float64},
	{Name: "any_exact_match", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "best_rougeL", Type: arrow.PrimitiveTypes.Float64},
	{Name: "n_guesses", Type: arrow.PrimitiveTypes.Int32},
}, nil)

// GuessScoresSchema is the schema of guess_scores.parquet: eval's score
// of each row of guesses.arrow.
var GuessScoresSchema = arrow.NewSchema([]arrow.Field{
	{Name: "doc_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "split", Type: arrow.BinaryTypes.String},
	{Name: "rank", Type: arrow.PrimitiveTypes.Int32},
	{Name: "sample", Type: arrow.PrimitiveTypes.Int32},
	{Name: "seq_logprob", Type: arrow.PrimitiveTypes.Float64},
	{Name: "exact_match", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "rougeL", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// MemorizationSchema is the schema of memorization.parquet, memorization
// over training (extract.checkpoints): one row group per checkpoint step,
// one row per split (members, controls) in it. Every value is copied from
// that checkpoint's summary.json, none recomputed: n, the extraction rates
// and their bootstrap 95 % intervals (_lo, _hi), the mean loss; the
// any-of-N exact match of extract.samples > 1 (NaN with one guess); and
// the step's membership inference, members against controls (the same on
// both rows of a step).
var MemorizationSchema = arrow.NewSchema([]arrow.Field{
	{Name: "step", Type: arrow.PrimitiveTypes.Int64},
	{Name: "split", Type: arrow.BinaryTypes.String},
	{Name: "checkpoint", Type: arrow.BinaryTypes.String},
	{Name: "n", Type: arrow.PrimitiveTypes.Int32},
	{Name: "exact_match", Type: arrow.PrimitiveTypes.Float64},
	{Name: "exact_match_lo", Type: arrow.PrimitiveTypes.Float64},
	{Name: "exact_match_hi", Type: arrow.PrimitiveTypes.Float64},
	{Name: "token_accuracy", Type: arrow.PrimitiveTypes.Float64},
	{Name: "token_accuracy_lo", Type: arrow.PrimitiveTypes.Float64},
	{Name: "token_accuracy_hi", Type: arrow.PrimitiveTypes.Float64},
	{Name: "rougeL", Type: arrow.PrimitiveTypes.Float64},
	{Name: "rougeL_lo", Type: arrow.PrimitiveTypes.Float64},
	{Name: "rougeL_hi", Type: arrow.PrimitiveTypes.Float64},
	{Name: "loss", Type: arrow.PrimitiveTypes.Float64},
	{Name: "any_exact_match", Type: arrow.PrimitiveTypes.Float64},
	{Name: "any_exact_match_lo", Type: arrow.PrimitiveTypes.Float64},
	{Name: "any_exact_match_hi", Type: arrow.PrimitiveTypes.Float64},
	{Name: "loss_auc", Type: arrow.PrimitiveTypes.Float64},
	{Name: "loss_auc_lo", Type: arrow.PrimitiveTypes.Float64},
	{Name: "loss_auc_hi", Type: arrow.PrimitiveTypes.Float64},
	{Name: "zlib_auc", Type: arrow.PrimitiveTypes.Float64},
	{Name: "mink_auc", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// parquetProps are the writer settings of every Parquet file of a run.
func parquetProps() *parquet.WriterProperties {
	return parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(1<<16))
}

// WriteParquet writes records as one Parquet file, one row group per
// record (each split at 64k rows), with the Arrow schema stored so that
// pandas and pyarrow read the types back.
func WriteParquet(w io.Writer, schema *arrow.Schema, recs ...arrow.Record) error {
	// The parquet writer closes a sink that is an io.Closer; the caller owns w.
	fw, err := pqarrow.NewFileWriter(schema, struct{ io.Writer }{w}, parquetProps(), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if err := fw.Write(rec); err != nil {
			fw.Close()
			return err
		}
	}
	return fw.Close()
}
