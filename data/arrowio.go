package data

import (
	"errors"
	"fmt"
	"os"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/memo-research/memo/internal/arrowsafe"
)

// batchRows is the number of documents per record batch: readers hold one
// batch at a time.
const batchRows = 256

// writeArrow writes rows to path atomically, batchRows per record batch;
// fill appends row i to the builder.
func writeArrow(path string, schema *arrow.Schema, n int, fill func(b *array.RecordBuilder, i int)) error {
	return arrowsafe.WriteFile(path, schema, n, batchRows, fill)
}

// scanArrow reads path one record batch at a time, checking the schema
// and validating each batch (arrowsafe) before fn sees it.
func scanArrow(path string, schema *arrow.Schema, fn func(rec arrow.Record) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	return scanArrowFrom(path, f, schema, fn)
}

// scanArrowFrom is scanArrow on an open source (path names it in errors).
func scanArrowFrom(path string, src arrowsafe.Source, schema *arrow.Schema, fn func(rec arrow.Record) error) error {
	r, err := arrowsafe.NewFileReader(path, src, schema, 1)
	if err != nil {
		return fmt.Errorf("%w; rebuild it with `memo data build`", badArrow(err))
	}
	defer r.Close()
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.Record(i)
		if err != nil {
			return fmt.Errorf("%w; rebuild it with `memo data build`", err)
		}
		if err := fn(rec); err != nil {
			return fmt.Errorf("read %s: record batch %d: %w", path, i, err)
		}
	}
	return nil
}

// badArrow words an error of opening an IPC file.
func badArrow(err error) error {
	if errors.Is(err, arrowsafe.ErrCorrupt) {
		return err
	}
	return fmt.Errorf("%w (not a valid Arrow IPC file with the expected schema)", err)
}

// scanArrowHeader opens the IPC footer and checks the schema without reading
// the batches.
func scanArrowHeader(f *os.File, path string, schema *arrow.Schema) error {
	r, err := arrowsafe.NewFileReader(path, f, schema, 1)
	if err != nil {
		return fmt.Errorf("%w; rebuild it with `memo data build`", badArrow(err))
	}
	return r.Close()
}
