package labelled

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/badinput"
)

func write(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		fields     Fields
		want       string // texts with + for a member, - for a non-member
		read       string // the first text's Field/LabelField
	}{
		{"WikiMIA", `{"input":"a","label":1}` + "\n" + `{"input":"b","label":0}`, Fields{}, "+a -b", "input/label"},
		{"booleans and words", `{"text":"a","label":true}` + "\n" + `{"text":"b","label":"nonmember"}` + "\n" + `{"text":"c","label":"member"}`, Fields{}, "+a -b +c", "text/label"},
		{"named fields", `{"doc":"a","m":"0"}` + "\n\n" + `{"doc":"b","m":"1"}`, Fields{Text: "doc", Label: "m"}, "-a +b", "doc/m"},
		{"MIMIR pairs", `{"member":"a","nonmember":"b"}` + "\n" + `{"member":"c","nonmember":"d"}`, Fields{}, "+a -b +c -d", "member/"},
		{"a byte-order mark", "\ufeff" + `{"input":"a","label":1}` + "\n" + `{"input":"b","label":0}`, Fields{}, "+a -b", "input/label"},
	} {
		texts, err := Read(write(t, "set.jsonl", tc.body), tc.fields)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var got []string
		for _, x := range texts {
			got = append(got, map[bool]string{true: "+", false: "-"}[x.Member]+x.Text)
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, g, tc.want)
		}
		if g := texts[0].Field + "/" + texts[0].LabelField; g != tc.read {
			t.Errorf("%s: read from fields %q, want %q", tc.name, g, tc.read)
		}
	}
}

func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"missing label field", `{"input":"a"}`, `no label field "label"`},
		{"label not a membership value", `{"input":"a","label":2}`, "not a member/non-member value"},
		{"label word", `{"input":"a","label":"maybe"}`, "not a member/non-member value"},
		{"no text field", `{"body":"a","label":1}`, "no text field"},
		{"not JSON", `{"input":`, "set.jsonl:1: not valid JSON: want one JSON object a line"},
		{"a JSON array", `[1, 2]`, "set.jsonl:1: a JSON array, not an object"},
		{"one class", `{"input":"a","label":1}` + "\n" + `{"input":"b","label":1}`, "the labelled set has 2 members and 0 non-members: an audit needs at least 1 of each"},
		{"label null", `{"input":"a","label":null}`, `field "label": null is not a member/non-member value`},
		{"label an object", `{"input":"a","label":{"x":1}}`, `field "label": an object is not`},
		{"text a number", `{"input":3,"label":1}`, `field "input" is a number, not a text`},
		{"a directory", "", "is a directory: want a JSONL file"},
		{"empty text", `{"input":" ","label":1}` + "\n" + `{"input":"b","label":0}`, "set.jsonl:1: empty text"},
		// Two blanks are empty texts, not one text under both labels.
		{"two blank texts", `{"input":"a","label":1}` + "\n" + `{"input":"   ","label":1}` + "\n" + `{"input":" \n ","label":0}`, "set.jsonl:2: empty text"},
		{"not UTF-8", `{"input":"a","label":1}` + "\n" + "{\"input\":\"caf\xe9\",\"label\":0}", "set.jsonl:2: not valid UTF-8 (byte 14, 0xe9)"},
	} {
		texts, err := Read(write(t, "set.jsonl", tc.body), Fields{})
		if tc.name == "a directory" {
			texts, err = Read(t.TempDir(), Fields{})
		}
		if err == nil {
			texts, _, err = Dedup(texts)
		}
		if err == nil {
			err = CheckClasses(texts, 1)
		}
		if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want bad input with %q", tc.name, err, tc.want)
		}
	}
}

func TestReadClass(t *testing.T) {
	m, err := ReadClass(write(t, "m.txt", "one\ntwo\n"), true, "")
	if err != nil || len(m) != 2 || !m[1].Member || m[1].Text != "two" {
		t.Fatalf("txt: %+v %v", m, err)
	}
	if _, err := ReadClass(write(t, "latin1.txt", "one\ncaf\xe9\n"), true, ""); err == nil || !strings.Contains(err.Error(), "latin1.txt:2: not valid UTF-8 (byte 4, 0xe9)") {
		t.Errorf("Latin-1 txt: %v, want not valid UTF-8 at line 2", err)
	}
	if bom, err := ReadClass(write(t, "bom.txt", "\ufeffone\n"), true, ""); err != nil || bom[0].Text != "one" {
		t.Errorf("txt with a byte-order mark: %+v %v, want one", bom, err)
	}
	// Windows line endings give the same texts.
	crlf, err := ReadClass(write(t, "crlf.txt", "one\r\ntwo\r\n"), true, "")
	if err != nil || len(crlf) != 2 || crlf[0].Text != "one" || crlf[1].Text != "two" {
		t.Fatalf("CRLF txt: %+v %v, want one and two", crlf, err)
	}
	// Blank lines at the end close the file; one between texts is an
	// empty text, refused with its line.
	tail, err := ReadClass(write(t, "tail.txt", "one\ntwo\n\n \r\n"), true, "")
	if err != nil || len(tail) != 2 || tail[1].Text != "two" {
		t.Errorf("txt ending in blank lines: %+v %v, want one and two", tail, err)
	}
	if _, err := ReadClass(write(t, "gap.txt", "one\n\ntwo\n"), true, ""); err == nil || !strings.Contains(err.Error(), "gap.txt:2: empty text") {
		t.Errorf("txt with a blank line between texts: %v, want gap.txt:2: empty text", err)
	}
	n, err := ReadClass(write(t, "n.jsonl", `{"text":"x"}`), false, "")
	if err != nil || len(n) != 1 || n[0].Member || n[0].Text != "x" || n[0].Field != "text" || m[0].Field != "" {
		t.Fatalf("jsonl: %+v %v", n, err)
	}
	if err := CheckClasses(append(m, n...), 1); err != nil {
		t.Error(err)
	}
}

// TestDedup: a text given twice under one label is kept once (the first,
// white space aside); under both labels it is refused, naming both rows.
func TestDedup(t *testing.T) {
	texts := []Text{
		{Text: "a b", Member: true, Where: "f:1"},
		{Text: "c", Member: false, Where: "f:2"},
		{Text: " a  b\n", Member: true, Where: "f:3"},
		{Text: "c", Member: false, Where: "f:4"},
		{Text: "d", Member: false, Where: "f:5"},
	}
	kept, dropped, err := Dedup(texts)
	if err != nil || dropped != 2 || len(kept) != 3 || kept[0].Where != "f:1" || kept[1].Where != "f:2" || kept[2].Where != "f:5" {
		t.Errorf("Dedup = %+v, %d, %v; want f:1, f:2, f:5 and 2 dropped", kept, dropped, err)
	}
	texts[3].Member = true
	_, _, err = Dedup(texts)
	if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "f:2 (non-member) and f:4 (member): the same text labelled member and non-member") {
		t.Errorf("a text under both labels: %v", err)
	}
	// Two of each class are what the blind baseline's folds need.
	if err := CheckClasses(texts[:3], 2); err == nil || !strings.Contains(err.Error(), "1 non-member: an audit needs at least 2 of each") {
		t.Errorf("one non-member: %v", err)
	}
}
