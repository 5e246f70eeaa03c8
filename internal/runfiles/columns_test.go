package runfiles

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
)

// statRow has a group of columns named when the table is built, between
// fixed fields, as eval.Score holds its membership statistics.
type statRow struct {
	ID    int64              `arrow:"id"`
	Stats map[string]float64 `arrow:",columns"`
	Tail  bool               `arrow:"tail"`
}

// The columns field's columns sit where the field is, in the order given.
func TestTableColumnsSchema(t *testing.T) {
	got := NewTable[statRow]("s.parquet", "b", "a").Schema()
	want := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "b", Type: arrow.PrimitiveTypes.Float64},
		{Name: "a", Type: arrow.PrimitiveTypes.Float64},
		{Name: "tail", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	if !got.Equal(want) {
		t.Errorf("schema\n%s\nwant\n%s", got, want)
	}
	if n := NewTable[statRow]("s.parquet").Schema().NumFields(); n != 2 {
		t.Errorf("no column names: %d columns, want 2", n)
	}
}

// A name missing from a row's map writes NaN; reading gives every column
// of the file, and leaves out of the map those the file lacks.
func TestTableColumnsRoundTrip(t *testing.T) {
	tbl := NewTable[statRow]("s.parquet", "b", "a")
	rows := []statRow{{ID: 1, Stats: map[string]float64{"a": 1.5, "b": -2}, Tail: true}, {ID: 2, Stats: map[string]float64{"a": 3}}, {ID: 3}}
	var buf bytes.Buffer
	if err := tbl.WriteParquet(&buf, rows); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.parquet")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := tbl.ReadParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Stats["a"] != 1.5 || got[0].Stats["b"] != -2 || !got[0].Tail || got[1].Stats["a"] != 3 ||
		!math.IsNaN(got[1].Stats["b"]) || !math.IsNaN(got[2].Stats["a"]) || len(got[2].Stats) != 2 {
		t.Fatalf("read %+v", got)
	}
	// An older file without column b: b is not in the maps.
	older := NewTable[statRow]("s.parquet", "a")
	path = filepath.Join(t.TempDir(), "s.arrow")
	if err := older.WriteIPC(path, rows, 2, nil); err != nil {
		t.Fatal(err)
	}
	back, _, err := readIPC(tbl, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range back {
		if _, ok := r.Stats["b"]; ok || len(r.Stats) != 1 {
			t.Errorf("row %d of a file without b: stats %v", r.ID, r.Stats)
		}
	}
}

func TestTableColumnsRefused(t *testing.T) {
	for name, build := range map[string]func(){
		"not a float map": func() {
			NewTable[struct {
				M map[string]int `arrow:",columns"`
			}]("x", "a")
		},
		"two columns fields": func() {
			NewTable[struct {
				M map[string]float64 `arrow:",columns"`
				N map[string]float64 `arrow:",columns"`
			}]("x", "a")
		},
		"names without a field": func() {
			NewTable[struct {
				A int `arrow:"a"`
			}]("x", "b")
		},
		"a name of a field": func() { NewTable[statRow]("x", "id") },
		"an empty name":     func() { NewTable[statRow]("x", "") },
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
