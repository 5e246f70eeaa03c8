package data

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/memo-research/memo/internal/arrowsafe"
)

// loadTxtDir reads every *.txt file under dir (recursively, sorted); the
// title is the path relative to dir.
func loadTxtDir(dir string, add func(string, string), bad func(string, string)) error {
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
			bad(p, err.Error())
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
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		b, err := os.ReadFile(f)
		if err != nil {
			bad(rel, err.Error())
			continue
		}
		add(rel, string(b))
	}
	return nil
}

// loadParquet reads a string column; titles are "row N". A corrupt file is
// an error naming it (arrowsafe), never a panic.
func loadParquet(path, column string, add func(string, string), bad func(string, string)) error {
	// Parquet pages are compressed: let a buffer be up to 64 times the file.
	tbl, err := arrowsafe.ReadParquetFile(path, 64)
	if err != nil {
		return fmt.Errorf("%w (is it a Parquet file?)", err)
	}
	defer tbl.Release()
	row := 0
	return arrowsafe.TableRecords(path, tbl, 1024, func(rec arrow.Record) error {
		return textColumn(rec, column, path, &row, add, bad)
	})
}

// loadArrowText reads a string column of an Arrow IPC file; titles are "row N".
func loadArrowText(path, column string, add func(string, string), bad func(string, string)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	// A user's file may be compressed: let a buffer be up to 64 times the file.
	r, err := arrowsafe.NewFileReader(path, f, nil, 64)
	if err != nil {
		return fmt.Errorf("%w (is it an Arrow IPC file?)", err)
	}
	defer r.Close()
	row := 0
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.Record(i)
		if err != nil {
			return err
		}
		if err := textColumn(rec, column, path, &row, add, bad); err != nil {
			return err
		}
	}
	return nil
}

func textColumn(rec arrow.Record, column, path string, row *int, add func(string, string), bad func(string, string)) error {
	idx := rec.Schema().FieldIndices(column)
	if len(idx) == 0 {
		return fmt.Errorf("%s has no column %q (columns: %s)", path, column, columnNames(rec.Schema()))
	}
	col := rec.Column(idx[0])
	var get func(i int) string
	switch c := col.(type) {
	case *array.String:
		get = c.Value
	case *array.LargeString:
		get = c.Value
	default:
		return fmt.Errorf("%s column %q is %s, want a string column", path, column, col.DataType())
	}
	for i := 0; i < col.Len(); i++ {
		title := fmt.Sprintf("row %d", *row)
		*row++
		if col.IsNull(i) {
			bad(title, "null text")
			continue
		}
		add(title, get(i))
	}
	return nil
}

func columnNames(s *arrow.Schema) string {
	var n []string
	for _, f := range s.Fields() {
		n = append(n, f.Name)
	}
	return strings.Join(n, ", ")
}
