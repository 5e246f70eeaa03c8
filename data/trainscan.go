package data

import (
	"fmt"
	"path/filepath"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/memo-research/memo/internal/runfiles"
)

// ScanTrainDocs calls fn for each document of the training stream once,
// in tokens.arrow's order, with the number of times an epoch holds it
// (a target's repetitions; a background document's passes, pretraining
// passes included): what a count of the training corpus weighs it by.
// Documents an epoch never holds are left out. It
// holds a doc_id and a count a training document, and one record batch
// of tokens; ids is only valid during the call.
func (d *Dataset) ScanTrainDocs(fn func(docID int64, reps int32, ids []int32) error) error {
	train := map[int64]int32{}
	err := scanArrow(filepath.Join(d.dir, "docs.arrow"), runfiles.DocsSchema, func(rec arrow.Record) error {
		ids := rec.Column(0).(*array.Int64)
		split := rec.Column(5).(*array.String)
		reps := rec.Column(6).(*array.Int32)
		for i := 0; i < int(rec.NumRows()); i++ {
			ok, r := d.trainedAs(ids.Value(i), split.Value(i), reps.Value(i))
			if split.Value(i) == SplitBackground {
				r += int32(d.report.Config.PretrainPasses)
			}
			if ok && r > 0 {
				if _, dup := train[ids.Value(i)]; dup {
					return fmt.Errorf("read %s: doc_id %d appears twice; the file is corrupt, rebuild it with `memo data build`", d.dir, ids.Value(i))
				}
				train[ids.Value(i)] = r
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return d.ScanTokens(func(id int64, ids []int32) error {
		if r, ok := train[id]; ok {
			return fn(id, r, ids)
		}
		return nil
	})
}

// OpenDir opens the dataset whose files are in dir itself (a run's data/
// or a dataset-cache entry), as Open opens runDir/data.
func OpenDir(dir string) (*Dataset, error) { return openDir(dir) }
