package data

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

func init() {
	registerSourceKind(sourceKind{
		name: "moby-dick",
		read: func(_ Source, cache string, r sourceReader) error { return loadMobyDick(cache, r.add, r.bad) },
	})
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
