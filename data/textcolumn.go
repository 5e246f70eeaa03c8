package data

import (
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// textColumn gives every value of a string column of rec (parquet and
// arrow sources) to add, titled "row N" from *row on; a null is rejected.
func textColumn(rec arrow.Record, column, path string, row *int, add func(string, string), bad func(string, string)) error {
	idx := rec.Schema().FieldIndices(column)
	if len(idx) == 0 {
		return fmt.Errorf("%s has no column %q (columns: %s)", path, column, columnNames(rec.Schema()))
	}
	col := rec.Column(idx[0])
	var get func(i int) string
	switch c := col.(type) {
	case *array.String:
		get = c.Value
	case *array.LargeString:
		get = c.Value
	default:
		return fmt.Errorf("%s column %q is %s, want a string column", path, column, col.DataType())
	}
	for i := 0; i < col.Len(); i++ {
		title := fmt.Sprintf("row %d", *row)
		*row++
		if col.IsNull(i) {
			bad(title, "null text")
			continue
		}
		add(title, get(i))
	}
	return nil
}

func columnNames(s *arrow.Schema) string {
	var n []string
	for _, f := range s.Fields() {
		n = append(n, f.Name)
	}
	return strings.Join(n, ", ")
}
