package data

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestFetchScriptMatchesPins: scripts/fetch-corpora.sh (which setup.sh runs
// before memo is built) pins the same artifacts as Pins, and fetches all of
// them by default.
func TestFetchScriptMatchesPins(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "scripts", "fetch-corpora.sh"))
	if err != nil {
		t.Fatal(err)
	}
	script := string(raw)
	_, block, ok := strings.Cut(script, "\npins=\"")
	if !ok {
		t.Fatal(`fetch-corpora.sh: no pins="..." block`)
	}
	block, _, _ = strings.Cut(block, "\"\n")
	var got []pinned
	for _, l := range strings.Split(block, "\n") {
		f := strings.Fields(l)
		if len(f) != 4 {
			t.Fatalf("fetch-corpora.sh pin line %q: want name npm-spec tarball sha256", l)
		}
		if f[1] == "-" {
			f[1] = ""
		}
		got = append(got, pinned{f[0], f[1], f[2], f[3]})
	}
	if !reflect.DeepEqual(got, Pins) {
		t.Errorf("fetch-corpora.sh pins\n%v\ndiffer from data.Pins\n%v", got, Pins)
	}
	want := "want=(" + strings.Join(FetchNames(), " ") + ")"
	if !strings.Contains(script, want) {
		t.Errorf("fetch-corpora.sh does not fetch every pin by default: no %q", want)
	}
}
