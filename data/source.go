package data

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Source is a parsed data.sources entry.
type Source struct {
	Kind  string // a built-in name, or a user kind: "txt", "jsonl", "parquet", "arrow"
	Path  string
	Field string // jsonl field / parquet or arrow column
}

// A sourceKind is one kind of data.sources entry, in a file of its own
// (source_<kind>.go): how it is spelled, how it reads its documents, what
// keys the dataset cache and what a run checks before it starts. A new kind
// is that one file; a built-in corpus that is fetched also has its pin in
// Pins (and scripts/fetch-corpora.sh) and its name in BuiltinSources.
type sourceKind struct {
	name string
	// form is how an entry is spelled: a built-in is its bare name; a user
	// kind is "name:PATH", with "#field" where form is pathField.
	form sourceForm
	// usage is the spelling for messages ("jsonl:FILE[#field]"); user kinds.
	usage string
	// read streams the source's documents to r.
	read func(src Source, cacheDir string, r sourceReader) error
	// key is what the dataset cache key holds of the source: its files,
	// hashed. Nil: every file of the fetched package named name.
	key func(src Source, cacheDir string) ([]keyedFile, error)
	// check is the cheap look a spec gets before a run that the source
	// holds documents; nil: its path exists and is not an empty file.
	check func(src Source) error
	// reads tells, for a kind that takes a directory, the file names it
	// reads under it (the others, a pipe among them, are none of its
	// business); nil: every file.
	reads func(name string) bool
}

// sourceForm is how a kind's entries are spelled.
type sourceForm int

const (
	builtin   sourceForm = iota // "name"
	pathOnly                    // "name:PATH"
	pathField                   // "name:PATH[#field]", field "text" by default
)

// sourceReader is where a kind's read puts documents: add a document,
// bad a rejected one by title, badAt one by file and line (JSONL).
type sourceReader struct {
	add   func(title, text string)
	bad   func(title, reason string)
	badAt func(file string, line int, title, reason string)
}

// sourceKinds are the registered kinds by name.
var sourceKinds = map[string]sourceKind{}

// registerSourceKind adds k (from its file's init).
func registerSourceKind(k sourceKind) {
	if _, dup := sourceKinds[k.name]; dup {
		panic("data: source kind " + k.name + " registered twice")
	}
	sourceKinds[k.name] = k
}

// Name is the spelling used in docs.arrow's source column.
func (s Source) Name() string {
	if k, ok := sourceKinds[s.Kind]; ok && k.form != builtin {
		return s.Kind + ":" + s.Path
	}
	return s.Kind
}

// ParseSource parses a data.sources entry.
func ParseSource(s string) (Source, error) {
	if k, ok := sourceKinds[s]; ok && k.form == builtin {
		return Source{Kind: s}, nil
	}
	kind, rest, ok := strings.Cut(s, ":")
	if k, known := sourceKinds[kind]; ok && rest != "" && known {
		switch k.form {
		case pathOnly:
			return Source{Kind: kind, Path: rest}, nil
		case pathField:
			path, field, _ := strings.Cut(rest, "#")
			if field == "" {
				field = "text"
			}
			if path != "" {
				return Source{Kind: kind, Path: path, Field: field}, nil
			}
		}
	}
	return Source{}, fmt.Errorf("%q: want one of %s, or %s", s, strings.Join(BuiltinSources, ", "), strings.Join(userKindUsages(), ", "))
}

// userKindUsages are the spellings of the user kinds, sorted.
func userKindUsages() []string {
	var out []string
	for _, k := range sourceKinds {
		if k.form != builtin {
			out = append(out, k.usage)
		}
	}
	sort.Strings(out)
	return out
}

// CheckSource is the cheap part of what the data stage will find out about
// a user source (one with a path): whether it holds documents at all, e.g.
// a txt: directory without a .txt file, or an empty file. (Whether the
// documents are usable is known only once they are read.)
func CheckSource(src Source) error {
	st, err := os.Stat(src.Path)
	if err != nil {
		return err
	}
	if err := regularSource(src.Path, st, sourceKinds[src.Kind].reads); err != nil {
		return err
	}
	if k, ok := sourceKinds[src.Kind]; ok && k.check != nil {
		return k.check(src)
	}
	if st.Mode().IsRegular() && st.Size() == 0 {
		return fmt.Errorf("%s is empty", src.Path)
	}
	return nil
}

// regularSource refuses a source that is, or under a directory holds among
// the files it reads (reads; nil: all), a named pipe, a device or a socket:
// the data stage reads every source twice (once for the dataset's cache
// key, once to build it), and a pipe gives its lines only once, so the
// second read would wait forever.
func regularSource(path string, st fs.FileInfo, reads func(name string) bool) error {
	const special = fs.ModeNamedPipe | fs.ModeDevice | fs.ModeCharDevice | fs.ModeSocket
	why := func(p string) error {
		return fmt.Errorf("%s is a named pipe, device or socket, not a file: memo reads its sources twice (for the dataset's cache key, then to build it); write it to a file first", p)
	}
	if st.Mode()&special != 0 {
		return why(path)
	}
	if !st.IsDir() {
		return nil
	}
	var bad error
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type()&special != 0 && (reads == nil || reads(d.Name())) {
			bad = why(p)
			return filepath.SkipAll
		}
		return nil
	})
	return bad
}

// sourceKey is what the dataset cache key holds of src (sourceKind.key).
func sourceKey(src Source, cache string) ([]keyedFile, error) {
	k, ok := sourceKinds[src.Kind]
	if !ok {
		return nil, fmt.Errorf("unknown source kind %q", src.Kind)
	}
	if k.key != nil {
		return k.key(src, cache)
	}
	dir, err := packageDir(cache, src.Kind)
	if err != nil {
		return nil, err
	}
	files, err := walkFiles(dir, func(string) bool { return true })
	return hashFiles(src, dir, files), err
}

// oneFileKey keys a source that is one file.
func oneFileKey(src Source, _ string) ([]keyedFile, error) {
	return hashFiles(src, filepath.Dir(src.Path), []string{src.Path}), nil
}

// hashFiles keys files by their paths relative to root and their sha256.
func hashFiles(src Source, root string, files []string) []keyedFile {
	out := make([]keyedFile, 0, len(files))
	for _, f := range files {
		out = append(out, hashFile(src.Name(), root, f))
	}
	return out
}
