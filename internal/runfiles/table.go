package runfiles

import (
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/memo-research/memo/internal/arrowsafe"
	"github.com/memo-research/memo/internal/lossyutf8"
)

// Table is the codec of a run file whose rows are T: T's struct fields
// are the file's columns, in field order, so that the struct is the one
// place a column is named. A field's tag is
//
//	`arrow:"NAME"`              the column NAME
//	`arrow:"NAME,required"`     a reader refuses a file without it
//	`arrow:"NAME,absent=TEXT"`  a string column read as TEXT when missing
//	`arrow:"NAME,was=OLD"`      read from a column OLD in files written
//	                            before the column was renamed
//	`arrow:"-"`                 not a column
//	`arrow:",columns"`          a map[string]float64 holding a group of
//	                            double columns named when the table is
//	                            built (NewTable's columns), in that order
//
// Go types give the column types: int64 → int64, int and int32 → int32,
// float64 → double, float32 → float, bool → bool, string → utf8,
// []int32 → list<int32>, []float32 → list<float>; columns are not
// nullable. An embedded struct's columns are the embedding struct's. A
// field of type *S (S a struct) holds a group of columns that exists only
// in some files (completions.arrow's approximate-attack columns): it is
// written when any row has it (a nil S writes the missing values) and read
// when the file has all of its columns.
//
// A map[string]float64 field tagged ",columns" holds the columns whose
// names are given to NewTable: eval's membership statistics, which a
// registry names, so that a new one needs no field. A name missing from a
// row's map writes NaN; a column missing from a file is left out of the
// map. There is at most one such field.
//
// A column other than a required one may be missing from a file written
// before it existed: it reads as NaN for floats, the absent text for
// strings, and the zero value otherwise. A null float reads as NaN.
type Table[T any] struct {
	name   string // the file, in error messages
	schema *arrow.Schema
	cols   []column
}

// column is one column of a Table.
type column struct {
	field    arrow.Field
	path     []int // reflect index path from the row to the field
	group    int   // position in path of the *struct field holding it; -1 for none
	required bool
	missing  reflect.Value // what a missing column or a nil group reads and writes as
	key      string        // the map key of a ",columns" column; "" for a field
	was      string        // the column's name in older files; "" for none
}

// index is the position of c's column in schema, under its name or the
// name it had before ("was="); -1 when schema has neither.
func (c *column) index(schema *arrow.Schema) int {
	for _, name := range []string{c.field.Name, c.was} {
		if name == "" {
			continue
		}
		if idx := schema.FieldIndices(name); len(idx) > 0 {
			return idx[0]
		}
	}
	return -1
}

// NewTable is the codec of rows of type T in the file name; columns name
// the columns of T's ",columns" field, if it has one. A field it cannot
// map is a programming error: it panics, at package initialisation where
// the tables are declared (or where a table with columns is first built).
func NewTable[T any](name string, columns ...string) *Table[T] {
	t := &Table[T]{name: name}
	t.addFields(reflect.TypeFor[T](), nil, -1, columns)
	if len(columns) > 0 && !slices.ContainsFunc(t.cols, func(c column) bool { return c.key != "" }) {
		panic(fmt.Sprintf("runfiles: %s: columns %q but no field tagged \",columns\"", name, columns))
	}
	fields := make([]arrow.Field, len(t.cols))
	seen := map[string]bool{}
	for i, c := range t.cols {
		if seen[c.field.Name] {
			panic(fmt.Sprintf("runfiles: %s: column %q twice", name, c.field.Name))
		}
		seen[c.field.Name] = true
		fields[i] = c.field
	}
	// A column's old name read in place of another column would read the
	// wrong values from a new file, silently.
	for _, c := range t.cols {
		if c.was != "" && (seen[c.was] || c.was == c.field.Name) {
			panic(fmt.Sprintf("runfiles: %s: column %q was %q, the name of a column", name, c.field.Name, c.was))
		}
	}
	t.schema = arrow.NewSchema(fields, nil)
	return t
}

func (t *Table[T]) addFields(typ reflect.Type, path []int, group int, columns []string) {
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		tag, tagged := f.Tag.Lookup("arrow")
		embedded := !tagged && f.Anonymous && f.Type.Kind() == reflect.Struct
		if tag == "-" || (!f.IsExported() && !embedded) {
			continue
		}
		p := append(append([]int(nil), path...), i)
		switch {
		case embedded:
			t.addFields(f.Type, p, group, columns)
			continue
		case !tagged && f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct && group < 0:
			t.addFields(f.Type.Elem(), p, len(p)-1, columns)
			continue
		case !tagged:
			panic(fmt.Sprintf("runfiles: %s: field %s has no arrow tag", t.name, f.Name))
		case tag == ",columns":
			if f.Type != reflect.TypeFor[map[string]float64]() || group >= 0 {
				panic(fmt.Sprintf("runfiles: %s: field %s (%s): columns must be a map[string]float64", t.name, f.Name, f.Type))
			}
			if slices.ContainsFunc(t.cols, func(c column) bool { return c.key != "" }) {
				panic(fmt.Sprintf("runfiles: %s: field %s: a second columns field", t.name, f.Name))
			}
			for _, name := range columns {
				if name == "" {
					panic(fmt.Sprintf("runfiles: %s: field %s: a column with no name", t.name, f.Name))
				}
				t.cols = append(t.cols, column{path: p, group: -1, key: name, missing: reflect.ValueOf(math.NaN()),
					field: arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Float64}})
			}
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		c := column{path: p, group: group, missing: reflect.New(f.Type).Elem()}
		c.field = arrow.Field{Name: name, Type: arrowType(f.Type)}
		if c.field.Type == nil || name == "" {
			panic(fmt.Sprintf("runfiles: %s: field %s (%s) cannot be column %q", t.name, f.Name, f.Type, name))
		}
		if f.Type.Kind() == reflect.Float64 || f.Type.Kind() == reflect.Float32 {
			c.missing.SetFloat(math.NaN())
		}
		for _, o := range strings.Split(opts, ",") {
			switch text, isAbsent := strings.CutPrefix(o, "absent="); {
			case o == "":
			case o == "required":
				c.required = true
			case isAbsent && f.Type.Kind() == reflect.String:
				c.missing.SetString(text)
			case strings.HasPrefix(o, "was=") && len(o) > len("was="):
				c.was = strings.TrimPrefix(o, "was=")
			default:
				panic(fmt.Sprintf("runfiles: %s: field %s: unknown tag option %q", t.name, f.Name, o))
			}
		}
		t.cols = append(t.cols, c)
	}
}

// arrowType is the column type of a Go type; nil for none.
func arrowType(t reflect.Type) arrow.DataType {
	switch t.Kind() {
	case reflect.Int64:
		return arrow.PrimitiveTypes.Int64
	case reflect.Int, reflect.Int32:
		return arrow.PrimitiveTypes.Int32
	case reflect.Float64:
		return arrow.PrimitiveTypes.Float64
	case reflect.Float32:
		return arrow.PrimitiveTypes.Float32
	case reflect.Bool:
		return arrow.FixedWidthTypes.Boolean
	case reflect.String:
		return arrow.BinaryTypes.String
	case reflect.Slice:
		switch t.Elem().Kind() {
		case reflect.Int32:
			return arrow.ListOf(arrow.PrimitiveTypes.Int32)
		case reflect.Float32:
			return arrow.ListOf(arrow.PrimitiveTypes.Float32)
		}
	}
	return nil
}

// Schema is the file's full schema: every column, in field order.
func (t *Table[T]) Schema() *arrow.Schema { return t.schema }

// schemaOf is the schema rows are written with: every column, less the
// groups no row has; meta becomes the schema's metadata.
func (t *Table[T]) schemaOf(rows []T, meta map[string]string) *arrow.Schema {
	var fields []arrow.Field
	has := map[int]bool{}
	for _, c := range t.cols {
		if _, seen := has[c.group]; c.group >= 0 && !seen {
			has[c.group] = false
			for i := range rows {
				if !reflect.ValueOf(&rows[i]).Elem().FieldByIndex(c.path[:c.group+1]).IsNil() {
					has[c.group] = true
					break
				}
			}
		}
		if c.group < 0 || has[c.group] {
			fields = append(fields, c.field)
		}
	}
	var md *arrow.Metadata
	if len(meta) > 0 {
		m := arrow.MetadataFrom(meta)
		md = &m
	}
	return arrow.NewSchema(fields, md)
}

// writers are the columns of schema, in its order; schema may name any of
// the table's columns in any order (tests write files as older memo did).
func (t *Table[T]) writers(schema *arrow.Schema) ([]*column, error) {
	out := make([]*column, schema.NumFields())
	for i, f := range schema.Fields() {
		c := t.column(f.Name)
		if c == nil || !arrow.TypeEqual(c.field.Type, f.Type) {
			return nil, fmt.Errorf("column %q %s is not one of %s's", f.Name, f.Type, t.name)
		}
		out[i] = c
	}
	return out, nil
}

func (t *Table[T]) column(name string) *column {
	for i := range t.cols {
		if t.cols[i].field.Name == name {
			return &t.cols[i]
		}
	}
	return nil
}

// appendRows appends rows (a slice of T) to b, a column at a time: each
// column of cols fills its builder, b's field of the same index.
func appendRows(b *array.RecordBuilder, cols []*column, rows reflect.Value) {
	n := rows.Len()
	for j, c := range cols {
		value := func(i int) reflect.Value {
			row := rows.Index(i)
			if c.key != "" {
				if v := row.FieldByIndex(c.path).MapIndex(reflect.ValueOf(c.key)); v.IsValid() {
					return v
				}
				return c.missing
			}
			if len(c.path) == 1 {
				return row.Field(c.path[0])
			}
			if c.group >= 0 && row.FieldByIndex(c.path[:c.group+1]).IsNil() {
				return c.missing
			}
			return row.FieldByIndex(c.path)
		}
		switch fb := b.Field(j).(type) {
		case *array.Int64Builder:
			for i := 0; i < n; i++ {
				fb.Append(value(i).Int())
			}
		case *array.Int32Builder:
			for i := 0; i < n; i++ {
				fb.Append(int32(value(i).Int()))
			}
		case *array.Float64Builder:
			for i := 0; i < n; i++ {
				fb.Append(value(i).Float())
			}
		case *array.Float32Builder:
			for i := 0; i < n; i++ {
				fb.Append(float32(value(i).Float()))
			}
		case *array.BooleanBuilder:
			for i := 0; i < n; i++ {
				fb.Append(value(i).Bool())
			}
		case *array.StringBuilder:
			// Arrow's utf8 type holds valid UTF-8 only, and readers that
			// check it (polars, pandas) refuse the whole file otherwise.
			// A byte-level decode of a token slice can end inside a
			// character; its stray bytes become U+FFFD, one per maximal
			// ill-formed subsequence, as Hugging Face's decode writes them
			// (strings.ToValidUTF8 wrote one for a whole run). The token
			// ids beside the text keep the exact bytes, and RougeL's words
			// are the same either way.
			for i := 0; i < n; i++ {
				fb.Append(lossyutf8.String([]byte(value(i).String())))
			}
		case *array.ListBuilder:
			switch vb := fb.ValueBuilder().(type) {
			case *array.Int32Builder:
				for i := 0; i < n; i++ {
					fb.Append(true)
					vb.AppendValues(value(i).Interface().([]int32), nil)
				}
			case *array.Float32Builder:
				for i := 0; i < n; i++ {
					fb.Append(true)
					vb.AppendValues(value(i).Interface().([]float32), nil)
				}
			}
		}
	}
}

// WriteIPC writes rows to the Arrow IPC file path atomically, batch rows
// per record batch, with every column but the groups no row has; meta
// goes into the schema's metadata.
func (t *Table[T]) WriteIPC(path string, rows []T, batch int, meta map[string]string) error {
	return t.WriteIPCAs(path, t.schemaOf(rows, meta), rows, batch)
}

// WriteIPCAs is WriteIPC with the columns of schema, any of the table's
// in any order: tests write files as memo did before some columns existed.
func (t *Table[T]) WriteIPCAs(path string, schema *arrow.Schema, rows []T, batch int) error {
	cols, err := t.writers(schema)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return arrowsafe.WriteBatches(path, schema, len(rows), batch, func(b *array.RecordBuilder, start, end int) {
		appendRows(b, cols, reflect.ValueOf(rows[start:end]))
	})
}

// WriteParquet writes the rows as one Parquet file with one row group
// per group of rows (each split at 64k rows), to w.
func (t *Table[T]) WriteParquet(w io.Writer, groups ...[]T) error {
	cols, err := t.writers(t.schema)
	if err != nil {
		return err
	}
	recs := make([]arrow.Record, len(groups))
	for g, rows := range groups {
		b := array.NewRecordBuilder(memory.DefaultAllocator, t.schema)
		appendRows(b, cols, reflect.ValueOf(rows))
		recs[g] = b.NewRecord()
		b.Release()
		defer recs[g].Release()
	}
	return writeParquet(w, t.schema, recs...)
}

// Check says which of schema's columns a reader would miss: an error
// naming the first required column it lacks, or one of another type.
func (t *Table[T]) Check(schema *arrow.Schema) error {
	for _, c := range t.cols {
		idx := c.index(schema)
		switch {
		case idx < 0 && c.required && c.was != "":
			return fmt.Errorf("no column %q (nor %q, its name before)", c.field.Name, c.was)
		case idx < 0 && c.required:
			return fmt.Errorf("no column %q", c.field.Name)
		case idx >= 0 && !arrow.TypeEqual(schema.Field(idx).Type, c.field.Type):
			return fmt.Errorf("column %q has type %s, want %s", schema.Field(idx).Name, schema.Field(idx).Type, c.field.Type)
		}
	}
	return nil
}

// Rows appends the rows of a validated record (arrowsafe) to dst.
func (t *Table[T]) Rows(dst []T, rec arrow.Record) ([]T, error) {
	if err := t.Check(rec.Schema()); err != nil {
		return dst, err
	}
	start, n := len(dst), int(rec.NumRows())
	dst = append(dst, make([]T, n)...)
	rows := reflect.ValueOf(dst[start:])
	// A group is read when the record has all of its columns.
	groups := map[int]bool{}
	for _, c := range t.cols {
		if c.group >= 0 {
			ok, seen := groups[c.group]
			groups[c.group] = (ok || !seen) && c.index(rec.Schema()) >= 0
		}
	}
	for _, c := range t.cols {
		if c.group >= 0 && !groups[c.group] {
			continue
		}
		var col arrow.Array
		if idx := c.index(rec.Schema()); idx >= 0 {
			col = rec.Column(idx)
		}
		if c.key != "" {
			if col == nil {
				continue // left out of the map
			}
			v := reflect.New(c.missing.Type()).Elem()
			for i := 0; i < n; i++ {
				m := rows.Index(i).FieldByIndex(c.path)
				if m.IsNil() {
					m.Set(reflect.MakeMap(m.Type()))
				}
				setValue(v, col, i, c.missing)
				m.SetMapIndex(reflect.ValueOf(c.key), v)
			}
			continue
		}
		for i := 0; i < n; i++ {
			row := rows.Index(i)
			if c.group >= 0 {
				if p := row.FieldByIndex(c.path[:c.group+1]); p.IsNil() {
					p.Set(reflect.New(p.Type().Elem()))
				}
			}
			setValue(row.FieldByIndex(c.path), col, i, c.missing)
		}
	}
	return dst, nil
}

// setValue sets dst to row i of col, a column of dst's type (Check), or to
// missing when col is nil.
func setValue(dst reflect.Value, col arrow.Array, i int, missing reflect.Value) {
	switch a := col.(type) {
	case nil:
		dst.Set(missing)
	case *array.Int64:
		dst.SetInt(a.Value(i))
	case *array.Int32:
		dst.SetInt(int64(a.Value(i)))
	case *array.Float64:
		dst.SetFloat(a.Value(i))
		if a.IsNull(i) {
			dst.SetFloat(math.NaN())
		}
	case *array.Float32:
		dst.SetFloat(float64(a.Value(i)))
		if a.IsNull(i) {
			dst.SetFloat(math.NaN())
		}
	case *array.Boolean:
		dst.SetBool(a.Value(i))
	case *array.String:
		dst.SetString(a.Value(i))
	case *array.List:
		lo, hi := a.ValueOffsets(i)
		switch vals := a.ListValues().(type) {
		case *array.Int32:
			dst.Set(reflect.ValueOf(append([]int32{}, vals.Int32Values()[lo:hi]...)))
		case *array.Float32:
			dst.Set(reflect.ValueOf(append([]float32{}, vals.Float32Values()[lo:hi]...)))
		}
	}
}

// ReadIPC reads every row of the Arrow IPC file in src (path names it in
// errors), and its schema metadata; every batch is validated (arrowsafe)
// before a value is read, so a corrupt file is an error, never a panic.
func (t *Table[T]) ReadIPC(path string, src arrowsafe.Source) ([]T, map[string]string, error) {
	r, meta, err := t.openIPC(path, src)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	var out []T
	for b := 0; b < r.NumRecords(); b++ {
		rec, err := r.Record(b)
		if err != nil {
			return nil, nil, err
		}
		if out, err = t.Rows(out, rec); err != nil {
			return nil, nil, fmt.Errorf("read %s: record batch %d: %w", path, b, err)
		}
	}
	return out, meta, nil
}

// ReadIPCMeta reads the schema metadata of the Arrow IPC file at path,
// checked against the table, and no row.
func (t *Table[T]) ReadIPCMeta(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, meta, err := t.openIPC(path, f)
	if err != nil {
		return nil, err
	}
	r.Close()
	return meta, nil
}

// openIPC opens an Arrow IPC file of the table and reads its schema's
// metadata.
func (t *Table[T]) openIPC(path string, src arrowsafe.Source) (*arrowsafe.FileReader, map[string]string, error) {
	r, err := arrowsafe.NewFileReader(path, src, nil, 1)
	if err != nil {
		return nil, nil, err
	}
	if err := t.Check(r.Schema()); err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	meta := map[string]string{}
	md := r.Schema().Metadata()
	for i, k := range md.Keys() {
		meta[k] = md.Values()[i]
	}
	return r, meta, nil
}

// ReadParquet reads every row of the Parquet file at path, validated
// (arrowsafe) before a value is read.
func (t *Table[T]) ReadParquet(path string) ([]T, error) {
	tbl, err := arrowsafe.ReadParquetFile(path, 64)
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	if err := t.Check(tbl.Schema()); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var out []T
	err = arrowsafe.TableRecords(path, tbl, 1<<16, func(rec arrow.Record) error {
		var err error
		out, err = t.Rows(out, rec)
		return err
	})
	return out, err
}
