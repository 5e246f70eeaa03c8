package data

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func init() {
	registerSourceKind(sourceKind{
		name: "sotu",
		read: func(_ Source, cache string, r sourceReader) error { return loadSOTU(cache, r.add, r.bad) },
	})
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
