package data

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPipeOutsideWhatASourceReads: a named pipe under a jsonl: or txt:
// directory is refused only when the source would read it (a .jsonl pipe
// would hang the second reading); a pipe of another name is none of its
// business (a CLI review found jsonl:DIR refused for an unrelated pipe.md).
func TestPipeOutsideWhatASourceReads(t *testing.T) {
	for _, tc := range []struct {
		kind, doc, pipe string
		refused         bool
	}{
		{"jsonl", "a.jsonl", "notes.md", false},
		{"jsonl", "a.jsonl", "more.jsonl", true},
		{"txt", "a.txt", "notes.md", false},
		{"txt", "a.txt", "more.TXT", true},
	} {
		dir := t.TempDir()
		body := "plain text\n"
		if tc.kind == "jsonl" {
			body = `{"text": "one"}` + "\n"
		}
		if err := os.WriteFile(filepath.Join(dir, tc.doc), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(filepath.Join(dir, tc.pipe), 0o644); err != nil {
			t.Skip("no named pipes here:", err)
		}
		src, err := ParseSource(tc.kind + ":" + dir)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckSource(src)
		if refused := err != nil && strings.Contains(err.Error(), "is a named pipe"); refused != tc.refused || (!tc.refused && err != nil) {
			t.Errorf("%s:DIR with a pipe %s: %v, want refused %v", tc.kind, tc.pipe, err, tc.refused)
		}
	}
}
