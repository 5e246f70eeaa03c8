package data

import (
	_ "embed"
	"strings"
)

func init() {
	registerSourceKind(sourceKind{
		name: "opticks",
		read: func(_ Source, _ string, r sourceReader) error { return loadOpticks(r.add) },
		// Embedded: its bytes are the key, and there is nothing to fetch.
		key: func(src Source, _ string) ([]keyedFile, error) { return []keyedFile{opticksKey(src.Name())}, nil },
	})
}

// OpticksName is the embedded Opticks's file name, as Go's source tree
// ($GOROOT/src/testdata) ships the same bytes.
const OpticksName = "Isaac.Newton-Opticks.txt"

// opticks is Newton's Opticks (Project Gutenberg, public domain), copied
// byte for byte from Go's $GOROOT/src/testdata. Embedding it lets the
// binary run its default experiment on a machine without Go (a GPU
// machine, say); the bytes, and so the dataset cache key and every table
// built from it, are those of Go's copy.
//
//go:embed opticks/Isaac.Newton-Opticks.txt
var opticks []byte

// Opticks returns the embedded text of Newton's Opticks (shared: callers
// must not modify it).
func Opticks() []byte { return opticks }

// loadOpticks yields the Project Gutenberg text without its licence header
// and footer, as one document (chunking cuts it up).
func loadOpticks(add func(title, text string)) error {
	text := strings.ReplaceAll(string(opticks), "\r\n", "\n")
	if i := strings.Index(text, "*** START OF"); i >= 0 {
		if j := strings.Index(text[i:], "\n"); j >= 0 {
			text = text[i+j+1:]
		}
	}
	if i := strings.Index(text, "*** END OF"); i >= 0 {
		text = text[:i]
	}
	add("Opticks", strings.TrimSpace(text)+"\n")
	return nil
}
