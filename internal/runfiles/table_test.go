package runfiles

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/file"

	"github.com/memo-research/memo/internal/arrowsafe"
)

type tableInner struct {
	Hits int32 `arrow:"hits"`
}

type tableExtra struct {
	Score float64 `arrow:"score"`
	Count int     `arrow:"count"`
}

// tableRow exercises every column type, an embedded struct, a group and
// the tag options.
type tableRow struct {
	ID   int64  `arrow:"id,required"`
	Name string `arrow:"name,absent=unnamed"`
	tableInner
	Flag     bool      `arrow:"flag"`
	Value    float64   `arrow:"value"`
	Small    float32   `arrow:"small"`
	IDs      []int32   `arrow:"ids"`
	Losses   []float32 `arrow:"losses"`
	Ignored  string    `arrow:"-"`
	Extra    *tableExtra
	internal int
}

func TestTableSchema(t *testing.T) {
	got := NewTable[tableRow]("rows.arrow").Schema()
	want := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "hits", Type: arrow.PrimitiveTypes.Int32},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64},
		{Name: "small", Type: arrow.PrimitiveTypes.Float32},
		{Name: "ids", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
		{Name: "losses", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32)},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64},
		{Name: "count", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	if !got.Equal(want) {
		t.Errorf("schema\n%s\nwant\n%s", got, want)
	}
}

// A row type the codec cannot map is refused when the table is declared.
func TestTableRefusesBadTags(t *testing.T) {
	for name, build := range map[string]func(){
		"untagged field": func() { NewTable[struct{ A int }]("x") },
		"unknown option": func() {
			NewTable[struct {
				A int `arrow:"a,sometimes"`
			}]("x")
		},
		"unmapped type": func() {
			NewTable[struct {
				A []string `arrow:"a"`
			}]("x")
		},
		"absent on int": func() {
			NewTable[struct {
				A int `arrow:"a,absent=1"`
			}]("x")
		},
		"column twice": func() {
			NewTable[struct {
				A, B int `arrow:"a"`
			}]("x")
		},
		"old name of another column": func() {
			NewTable[struct {
				A int `arrow:"a"`
				B int `arrow:"b,was=a"`
			}]("x")
		},
		"old name its own": func() {
			NewTable[struct {
				A int `arrow:"a,was=a"`
			}]("x")
		},
		"no column name": func() {
			NewTable[struct {
				A int `arrow:",required"`
			}]("x")
		},
		"nested group": func() {
			NewTable[struct {
				G *struct {
					H *struct {
						A int `arrow:"a"`
					}
				}
			}]("x")
		},
		"untagged struct": func() {
			NewTable[struct {
				S struct {
					A int `arrow:"a"`
				}
			}]("x")
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			build()
		}()
	}
}

func TestTableRoundTrip(t *testing.T) {
	tbl := NewTable[tableRow]("rows.arrow")
	rows := []tableRow{
		{ID: 1, Name: "a", tableInner: tableInner{Hits: 3}, Flag: true, Value: 1.5, Small: 0.25, IDs: []int32{1, 2}, Losses: []float32{0.5}, internal: 9},
		{ID: 2, Value: math.Inf(-1), IDs: []int32{}, Extra: &tableExtra{Score: 0.75, Count: 4}},
		{ID: 3, Value: math.NaN()},
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "rows.arrow")
	if err := tbl.WriteIPC(path, rows, 2, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	got, meta, err := readIPC(tbl, path)
	if err != nil {
		t.Fatal(err)
	}
	// The group is written because one row has it; a nil group reads back
	// as its missing values; lists read back empty, never nil; the
	// unexported field is not written, so it reads back zero.
	want := []tableRow{
		{ID: 1, Name: "a", tableInner: tableInner{Hits: 3}, Flag: true, Value: 1.5, Small: 0.25, IDs: []int32{1, 2}, Losses: []float32{0.5}, Extra: &tableExtra{Score: math.NaN()}},
		{ID: 2, Value: math.Inf(-1), IDs: []int32{}, Losses: []float32{}, Extra: &tableExtra{Score: 0.75, Count: 4}},
		{ID: 3, Value: math.NaN(), IDs: []int32{}, Losses: []float32{}, Extra: &tableExtra{Score: math.NaN()}},
	}
	if !sameRows(got, want) || meta["k"] != "v" {
		t.Errorf("read back\n%+v\nwant\n%+v (meta %v)", got, want, meta)
	}

	// Without a row that has the group, the file has none of its columns,
	// and every row reads it as nil.
	for i := range rows {
		rows[i].Extra = nil
	}
	if err := tbl.WriteIPC(path, rows, 2, nil); err != nil {
		t.Fatal(err)
	}
	got, _, err = readIPC(tbl, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got {
		if r.Extra != nil {
			t.Errorf("row %d has a group the file lacks: %+v", r.ID, r.Extra)
		}
	}

	// Parquet: one row group per group of rows.
	back, _ := parquetRoundTrip(t, tbl, want[:1], want[1:])
	if !sameRows(back, want) {
		t.Errorf("parquet read back\n%+v\nwant\n%+v", back, want)
	}
}

// Columns missing from an older file read as their missing values; a
// required one, or one of another type, is an error naming it.
func TestTableMissingColumns(t *testing.T) {
	tbl := NewTable[tableRow]("rows.arrow")
	dir := t.TempDir()
	rows := []tableRow{{ID: 7, Name: "x", Value: 2}}
	older := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	path := filepath.Join(dir, "older.arrow")
	if err := tbl.WriteIPCAs(path, older, rows, 10); err != nil {
		t.Fatal(err)
	}
	got, _, err := readIPC(tbl, path)
	if err != nil {
		t.Fatal(err)
	}
	want := []tableRow{{ID: 7, Name: "unnamed", Value: math.NaN(), Small: float32(math.NaN())}}
	if !sameRows(got, want) {
		t.Errorf("older file read as %+v, want %+v", got, want)
	}

	noID := arrow.NewSchema([]arrow.Field{{Name: "name", Type: arrow.BinaryTypes.String}}, nil)
	if err := tbl.WriteIPCAs(path, noID, rows, 10); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readIPC(tbl, path); err == nil || !strings.Contains(err.Error(), `no column "id"`) || !strings.Contains(err.Error(), path) {
		t.Errorf("a file without the required column: %v", err)
	}

	// Written by hand: value as int32, which the table cannot read as
	// float64.
	other := NewTable[struct {
		ID    int64 `arrow:"id"`
		Value int32 `arrow:"value"`
	}]("other")
	if err := other.WriteIPC(path, make([]struct {
		ID    int64 `arrow:"id"`
		Value int32 `arrow:"value"`
	}, 1), 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readIPC(tbl, path); err == nil || !strings.Contains(err.Error(), `column "value" has type int32`) {
		t.Errorf("a column of another type: %v", err)
	}
	if err := tbl.WriteIPCAs(path, arrow.NewSchema([]arrow.Field{{Name: "nope", Type: arrow.PrimitiveTypes.Int64}}, nil), rows, 1); err == nil {
		t.Error("wrote a column the table does not have")
	}
}

// A null float reads as NaN.
func TestTableNullFloat(t *testing.T) {
	tbl := NewTable[tableRow]("rows.arrow")
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	b.Field(1).(*array.Float64Builder).AppendValues([]float64{4, 5}, []bool{true, false})
	rec := b.NewRecord()
	defer rec.Release()
	got, err := tbl.Rows(nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Value != 4 || !math.IsNaN(got[1].Value) {
		t.Errorf("values %v, %v: want 4 and NaN", got[0].Value, got[1].Value)
	}
}

func readIPC[T any](tbl *Table[T], path string) ([]T, map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return tbl.ReadIPC(path, arrowsafe.Source(f))
}

// sameRows is reflect.DeepEqual with NaN equal to NaN.
func sameRows[T any](a, b []T) bool {
	return reflect.DeepEqual(nanFree(a), nanFree(b))
}

// nanFree replaces every NaN float in a copy of rows by a sentinel.
func nanFree[T any](rows []T) any {
	var fix func(v reflect.Value)
	fix = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Float32, reflect.Float64:
			if math.IsNaN(v.Float()) {
				v.SetFloat(-12345)
			}
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				if v.Field(i).CanSet() {
					fix(v.Field(i))
				}
			}
		case reflect.Pointer:
			if !v.IsNil() {
				c := reflect.New(v.Elem().Type())
				c.Elem().Set(v.Elem())
				fix(c.Elem())
				v.Set(c)
			}
		case reflect.Slice:
			c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			reflect.Copy(c, v)
			for i := 0; i < c.Len(); i++ {
				fix(c.Index(i))
			}
			if !v.IsNil() {
				v.Set(c)
			}
		}
	}
	out := reflect.ValueOf(append([]T(nil), rows...))
	for i := 0; i < out.Len(); i++ {
		fix(out.Index(i))
	}
	return out.Interface()
}

// TestTableValidUTF8: a string cut inside a character (a byte-level
// decode of a token slice) is written as valid UTF-8, stray bytes as
// U+FFFD, one per maximal ill-formed subsequence as Hugging Face's decode
// writes them (two bad bytes in a row are two), in both formats, so that
// readers that check UTF-8 open the file; and a Parquet file's root is
// required, as the format demands.
func TestTableValidUTF8(t *testing.T) {
	tbl := NewTable[tableRow]("rows.arrow")
	rows := []tableRow{{ID: 1, Name: "caf\xc3"}, {ID: 2, Name: "\xe2\x82 ok \xff\xfe"}, {ID: 3, Name: "naïve"}}
	want := []string{"caf\uFFFD", "\uFFFD ok \uFFFD\uFFFD", "naïve"}
	dir := t.TempDir()
	path := filepath.Join(dir, "rows.arrow")
	if err := tbl.WriteIPC(path, rows, 2, nil); err != nil {
		t.Fatal(err)
	}
	got, _, err := readIPC(tbl, path)
	if err != nil {
		t.Fatal(err)
	}
	back, pq := parquetRoundTrip(t, tbl, rows)
	for i := range want {
		if got[i].Name != want[i] || back[i].Name != want[i] {
			t.Errorf("row %d: arrow %q, parquet %q; want %q", i, got[i].Name, back[i].Name, want[i])
		}
	}

	rdr, err := file.OpenParquetFile(pq, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	if rep := rdr.MetaData().Schema.Root().RepetitionType(); rep != parquet.Repetitions.Required {
		t.Errorf("parquet root repetition %v, want required", rep)
	}
}

// parquetRoundTrip writes groups as one Parquet file (a row group each)
// in a temporary directory and reads it back.
func parquetRoundTrip[T any](t *testing.T, tbl *Table[T], groups ...[]T) (back []T, path string) {
	t.Helper()
	var buf bytes.Buffer
	if err := tbl.WriteParquet(&buf, groups...); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "rows.parquet")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := tbl.ReadParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	return back, path
}

// TestRenamedColumn: a column tagged was=OLD is written under its new
// name and read from a file that has it under either.
func TestRenamedColumn(t *testing.T) {
	type now struct {
		ID        int64 `arrow:"id,required"`
		TrainedOn bool  `arrow:"trained_on,required,was=in"`
	}
	type before struct {
		ID int64 `arrow:"id,required"`
		In bool  `arrow:"in,required"`
	}
	tab := NewTable[now]("x.parquet")
	if got := tab.Schema().Field(1).Name; got != "trained_on" {
		t.Fatalf("written as %q, want trained_on", got)
	}
	dir := t.TempDir()
	for name, write := range map[string]func(w io.Writer) error{
		"new.parquet": func(w io.Writer) error { return tab.WriteParquet(w, []now{{1, true}, {2, false}}) },
		"old.parquet": func(w io.Writer) error {
			return NewTable[before]("x.parquet").WriteParquet(w, []before{{1, true}, {2, false}})
		},
	} {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := write(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		rows, err := tab.ReadParquet(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(rows, []now{{1, true}, {2, false}}) {
			t.Errorf("%s: read %+v", name, rows)
		}
	}
}
