package data

import (
	"fmt"
	"os"

	"github.com/memo-research/memo/internal/arrowsafe"
)

func init() {
	registerSourceKind(sourceKind{
		name:  "arrow",
		usage: "arrow:FILE[#column]",
		form:  pathField,
		read: func(src Source, _ string, r sourceReader) error {
			return loadArrowText(src.Path, src.Field, r.add, r.bad)
		},
		key: oneFileKey,
		check: func(src Source) error {
			f, err := os.Open(src.Path)
			if err != nil {
				return err
			}
			defer f.Close()
			r, err := arrowsafe.NewFileReader(src.Path, f, nil, 64)
			if err != nil {
				return fmt.Errorf("%w (is it an Arrow IPC file?)", err)
			}
			defer r.Close()
			_, err = textField(r.Schema(), src.Field, src.Path)
			return err
		},
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
