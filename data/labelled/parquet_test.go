package labelled

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
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
	if err := CheckClasses(got); err != nil {
		t.Error(err)
	}
}
