package data

import (
	"path/filepath"
	"strings"
)

func init() { registerSourceKind(fetchedCorpus("sotu", loadSOTU)) }

// loadSOTU reads one speech per YEAR_name_party.txt file.
func loadSOTU(dir string, r sourceReader) error {
	files, err := globSorted(filepath.Join(dir, "data"), "[0-9][0-9][0-9][0-9]_*.txt", "speeches")
	if err != nil {
		return err
	}
	readEach(files, r, filepath.Base, func(name string, b []byte) (string, string) {
		return strings.TrimSuffix(name, ".txt"), strings.TrimSpace(string(b)) + "\n"
	})
	return nil
}
