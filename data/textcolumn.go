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
	i, err := textField(rec.Schema(), column, path)
	if err != nil {
		return err
	}
	col := rec.Column(i)
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

// textField is the index of schema's string column named column, or the
// error naming the file's columns or the column's type.
func textField(schema *arrow.Schema, column, path string) (int, error) {
	idx := schema.FieldIndices(column)
	if len(idx) == 0 {
		return 0, fmt.Errorf("%s has no column %q (columns: %s)", path, column, columnNames(schema))
	}
	switch t := schema.Field(idx[0]).Type; t.ID() {
	case arrow.STRING, arrow.LARGE_STRING:
		return idx[0], nil
	default:
		return 0, fmt.Errorf("%s column %q is %s, want a string column", path, column, t)
	}
}
