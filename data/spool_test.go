package data

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/memo-research/memo/internal/atomicfile"
)

// TestDocTable: rows read back the title, text and ids they were given,
// know their source from the row alone, and number a document's chunks
// counting one that did not round-trip (which keeps only its title).
func TestDocTable(t *testing.T) {
	sp, err := newSpool(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer sp.close()
	tab := newDocTable(sp)
	type row struct {
		c             candidate
		first         bool
		parent, chunk int
	}
	rows := []row{
		{candidate{source: "a", title: "one #1", text: "first chunk", ids: []int32{1, 2, 3}}, true, 0, 0},
		{candidate{source: "a", title: "one #2", text: "fails", ids: []int32{4}, failed: true}, false, 0, 1},
		{candidate{source: "a", title: "one #3", text: "third", ids: []int32{5, 6}}, false, 0, 2},
		{candidate{source: "b", title: "", text: "untitled", ids: []int32{7}}, true, 3, 0},
		{candidate{source: "b", title: "three", text: "", ids: nil}, true, 4, 0},
		{candidate{source: "b", title: "four é", text: "ünïcode", ids: []int32{-1, 1 << 30}}, true, 5, 0},
		{candidate{source: "a", title: "again", text: "a source seen before, after b", ids: []int32{8}}, true, 6, 0},
	}
	for _, r := range rows {
		if err := tab.add(&r.c, r.first, r.c.failed); err != nil {
			t.Fatal(err)
		}
	}
	if err := sp.flush(); err != nil {
		t.Fatal(err)
	}
	if tab.len() != len(rows) {
		t.Fatalf("%d rows, want %d", tab.len(), len(rows))
	}
	for k, r := range rows {
		i := int32(k)
		text, ids := r.c.text, r.c.ids
		if r.c.failed {
			text, ids = "", nil
		}
		title, text2 := tab.titleText(i)
		if tab.title(i) != r.c.title || title != r.c.title || tab.text(i) != text || text2 != text {
			t.Errorf("row %d: title %q / %q, text %q / %q; want %q, %q", k, tab.title(i), title, tab.text(i), text2, r.c.title, text)
		}
		if got := tab.tokens(i); len(got) != len(ids) || (len(ids) > 0 && !reflect.DeepEqual(got, ids)) || tab.size(i) != len(ids) {
			t.Errorf("row %d: ids %v (size %d), want %v", k, got, tab.size(i), ids)
		}
		if got := tab.source(i); got != r.c.source {
			t.Errorf("row %d: source %q, want %q", k, got, r.c.source)
		}
		if p, c := tab.parentChunk(i); int(p) != r.parent || c != r.chunk {
			t.Errorf("row %d: document row %d chunk %d, want %d, %d", k, p, c, r.parent, r.chunk)
		}
		if tab.failed(i) != r.c.failed {
			t.Errorf("row %d: failed %v", k, tab.failed(i))
		}
	}
	tab.setCode(2, codeControl)
	tab.setCode(3, codeRejected)
	if tab.split(2) != SplitControl || tab.split(3) != "" || tab.code(3) != codeRejected || tab.split(0) != "" {
		t.Errorf("splits %q %q %q", tab.split(0), tab.split(2), tab.split(3))
	}
	if p, c := tab.parentChunk(2); p != 0 || c != 2 || tab.failed(2) {
		t.Errorf("setting the split changed the row's flags: %d %d %v", p, c, tab.failed(2))
	}
	if err := sp.err(); err != nil {
		t.Fatal(err)
	}
}

// TestSpoolRemovedOnInterrupt: memo data build exits at once on an
// interrupt, past the spool's deferred close; the interrupt clean-up
// removes the spool, and a closed spool leaves no hook behind.
func TestSpoolRemovedOnInterrupt(t *testing.T) {
	dir := t.TempDir()
	sp, err := newSpool(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.record("t", "text", []int32{1, 2}); err != nil {
		t.Fatal(err)
	}
	atomicfile.RemoveTemps() // what exitOnInterrupt runs
	if _, err := os.Stat(sp.path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("spool %s after an interrupt: %v; want it removed", sp.path, err)
	}
	sp.close()
	kept := filepath.Join(dir, "kept")
	other, err := newSpool(dir)
	if err != nil {
		t.Fatal(err)
	}
	other.close()
	if err := os.WriteFile(kept, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(kept, other.path); err != nil { // a file now at the closed spool's name
		t.Fatal(err)
	}
	atomicfile.RemoveTemps()
	if _, err := os.Stat(other.path); err != nil {
		t.Errorf("a closed spool's hook removed %s: %v", other.path, err)
	}
}
