package runfiles

import (
	"io"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/compress"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// parquetProps are the writer settings of every Parquet file of a run.
// The schema's root is required: arrow-go v17 writes it as repeated by
// default, which the Parquet format forbids and which stricter readers
// (hyparquet, Impala) refuse (apache/arrow-go#722, fixed after v17).
func parquetProps() *parquet.WriterProperties {
	return parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(1<<16),
		parquet.WithRootRepetition(parquet.Repetitions.Required))
}

// writeParquet writes records as one Parquet file, one row group per
// record (each split at 64k rows), with the Arrow schema stored so that
// pandas and pyarrow read the types back.
func writeParquet(w io.Writer, schema *arrow.Schema, recs ...arrow.Record) error {
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
