package data

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

func init() { registerSourceKind(fetchedCorpus("kjv", loadKJV)) }

// loadKJV cuts the `bible` output into chapters: a heading line "Book N"
// followed by verse lines "  V text"; verse numbers are dropped, one verse
// per line.
func loadKJV(dir string, r sourceReader) error {
	f, err := os.Open(filepath.Join(dir, "kjv.txt"))
	if err != nil {
		return err
	}
	defer f.Close()
	var title string
	var body strings.Builder
	flush := func() {
		if title != "" {
			r.add(title, body.String())
		}
		body.Reset()
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case l == "":
		case !strings.HasPrefix(l, " "):
			flush()
			title = l
		default:
			_, verse, ok := strings.Cut(strings.TrimLeft(l, " "), " ")
			if !ok {
				verse = strings.TrimSpace(l)
			}
			body.WriteString(verse)
			body.WriteByte('\n')
		}
	}
	flush()
	return sc.Err()
}
