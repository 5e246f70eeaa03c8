package data

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// fetchedCorpus is the kind of a built-in corpus that `memo data fetch`
// puts in the cache under name: read gets the fetched package's directory.
// Its cache key is every file of that package (sourceKey's default).
func fetchedCorpus(name string, read func(dir string, r sourceReader) error) sourceKind {
	return sourceKind{
		name: name,
		read: func(_ Source, cache string, r sourceReader) error {
			dir, err := packageDir(cache, name)
			if err != nil {
				return err
			}
			return read(dir, r)
		},
	}
}

// globSorted is the files in dir matching pattern, sorted by name; none is
// an error naming what was looked for.
func globSorted(dir, pattern, what string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no %s in %s", what, dir)
	}
	sort.Strings(files)
	return files, nil
}

// readEach reads files in order, one document each: name is a file's name
// for titles and rejections, doc turns that name and the file's bytes into
// the document. A file that cannot be read is rejected, and the rest go on.
func readEach(files []string, r sourceReader, name func(path string) string, doc func(name string, b []byte) (title, text string)) {
	for _, f := range files {
		n := name(f)
		b, err := os.ReadFile(f)
		if err != nil {
			r.bad(n, err.Error())
			continue
		}
		r.add(doc(n, b))
	}
}
