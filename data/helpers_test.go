package data

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// fetchedCache is where scripts/setup.sh (through scripts/fetch-corpora.sh)
// or `memo data fetch` put the corpora: $MEMO_CACHE or ~/.cache/memo.
func fetchedCache() string { return ResolveCacheDir("") }

// inCI reports whether the tests run under CI (CI=true, as .ci/run is
// started), where setup.sh has fetched every corpus, so a missing one is a
// broken setup to report, not a reason to skip.
func inCI() bool {
	v, _ := strconv.ParseBool(os.Getenv("CI"))
	return v
}

func notFetched(name string, err error) string {
	return err.Error() + ", or `bash scripts/fetch-corpora.sh " + name + "` (scripts/setup.sh runs it)"
}

// fetched reports whether the named corpus is in the cache. Under CI a
// missing corpus fails the test; locally the test logs it and goes on
// without that corpus.
func fetched(t testing.TB, name string) bool {
	t.Helper()
	_, err := packageDir(fetchedCache(), name)
	if err == nil {
		return true
	}
	if inCI() {
		t.Fatalf("CI=true: %s", notFetched(name, err))
	}
	t.Logf("going on without it: %s", notFetched(name, err))
	return false
}

// needFetched skips a test that cannot run without the named corpus, with
// the command that fetches it, or fails it under CI.
func needFetched(t testing.TB, name string) {
	t.Helper()
	_, err := packageDir(fetchedCache(), name)
	if err == nil {
		return
	}
	if inCI() {
		t.Fatalf("CI=true: %s", notFetched(name, err))
	}
	t.Skip(notFetched(name, err))
}

// opticksText is Newton's Opticks as the opticks source reads it: always
// present, no download.
func opticksText(t testing.TB) string {
	t.Helper()
	docs, _, err := loadSource(Source{Kind: "opticks"}, "")
	if err != nil {
		t.Fatalf("load opticks: %v", err)
	}
	return docs[0].Text
}

// sourceTexts loads every built-in source (Opticks always, the fetched ones
// when present; see fetched), capped at maxDocs documents each.
func sourceTexts(t testing.TB, maxDocs int) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, name := range BuiltinSources {
		if name != "opticks" && !fetched(t, name) {
			continue
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

// readTestdataJSON decodes testdata/name into v.
func readTestdataJSON(t testing.TB, name string, v any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("testdata/%s: %v", name, err)
	}
}
