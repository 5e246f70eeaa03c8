package data

import (
	"os"
	"path/filepath"
	"testing"
)

// cacheDir is where `memo data fetch` put the corpora; tests that need them
// skip when they are absent, so no test needs the network.
func fetchedCache() string { return ResolveCacheDir("") }

func needFetched(t testing.TB, name string) {
	t.Helper()
	if _, err := packageDir(fetchedCache(), name); err != nil {
		t.Skipf("%s not fetched (run `memo data fetch %s`): %v", name, name, err)
	}
}

// sourceTexts loads every available source (Opticks always, the fetched
// ones when present), capped at maxDocs documents each.
func sourceTexts(t testing.TB, maxDocs int) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, name := range BuiltinSources {
		if name != "opticks" {
			if _, err := packageDir(fetchedCache(), name); err != nil {
				continue
			}
		}
		docs, _, err := loadSource(Source{Kind: name}, fetchedCache())
		if err != nil {
			t.Fatalf("load %s: %v", name, err)
		}
		for i, d := range docs {
			if i == maxDocs {
				break
			}
			out[name] = append(out[name], d.Text)
		}
	}
	return out
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
