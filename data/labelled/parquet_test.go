package labelled

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"github.com/memo-research/memo/internal/badinput"
)

// TestReadParquet: a WikiMIA-style Parquet file (string input, integer
// label) and a MIMIR-style one (member and nonmember strings).
func TestReadParquet(t *testing.T) {
	write := func(name string, fields []arrow.Field, fill func(b *array.RecordBuilder)) string {
		schema := arrow.NewSchema(fields, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		fill(b)
		rec := b.NewRecord()
		defer rec.Release()
		p := filepath.Join(t.TempDir(), name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		w, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	wiki := write("wiki.parquet", []arrow.Field{{Name: "input", Type: arrow.BinaryTypes.String}, {Name: "label", Type: arrow.PrimitiveTypes.Int64}},
		func(b *array.RecordBuilder) {
			b.Field(0).(*array.StringBuilder).AppendValues([]string{"in text", "out text"}, nil)
			b.Field(1).(*array.Int64Builder).AppendValues([]int64{1, 0}, nil)
		})
	got, err := Read(wiki, Fields{})
	if err != nil || len(got) != 2 || !got[0].Member || got[1].Member || got[1].Text != "out text" {
		t.Fatalf("WikiMIA parquet: %+v %v", got, err)
	}
	mimir := write("mimir.parquet", []arrow.Field{{Name: "member", Type: arrow.BinaryTypes.String}, {Name: "nonmember", Type: arrow.BinaryTypes.String}},
		func(b *array.RecordBuilder) {
			b.Field(0).(*array.StringBuilder).AppendValues([]string{"m1", "m2"}, nil)
			b.Field(1).(*array.StringBuilder).AppendValues([]string{"n1", "n2"}, nil)
		})
	got, err = Read(mimir, Fields{})
	if err != nil || len(got) != 4 || got[2].Text != "m2" || !got[2].Member || got[3].Text != "n2" || got[3].Member {
		t.Fatalf("MIMIR parquet: %+v %v", got, err)
	}
	if err := CheckClasses(got, 1); err != nil {
		t.Error(err)
	}
	// Labels of every integer width and float32 read as 1/0 (they were
	// "no label field"); a dictionary-encoded text reads as its string.
	for _, typ := range []arrow.DataType{arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Uint8,
		arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64, arrow.PrimitiveTypes.Float32} {
		p := write(typ.Name()+".parquet", []arrow.Field{{Name: "input", Type: arrow.BinaryTypes.String}, {Name: "label", Type: typ}},
			func(b *array.RecordBuilder) {
				b.Field(0).(*array.StringBuilder).AppendValues([]string{"in", "out"}, nil)
				for _, v := range []int{1, 0} {
					appendNumber(b.Field(1), v)
				}
			})
		got, err := Read(p, Fields{})
		if err != nil || len(got) != 2 || !got[0].Member || got[1].Member {
			t.Errorf("%s labels: %+v %v", typ, got, err)
		}
	}
	// A null label and a label column of a type memo does not read are
	// named as such.
	nulls := write("null.parquet", []arrow.Field{{Name: "input", Type: arrow.BinaryTypes.String}, {Name: "label", Type: arrow.PrimitiveTypes.Int64, Nullable: true}},
		func(b *array.RecordBuilder) {
			b.Field(0).(*array.StringBuilder).AppendValues([]string{"in", "out"}, nil)
			b.Field(1).(*array.Int64Builder).AppendValues([]int64{1, 0}, []bool{true, false})
		})
	if _, err := Read(nulls, Fields{}); err == nil || !strings.Contains(err.Error(), `null.parquet:row 2: field "label": null is not`) {
		t.Errorf("a null label: %v", err)
	}
	dates := write("date.parquet", []arrow.Field{{Name: "input", Type: arrow.BinaryTypes.String}, {Name: "label", Type: arrow.FixedWidthTypes.Date32}},
		func(b *array.RecordBuilder) {
			b.Field(0).(*array.StringBuilder).AppendValues([]string{"in"}, nil)
			b.Field(1).(*array.Date32Builder).Append(1)
		})
	if _, err := Read(dates, Fields{}); err == nil || !strings.Contains(err.Error(), `field "label": a Parquet date32 column is not`) {
		t.Errorf("a date label: %v", err)
	}
	// A file cut short is named first, then why: not "read PATH: ...".
	b, err := os.ReadFile(dates)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(filepath.Dir(dates), "cut.parquet")
	if err := os.WriteFile(cut, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(cut, Fields{}); err == nil || !badinput.Is(err) || !strings.HasPrefix(err.Error(), cut+": not a readable Parquet file") {
		t.Errorf("a cut Parquet file: %v", err)
	}
}

// appendNumber appends v to a numeric builder of any width.
func appendNumber(b array.Builder, v int) {
	switch x := b.(type) {
	case *array.Int8Builder:
		x.Append(int8(v))
	case *array.Int16Builder:
		x.Append(int16(v))
	case *array.Uint8Builder:
		x.Append(uint8(v))
	case *array.Uint32Builder:
		x.Append(uint32(v))
	case *array.Uint64Builder:
		x.Append(uint64(v))
	case *array.Float32Builder:
		x.Append(float32(v))
	}
}
