package data

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// rawDoc is a document as a source gives it, before chunking.
type rawDoc struct {
	Source, Title, Text string
}

// Rejected is a document left out of the dataset, with the reason. File
// and Line locate it in a JSONL source (Line 0: the whole file).
type Rejected struct {
	Source string `json:"source"`
	Title  string `json:"title"`
	Reason string `json:"reason"`
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
}

// loadSource reads every document of one source. Unreadable or invalid
// documents are returned as rejections; a missing source is an error.
func loadSource(src Source, cacheDir string) ([]rawDoc, []Rejected, error) {
	var (
		docs []rawDoc
		rej  []Rejected
	)
	err := streamSource(src, cacheDir, func(d rawDoc) { docs = append(docs, d) }, func(r Rejected) { rej = append(rej, r) })
	if err != nil {
		return nil, nil, err
	}
	return docs, rej, nil
}

// streamSource gives each usable document of one source to emit as it is
// read (the build holds none of them) and each unusable one to reject; a
// missing source is an error.
func streamSource(src Source, cacheDir string, emit func(rawDoc), reject func(Rejected)) error {
	var err error
	name := src.Name()
	add := func(title, text string) {
		switch {
		case !utf8.ValidString(text):
			reject(Rejected{Source: name, Title: title, Reason: fmt.Sprintf("invalid UTF-8 at byte %d", invalidAt(text))})
		case strings.TrimSpace(text) == "":
			reject(Rejected{Source: name, Title: title, Reason: "empty"})
		default:
			emit(rawDoc{name, title, text})
		}
	}
	bad := func(title, reason string) { reject(Rejected{Source: name, Title: title, Reason: reason}) }
	kind, ok := sourceKinds[src.Kind]
	if !ok {
		err = fmt.Errorf("unknown source kind %q", src.Kind)
	} else {
		err = kind.read(src, cacheDir, sourceReader{add: add, bad: bad, badAt: func(file string, line int, title, reason string) {
			reject(Rejected{name, title, reason, file, line})
		}})
	}
	if err != nil {
		return fmt.Errorf("source %s: %w", name, err)
	}
	return nil
}

func invalidAt(s string) int {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}
