package data

import (
	"sort"
	"strings"
	"testing"
)

// TestSourceKindsMatchLists: the built-in kinds registered by their files
// are BuiltinSources, and each one that is not embedded has a pin to fetch.
func TestSourceKindsMatchLists(t *testing.T) {
	var reg []string
	for name, k := range sourceKinds {
		if k.form == builtin {
			reg = append(reg, name)
		}
	}
	sort.Strings(reg)
	listed := append([]string{}, BuiltinSources...)
	sort.Strings(listed)
	if strings.Join(reg, ",") != strings.Join(listed, ",") {
		t.Errorf("registered built-in kinds %v, BuiltinSources %v", reg, listed)
	}
	for _, name := range reg {
		if _, ok := pinFor(name); !ok && sourceKinds[name].key == nil {
			t.Errorf("built-in %s: no pin to fetch and no key of its own", name)
		}
	}
}

// TestParseSourceKinds: every kind parses from its spelling, and its Name
// is that spelling back.
func TestParseSourceKinds(t *testing.T) {
	cases := []struct {
		entry string
		want  Source
		name  string
	}{
		{"opticks", Source{Kind: "opticks"}, "opticks"},
		{"kjv", Source{Kind: "kjv"}, "kjv"},
		{"txt:some/dir", Source{Kind: "txt", Path: "some/dir"}, "txt:some/dir"},
		{"jsonl:a.jsonl", Source{Kind: "jsonl", Path: "a.jsonl", Field: "text"}, "jsonl:a.jsonl"},
		{"jsonl:a.jsonl#body", Source{Kind: "jsonl", Path: "a.jsonl", Field: "body"}, "jsonl:a.jsonl"},
		{"parquet:b.parquet#col", Source{Kind: "parquet", Path: "b.parquet", Field: "col"}, "parquet:b.parquet"},
		{"arrow:c.arrow", Source{Kind: "arrow", Path: "c.arrow", Field: "text"}, "arrow:c.arrow"},
	}
	for _, c := range cases {
		got, err := ParseSource(c.entry)
		if err != nil {
			t.Errorf("%s: %v", c.entry, err)
			continue
		}
		if got != c.want || got.Name() != c.name {
			t.Errorf("%s: got %+v named %q, want %+v named %q", c.entry, got, got.Name(), c.want, c.name)
		}
	}
	for _, bad := range []string{"", "nope", "txt:", "jsonl:#text", "opticks:x", "csv:a.csv"} {
		if _, err := ParseSource(bad); err == nil {
			t.Errorf("%q parsed", bad)
		} else if !strings.Contains(err.Error(), "txt:DIR") || !strings.Contains(err.Error(), "opticks") {
			t.Errorf("%q: message %q does not list the kinds", bad, err)
		}
	}
}
