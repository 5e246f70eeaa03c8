// Package labelled reads the labelled membership sets memo audit takes,
// in the forms they ship in: JSONL or Parquet rows with a text field and
// a label field (WikiMIA: input, label), rows pairing a member and a
// non-member text (MIMIR: member, nonmember), or one file per class.
// Every fault is bad input, found before any model is loaded.
package labelled

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/memo-research/memo/internal/arrowsafe"
	"github.com/memo-research/memo/internal/badinput"
)

// Text is one labelled text.
type Text struct {
	Text   string
	Member bool
	Where  string // file:row, for messages
	// Field and LabelField name the fields the text and its label were
	// read from, as given or detected: member or nonmember for a MIMIR
	// pair (no label field), none for a line of a .txt class file.
	Field, LabelField string
}

// Fields names a file's fields; empty ones are detected: the text field
// is the first of input, text, document present; the label field label.
// With neither a label field nor a text field but member and nonmember
// fields, each row is a MIMIR pair.
type Fields struct {
	Text, Label string
}

// Field names that detection tries.
var (
	textFields = []string{"input", "text", "document"}
	pairFields = [2]string{"member", "nonmember"}
)

// Read reads a labelled file (JSONL, or Parquet by its .parquet name).
func Read(path string, f Fields) ([]Text, error) {
	rows, err := readRows(path)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, badinput.Errorf("%s: no rows", path)
	}
	first := rows[0].fields
	if f.Text == "" && f.Label == "" && has(first, pairFields[0]) && has(first, pairFields[1]) {
		var out []Text
		for _, r := range rows {
			for i, name := range pairFields {
				t, err := r.text(name)
				if err != nil {
					return nil, err
				}
				out = append(out, Text{Text: t, Member: i == 0, Where: r.where, Field: name})
			}
		}
		return out, nil
	}
	text, label := f.Text, f.Label
	if text == "" {
		for _, name := range textFields {
			if has(first, name) {
				text = name
				break
			}
		}
		if text == "" {
			return nil, badinput.Errorf("%s: no text field (tried %s; name one with --text-field)", rows[0].where, strings.Join(textFields, ", "))
		}
	}
	if label == "" {
		label = "label"
	}
	out := make([]Text, len(rows))
	for i, r := range rows {
		t, err := r.text(text)
		if err != nil {
			return nil, err
		}
		v, ok := r.fields[label]
		if !ok {
			return nil, badinput.Errorf("%s: no label field %q (name it with --label-field)", r.where, label)
		}
		m, err := ParseLabel(v)
		if err != nil {
			return nil, badinput.Errorf("%s: field %q: %v", r.where, label, err)
		}
		out[i] = Text{Text: t, Member: m, Where: r.where, Field: text, LabelField: label}
	}
	return out, nil
}

// ReadClass reads a file of one class (--members, --nonmembers): JSONL
// or Parquet rows whose text field is field (detected when empty), or,
// for a .txt file, one text per line.
func ReadClass(path string, member bool, field string) ([]Text, error) {
	if strings.EqualFold(filepath.Ext(path), ".txt") {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, badinput.Wrap(err)
		}
		var out []Text
		b = bytes.TrimPrefix(b, byteOrderMark)
		lines := strings.Split(string(b), "\n")
		// Blank lines at the end are the file's end, not empty texts (a
		// writer that ends each text and the file with a newline); a
		// blank line between texts is still one.
		for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
			lines = lines[:len(lines)-1]
		}
		for i, line := range lines {
			// A Windows line ending is the line's end, not its text: a
			// class written with CRLF would otherwise score differently
			// from the same texts with LF.
			line = strings.TrimSuffix(line, "\r")
			where := fmt.Sprintf("%s:%d", path, i+1)
			if strings.TrimSpace(line) == "" {
				return nil, badinput.Errorf("%s: empty text", where)
			}
			if err := checkUTF8(where, line); err != nil {
				return nil, err
			}
			out = append(out, Text{Text: line, Member: member, Where: where})
		}
		return out, nil
	}
	rows, err := readRows(path)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, badinput.Errorf("%s: no rows", path)
	}
	if field == "" {
		for _, name := range textFields {
			if has(rows[0].fields, name) {
				field = name
				break
			}
		}
		if field == "" {
			return nil, badinput.Errorf("%s: no text field (tried %s; name one with --text-field)", rows[0].where, strings.Join(textFields, ", "))
		}
	}
	out := make([]Text, len(rows))
	for i, r := range rows {
		t, err := r.text(field)
		if err != nil {
			return nil, err
		}
		out[i] = Text{Text: t, Member: member, Where: r.where, Field: field}
	}
	return out, nil
}

// ParseLabel reads a member/non-member label: 1/0, true/false, or
// member/nonmember (also non-member, non_member), as a JSON number,
// boolean or string.
func ParseLabel(v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case float64:
		switch x {
		case 1:
			return true, nil
		case 0:
			return false, nil
		}
	case int64:
		switch x {
		case 1:
			return true, nil
		case 0:
			return false, nil
		}
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "1", "true", "member":
			return true, nil
		case "0", "false", "nonmember", "non-member", "non_member":
			return false, nil
		}
	}
	switch v.(type) {
	case string, float64, int64:
	default:
		return false, fmt.Errorf("%s is not a member/non-member value (1/0, true/false, member/nonmember)", describe(v))
	}
	return false, fmt.Errorf("label %v is not a member/non-member value (1/0, true/false, member/nonmember)", v)
}

// Dedup keeps the first of each text given more than once under one
// label, the texts compared with runs of white space as one space, and
// refuses one given under both labels (it cannot be both). A copy would
// otherwise sit in two folds of the blind baseline, its held-out text's
// own features counted for its class, and count twice in every AUC.
func Dedup(texts []Text) (kept []Text, dropped int, err error) {
	first := make(map[string]int, len(texts))
	for _, t := range texts {
		key := strings.Join(strings.Fields(t.Text), " ")
		if key == "" {
			return nil, 0, badinput.Errorf("%s: empty text", t.Where) // not a copy of another blank
		}
		if i, ok := first[key]; ok {
			if kept[i].Member != t.Member {
				// Each place with its label: one file given as both
				// --members and --nonmembers had read "m.txt:1 and m.txt:1".
				return nil, 0, badinput.Errorf("%s (%s) and %s (%s): the same text labelled member and non-member; a text is one or the other",
					kept[i].Where, labelName(kept[i].Member), t.Where, labelName(t.Member))
			}
			dropped++
			continue
		}
		first[key] = len(kept)
		kept = append(kept, t)
	}
	return kept, dropped, nil
}

// CheckClasses refuses a set with an empty text or fewer than least
// texts in either class.
func CheckClasses(texts []Text, least int) error {
	var n [2]int
	for _, t := range texts {
		if strings.TrimSpace(t.Text) == "" {
			return badinput.Errorf("%s: empty text", t.Where)
		}
		if t.Member {
			n[1]++
		} else {
			n[0]++
		}
	}
	if n[0] < least || n[1] < least {
		return badinput.Errorf("the labelled set has %s and %s: an audit needs at least %d of each (the blind baseline's cross-validation holds out some of each class)", plural(n[1], "member"), plural(n[0], "non-member"), least)
	}
	return nil
}

type row struct {
	fields map[string]any
	where  string
}

func has(m map[string]any, k string) bool { _, ok := m[k]; return ok }

// text is the row's string field name.
func (r row) text(name string) (string, error) {
	v, ok := r.fields[name]
	if !ok {
		return "", badinput.Errorf("%s: no field %q", r.where, name)
	}
	s, ok := v.(string)
	if !ok {
		return "", badinput.Errorf("%s: field %q is %s, not a text", r.where, name, describe(v))
	}
	if err := checkUTF8(r.where+": field "+strconv.Quote(name), s); err != nil {
		return "", err
	}
	return s, nil
}

// byteOrderMark is UTF-8's, which some editors begin a file with.
var byteOrderMark = []byte("\ufeff")

// checkUTF8 refuses text (at where) that is not valid UTF-8: a tokenizer
// reads such bytes as U+FFFD or bytes of its own choosing, and the text
// scored is not the file's.
func checkUTF8(where, text string) error {
	if utf8.ValidString(text) {
		return nil
	}
	at := 0
	for at < len(text) {
		r, size := utf8.DecodeRuneInString(text[at:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		at += size
	}
	return badinput.Errorf("%s: not valid UTF-8 (byte %d, 0x%02x): convert the file to UTF-8 (iconv -f <encoding> -t UTF-8)", where, at+1, text[at])
}

// unreadable is a Parquet cell memo reads no label or text from: a null,
// or a column of a type it does not take (typ).
type unreadable struct{ typ string }

// describe names a field's value as the file holds it, not as Go does.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, int64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	case unreadable:
		if x.typ == "" {
			return "null"
		}
		return "a Parquet " + x.typ + " column"
	}
	return fmt.Sprintf("%T", v)
}

// plural writes n things: "1 member", "2 members".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// jsonKind names the JSON value that starts with c.
func jsonKind(c byte) string {
	switch c {
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func readRows(path string) ([]row, error) {
	if strings.EqualFold(filepath.Ext(path), ".parquet") {
		return readParquet(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, badinput.Errorf("%s: %w", path, badinput.PathCause(err))
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, badinput.Errorf("%s is a directory: want a JSONL file (one JSON object a line) or a .parquet file", path)
	}
	var rows []row
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for n := 1; sc.Scan(); n++ {
		raw := sc.Bytes()
		if n == 1 {
			raw = bytes.TrimPrefix(raw, byteOrderMark)
		}
		line := strings.TrimSpace(string(raw))
		if line == "" {
			continue
		}
		where := fmt.Sprintf("%s:%d", path, n)
		// encoding/json would put U+FFFD for each bad byte: the text
		// scored would not be the file's.
		if err := checkUTF8(where, line); err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			// encoding/json's words name Go types; say what the line is.
			what := "not valid JSON"
			if json.Valid([]byte(line)) {
				what = "a JSON " + jsonKind(line[0]) + ", not an object"
			}
			return nil, badinput.Errorf("%s: %s: want one JSON object a line, e.g. {\"text\": \"...\", \"label\": 1}", where, what)
		}
		rows = append(rows, row{m, where})
	}
	if err := sc.Err(); err != nil {
		return nil, badinput.Errorf("%s: %v", path, err)
	}
	return rows, nil
}

// cell is row i of a Parquet column as the JSON reader would give it:
// strings, int64 for every integer width, float64 for both float
// widths, booleans; unreadable (naming its type) for any other column.
func cell(col arrow.Array, i int) any {
	switch a := col.(type) {
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.StringView:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int8:
		return int64(a.Value(i))
	case *array.Uint64:
		if v := a.Value(i); v <= 1<<62 {
			return int64(v)
		}
		return float64(a.Value(i))
	case *array.Uint32:
		return int64(a.Value(i))
	case *array.Uint16:
		return int64(a.Value(i))
	case *array.Uint8:
		return int64(a.Value(i))
	case *array.Boolean:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Float32:
		return float64(a.Value(i))
	case *array.Dictionary:
		return cell(a.Dictionary(), a.GetValueIndex(i))
	}
	return unreadable{typ: col.DataType().String()}
}

// readParquet reads the columns of a Parquet file as rows (cell).
func readParquet(path string) ([]row, error) {
	tbl, err := arrowsafe.ReadParquetFile(path, 64)
	if err != nil {
		// Its words are "read PATH: parquet: ...": say the file, then why.
		return nil, badinput.Errorf("%s: not a readable Parquet file (is it one, whole?): %v", path, strings.TrimPrefix(err.Error(), "read "+path+": "))
	}
	defer tbl.Release()
	var rows []row
	err = arrowsafe.TableRecords(path, tbl, 1<<14, func(rec arrow.Record) error {
		base := len(rows)
		for i := 0; i < int(rec.NumRows()); i++ {
			rows = append(rows, row{map[string]any{}, path + ":row " + strconv.Itoa(base+i+1)})
		}
		for c, fld := range rec.Schema().Fields() {
			col := rec.Column(c)
			for i := 0; i < int(rec.NumRows()); i++ {
				// A null or a column of another type is kept as such,
				// so that a message says so rather than "no field".
				var v any = unreadable{}
				if !col.IsNull(i) {
					v = cell(col, i)
				}
				rows[base+i].fields[fld.Name] = v
			}
		}
		return nil
	})
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	return rows, nil
}

// labelName is how an error names a text's label.
func labelName(member bool) string {
	if member {
		return "member"
	}
	return "non-member"
}
