package data

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/memo-research/memo/internal/arrowsafe"
)

func init() {
	registerSourceKind(sourceKind{
		name:  "parquet",
		usage: "parquet:FILE[#column]",
		form:  pathField,
		read: func(src Source, _ string, r sourceReader) error {
			return loadParquet(src.Path, src.Field, r.add, r.bad)
		},
		key: oneFileKey,
		check: func(src Source) error {
			schema, err := arrowsafe.ParquetSchema(src.Path)
			if err != nil {
				return fmt.Errorf("%w (is it a Parquet file?)", err)
			}
			_, err = textField(schema, src.Field, src.Path)
			return err
		},
	})
}

// loadParquet reads a string column; titles are "row N". A corrupt file is
// an error naming it (arrowsafe), never a panic.
func loadParquet(path, column string, add func(string, string), bad func(string, string)) error {
	// Parquet pages are compressed: let a buffer be up to 64 times the file.
	tbl, err := arrowsafe.ReadParquetFile(path, 64)
	if err != nil {
		return fmt.Errorf("%w (is it a Parquet file?)", err)
	}
	defer tbl.Release()
	row := 0
	return arrowsafe.TableRecords(path, tbl, 1024, func(rec arrow.Record) error {
		return textColumn(rec, column, path, &row, add, bad)
	})
}
