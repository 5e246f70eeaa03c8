package data

import (
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

func init() { registerSourceKind(fetchedCorpus("moby-dick", loadMobyDick)) }

// loadMobyDick reads chapter_N.txt in chapter order, then the epilogue; the
// first line is the chapter heading, which becomes the title.
func loadMobyDick(dir string, r sourceReader) error {
	data := filepath.Join(dir, "data")
	files, err := globSorted(data, "chapter_*.txt", "chapter_*.txt")
	if err != nil {
		return err
	}
	num := func(f string) int {
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "chapter_"), ".txt"))
		return n
	}
	sort.Slice(files, func(i, j int) bool { return num(files[i]) < num(files[j]) })
	files = append(files, filepath.Join(data, "epilogue.txt"))
	readEach(files, r, filepath.Base, func(_ string, b []byte) (string, string) {
		head, body, _ := strings.Cut(strings.TrimLeft(string(b), "\n"), "\n")
		return strings.TrimSpace(head), strings.TrimSpace(body) + "\n"
	})
	return nil
}
