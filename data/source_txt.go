package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func init() {
	registerSourceKind(sourceKind{
		name:  "txt",
		usage: "txt:DIR",
		form:  pathOnly,
		read:  func(src Source, _ string, r sourceReader) error { return loadTxtDir(src.Path, r) },
		reads: isTxtName,
		key: func(src Source, _ string) ([]keyedFile, error) {
			files, err := walkFiles(src.Path, isTxtName)
			return hashFiles(src, src.Path, files), err
		},
		check: func(src Source) error {
			st, err := os.Stat(src.Path)
			if err != nil {
				return err
			}
			if !st.IsDir() {
				return fmt.Errorf("%s is not a directory (txt: reads every .txt file under a directory)", src.Path)
			}
			found := errors.New("found")
			err = filepath.WalkDir(src.Path, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && strings.EqualFold(filepath.Ext(p), ".txt") {
					return found
				}
				return nil
			})
			if err != found {
				return fmt.Errorf("no .txt files under %s", src.Path)
			}
			return nil
		},
	})
}

// isTxtName reports whether txt: reads a file of this name.
func isTxtName(name string) bool { return strings.EqualFold(filepath.Ext(name), ".txt") }

// loadTxtDir reads every *.txt file under dir (recursively, sorted); the
// title is the path relative to dir.
func loadTxtDir(dir string, r sourceReader) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			r.bad(p, err.Error())
			return nil
		}
		if !d.IsDir() && strings.HasSuffix(strings.ToLower(d.Name()), ".txt") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no .txt files under %s", dir)
	}
	sort.Strings(files)
	rel := func(f string) string { p, _ := filepath.Rel(dir, f); return p }
	readEach(files, r, rel, func(name string, b []byte) (string, string) { return name, string(b) })
	return nil
}
