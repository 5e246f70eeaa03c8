package data

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
)

func TestBuiltinSources(t *testing.T) {
	cases := []struct {
		name      string
		docs      int
		firstHas  string
		firstName string
		notIn     string // must appear in no document
	}{
		{"opticks", 1, "OPTICKS", "Opticks", "Project Gutenberg License"},
		{"moby-dick", 136, "Call me Ishmael.", "CHAPTER 1. Loomings.", ""},
		{"brown", 500, `The Fulton County Grand Jury said Friday an investigation of Atlanta's recent primary election produced "no evidence" that`, "ca01 (news)", "/at "},
		{"sotu", 233, "Fellow-Citizens of the Senate", "1790_george_washington_n", ""},
		{"kjv", 1189, "In the beginning God created the heaven and the earth.\n", "Genesis 1", "  1 In"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name != "opticks" {
				needFetched(t, c.name)
			}
			docs, rej, err := loadSource(Source{Kind: c.name}, fetchedCache())
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != c.docs || len(rej) != 0 {
				t.Fatalf("%d documents, %d rejected %v; want %d and 0", len(docs), len(rej), rej, c.docs)
			}
			if !strings.Contains(docs[0].Text, c.firstHas) || docs[0].Title != c.firstName {
				t.Errorf("first document %q: %q...; want title %q containing %q", docs[0].Title, docs[0].Text[:min(200, len(docs[0].Text))], c.firstName, c.firstHas)
			}
			for _, d := range docs {
				if c.notIn != "" && strings.Contains(d.Text, c.notIn) {
					t.Errorf("%q contains %q", d.Title, c.notIn)
				}
				if d.Source != c.name || strings.TrimSpace(d.Text) == "" {
					t.Errorf("%q: source %q, %d bytes", d.Title, d.Source, len(d.Text))
				}
			}
		})
	}
}

func TestUntagBrown(t *testing.T) {
	in := "\n\n\tHe/pps said/vbd ``/`` no/at ''/'' (/( twice/rb )/) ,/, and/cc left/vbd ./.\n\n\n\tIt's/pps+bez over/rp ./.\n"
	want := "He said \"no\" (twice), and left.\nIt's over.\n"
	if got := untagBrown(in); got != want {
		t.Errorf("untagBrown = %q, want %q", got, want)
	}
}

// TestUserSources reads a folder, JSONL, Parquet and Arrow, and reports bad
// documents by name instead of dropping them.
func TestUserSources(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "txt", "a.txt"), "first document\n")
	writeFile(t, filepath.Join(dir, "txt", "sub", "b.txt"), "second document\n")
	writeFile(t, filepath.Join(dir, "txt", "bad.txt"), "broken \xff\xfe bytes")
	writeFile(t, filepath.Join(dir, "txt", "empty.txt"), "  \n")
	writeFile(t, filepath.Join(dir, "txt", "notes.md"), "not text")
	jsonl := `{"title": "one", "text": "alpha"}
{"id": 7, "body": "beta", "text": "gamma"}
not json
{"title": "no text"}
{"title": "number", "text": 5}
`
	writeFile(t, filepath.Join(dir, "d.jsonl"), jsonl)
	writeTextTable(t, filepath.Join(dir, "d.parquet"), filepath.Join(dir, "d.arrow"))

	cases := []struct {
		spec     string
		titles   []string
		rejected map[string]string // title -> reason prefix
	}{
		{"txt:" + filepath.Join(dir, "txt"), []string{"a.txt", "sub/b.txt"},
			map[string]string{"bad.txt": "invalid UTF-8 at byte 7", "empty.txt": "empty"}},
		{"jsonl:" + filepath.Join(dir, "d.jsonl"), []string{"one", "7"},
			map[string]string{"line 3": "not a JSON object", "no text": `no "text" field`, "number": `field "text" is not a string`}},
		{"jsonl:" + filepath.Join(dir, "d.jsonl") + "#body", []string{"7"}, nil},
		{"parquet:" + filepath.Join(dir, "d.parquet"), []string{"row 0", "row 2"}, map[string]string{"row 1": "null text"}},
		{"arrow:" + filepath.Join(dir, "d.arrow") + "#text", []string{"row 0", "row 2"}, map[string]string{"row 1": "null text"}},
	}
	for _, c := range cases {
		src, err := ParseSource(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		docs, rej, err := loadSource(src, "")
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		var titles []string
		for _, d := range docs {
			titles = append(titles, d.Title)
		}
		if strings.Join(titles, "|") != strings.Join(c.titles, "|") {
			t.Errorf("%s: titles %q, want %q", c.spec, titles, c.titles)
		}
		got := map[string]string{}
		for _, r := range rej {
			got[r.Title] = r.Reason
		}
		for title, reason := range c.rejected {
			if !strings.HasPrefix(got[title], reason) {
				t.Errorf("%s: %q rejected for %q, want %q", c.spec, title, got[title], reason)
			}
		}
		if c.rejected != nil && len(got) != len(c.rejected) {
			t.Errorf("%s: rejected %v, want %v", c.spec, got, c.rejected)
		}
	}
	for _, bad := range []string{"txt:" + filepath.Join(dir, "missing"), "parquet:" + filepath.Join(dir, "d.jsonl"),
		"arrow:" + filepath.Join(dir, "d.jsonl"), "parquet:" + filepath.Join(dir, "d.parquet") + "#nope"} {
		src, _ := ParseSource(bad)
		if _, _, err := loadSource(src, ""); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	for _, bad := range []string{"wiki", "txt:", "jsonl:#text", "csv:x.csv"} {
		if _, err := ParseSource(bad); err == nil {
			t.Errorf("ParseSource(%q) accepted", bad)
		}
	}
}

// writeTextTable writes a three-row table (the middle text null) as Parquet
// and as Arrow IPC.
func writeTextTable(t *testing.T, parquetPath, arrowPath string) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "text", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"first row", "", "third row"}, []bool{true, false, true})
	rec := b.NewRecord()
	defer rec.Release()
	f, err := os.Create(parquetPath)
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
	if err := writeArrow(arrowPath, schema, 1, func(rb *array.RecordBuilder, _ int) {
		rb.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
		rb.Field(1).(*array.StringBuilder).AppendValues([]string{"first row", "", "third row"}, []bool{true, false, true})
	}); err != nil {
		t.Fatal(err)
	}
}
