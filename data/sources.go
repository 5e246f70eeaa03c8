package data

import (
	"bufio"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
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
	switch src.Kind {
	case "opticks":
		err = loadOpticks(add)
	case "moby-dick":
		err = loadMobyDick(cacheDir, add, bad)
	case "brown":
		err = loadBrown(cacheDir, add, bad)
	case "sotu":
		err = loadSOTU(cacheDir, add, bad)
	case "kjv":
		err = loadKJV(cacheDir, add)
	case "txt":
		err = loadTxtDir(src.Path, add, bad)
	case "jsonl":
		err = loadJSONL(src.Path, src.Field, add, func(file string, line int, title, reason string) {
			reject(Rejected{name, title, reason, file, line})
		})
	case "parquet":
		err = loadParquet(src.Path, src.Field, add, bad)
	case "arrow":
		err = loadArrowText(src.Path, src.Field, add, bad)
	default:
		err = fmt.Errorf("unknown source kind %q", src.Kind)
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

// loadMobyDick reads chapter_N.txt (and the epilogue); the first line is
// the chapter heading, which becomes the title.
func loadMobyDick(cacheDir string, add func(string, string), bad func(string, string)) error {
	dir, err := packageDir(cacheDir, "moby-dick")
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(dir, "data", "chapter_*.txt"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no chapter_*.txt in %s", filepath.Join(dir, "data"))
	}
	num := func(f string) int {
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "chapter_"), ".txt"))
		return n
	}
	sort.Slice(files, func(i, j int) bool { return num(files[i]) < num(files[j]) })
	files = append(files, filepath.Join(dir, "data", "epilogue.txt"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			bad(filepath.Base(f), err.Error())
			continue
		}
		head, body, _ := strings.Cut(strings.TrimLeft(string(b), "\n"), "\n")
		add(strings.TrimSpace(head), strings.TrimSpace(body)+"\n")
	}
	return nil
}

// loadSOTU reads one speech per YEAR_name_party.txt file.
func loadSOTU(cacheDir string, add func(string, string), bad func(string, string)) error {
	dir, err := packageDir(cacheDir, "sotu")
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(dir, "data", "[0-9][0-9][0-9][0-9]_*.txt"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no speeches in %s", filepath.Join(dir, "data"))
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			bad(filepath.Base(f), err.Error())
			continue
		}
		add(strings.TrimSuffix(filepath.Base(f), ".txt"), strings.TrimSpace(string(b))+"\n")
	}
	return nil
}

// loadBrown reads the 500 tagged files (ca01 ... cr09) and strips the tags.
func loadBrown(cacheDir string, add func(string, string), bad func(string, string)) error {
	dir, err := packageDir(cacheDir, "brown")
	if err != nil {
		return err
	}
	cats := map[string]string{}
	if b, err := os.ReadFile(filepath.Join(dir, "cats.txt")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) == 2 {
				cats[f[0]] = f[1]
			}
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "c[a-r][0-9][0-9]"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no Brown files c[a-r]NN in %s", dir)
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			bad(filepath.Base(f), err.Error())
			continue
		}
		title := filepath.Base(f)
		if c := cats[title]; c != "" {
			title += " (" + c + ")"
		}
		add(title, untagBrown(string(b)))
	}
	return nil
}

// loadKJV cuts the `bible` output into chapters: a heading line "Book N"
// followed by verse lines "  V text"; verse numbers are dropped, one verse
// per line.
func loadKJV(cacheDir string, add func(string, string)) error {
	dir, err := packageDir(cacheDir, "kjv")
	if err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(dir, "kjv.txt"))
	if err != nil {
		return err
	}
	defer f.Close()
	var title string
	var body strings.Builder
	flush := func() {
		if title != "" {
			add(title, body.String())
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
