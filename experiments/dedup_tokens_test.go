package experiments

import (
	"strings"
	"testing"
)

// TestDedupTokensTOML: a spec without data.dedup_tokens resolves to a
// config.toml without it (every run made before the key keeps its Hash),
// one that sets it to the key's line.
func TestDedupTokensTOML(t *testing.T) {
	for _, c := range []struct {
		doc, want string
		has       bool
	}{
		{"", "", false},
		{"[data]\ndedup_tokens = 0\n", "", false},
		{"[data]\ndedup_tokens = 50\n", "dedup_tokens = 50\n", true},
	} {
		s, err := ParseBytes("x.toml", []byte("name = \"x\"\n"+c.doc))
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.TOML()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(b), "dedup_tokens"); got != c.has || (c.has && !strings.Contains(string(b), c.want)) {
			t.Errorf("%q: config.toml names dedup_tokens: %v, want %v (%q)", c.doc, got, c.has, c.want)
		}
	}
}
