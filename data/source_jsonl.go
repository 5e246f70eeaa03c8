package data

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
)

func init() {
	registerSourceKind(sourceKind{
		name:  "jsonl",
		usage: "jsonl:FILE[#field]",
		form:  pathField,
		read: func(src Source, _ string, r sourceReader) error {
			return loadJSONL(src.Path, src.Field, r.add, r.badAt)
		},
		reads: isJSONLName,
		check: checkJSONL,
		key: func(src Source, cache string) ([]keyedFile, error) {
			if fi, err := os.Stat(src.Path); err == nil && fi.IsDir() {
				files, err := walkFiles(src.Path, isJSONLName)
				return hashFiles(src, src.Path, files), err
			}
			return oneFileKey(src, cache)
		},
	})
}

// checkJSONL is the look memo config and a run's first step give a jsonl
// source: a directory must hold a JSONL file, and a plain file a line
// that is not blank. Both had passed, and the run failed in its data
// stage after making its directory.
func checkJSONL(src Source) error {
	st, err := os.Stat(src.Path)
	if err != nil {
		return err
	}
	if st.IsDir() {
		files, err := walkFiles(src.Path, isJSONLName)
		if err != nil {
			return err
		}
		if len(files) == 0 {
			return fmt.Errorf("no %s files under %s", strings.Join(jsonlSuffixes, ", "), src.Path)
		}
		return nil
	}
	if st.Size() == 0 {
		return fmt.Errorf("%s is empty", src.Path)
	}
	if lower := strings.ToLower(src.Path); strings.HasSuffix(lower, ".gz") || strings.HasSuffix(lower, ".zst") || strings.HasSuffix(lower, ".zstd") {
		return nil // compressed: the data stage reads it
	}
	f, err := os.Open(src.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	// The first MiB, which holds a line of any real file.
	head, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(head)) == "" && int64(len(head)) == st.Size() {
		return fmt.Errorf("%s holds only blank lines", src.Path)
	}
	return nil
}

// jsonlLoc names where a bad JSONL line is: the file (relative to the
// source's directory, or the file's name) and the 1-based line.
type jsonlLoc func(file string, line int, title, reason string)

// jsonlSuffixes are the file names a jsonl:DIR source reads.
var jsonlSuffixes = []string{".jsonl", ".jsonl.gz", ".jsonl.zst", ".jsonl.zstd"}

func isJSONLName(name string) bool {
	name = strings.ToLower(name)
	for _, s := range jsonlSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// loadJSONL reads a JSONL file (plain, .gz or .zst), or every such file
// under a directory (sorted). In a directory a file that cannot be opened
// or decompressed is rejected by name, and the lines before the damage
// are kept; a single file that cannot be opened is an error.
func loadJSONL(path, field string, add func(string, string), bad jsonlLoc) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return loadJSONLFile(path, filepath.Base(path), "", field, add, bad, true)
	}
	files, err := walkFiles(path, isJSONLName)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no %s files under %s", strings.Join(jsonlSuffixes, ", "), path)
	}
	for _, f := range files {
		rel, _ := filepath.Rel(path, f)
		if err := loadJSONLFile(f, rel, rel+" ", field, add, bad, false); err != nil {
			return err
		}
	}
	return nil
}

// loadJSONLFile reads one JSONL file; the title of a line is its "title",
// "id" or "name" field, else prefix + "line N".
func loadJSONLFile(path, rel, prefix, field string, add func(string, string), bad jsonlLoc, single bool) error {
	f, err := os.Open(path)
	if err != nil {
		if single {
			return err
		}
		bad(rel, 0, rel, "unreadable: "+err.Error())
		return nil
	}
	defer f.Close()
	r, err := decompressed(path, f)
	if err != nil {
		bad(rel, 0, rel, "unreadable: "+err.Error())
		return nil
	}
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	for n := 1; ; n++ {
		line, err := br.ReadString('\n')
		if err != nil && err != io.EOF {
			bad(rel, n, prefix+fmt.Sprintf("line %d", n), fmt.Sprintf("unreadable from line %d on (%v): the rest of %s is left out", n, err, rel))
			return nil
		}
		if t := strings.TrimSpace(line); t != "" {
			jsonlLine(t, rel, n, prefix, field, add, bad)
		}
		if err == io.EOF {
			return nil
		}
	}
}

// jsonlLine adds the text of one JSON object or rejects the line.
func jsonlLine(line, rel string, n int, prefix, field string, add func(string, string), bad jsonlLoc) {
	title := prefix + fmt.Sprintf("line %d", n)
	// encoding/json turns a byte that is no UTF-8 into U+FFFD: the text
	// was changed without a word, where a txt: file with the same bytes is
	// rejected.
	if !utf8.ValidString(line) {
		bad(rel, n, title, fmt.Sprintf("invalid UTF-8 at byte %d of the line", invalidAt(line)))
		return
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &obj); err != nil {
		bad(rel, n, title, "not a JSON object: "+err.Error())
		return
	}
	for _, k := range []string{"title", "id", "name"} {
		if v, ok := obj[k]; ok {
			var s string
			if json.Unmarshal(v, &s) == nil && s != "" {
				title = s
			} else {
				title = string(v)
			}
			break
		}
	}
	raw, ok := obj[field]
	if !ok {
		bad(rel, n, title, fmt.Sprintf("no %q field", field))
		return
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		bad(rel, n, title, fmt.Sprintf("field %q is not a string", field))
		return
	}
	if strings.ContainsRune(text, utf8.RuneError) && !hasReplacementChar(raw) {
		// A lone surrogate escape ("\ud800") decodes to U+FFFD as well.
		bad(rel, n, title, fmt.Sprintf("invalid UTF-8: field %q escapes a lone UTF-16 surrogate (\\ud800-\\udfff), which is no character", field))
		return
	}
	add(title, text)
}

// decompressed reads f through gzip or zstd by the name's suffix.
func decompressed(path string, f io.Reader) (io.ReadCloser, error) {
	name := strings.ToLower(path)
	switch {
	case strings.HasSuffix(name, ".gz"):
		return gzip.NewReader(f)
	case strings.HasSuffix(name, ".zst"), strings.HasSuffix(name, ".zstd"):
		d, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	}
	return io.NopCloser(f), nil
}

// hasReplacementChar reports whether the JSON string raw spells U+FFFD
// itself, as the character or as the escape \ufffd.
func hasReplacementChar(raw []byte) bool {
	return strings.ContainsRune(string(raw), utf8.RuneError) || strings.Contains(strings.ToLower(string(raw)), `\ufffd`)
}
