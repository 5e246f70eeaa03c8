package arrowsafe

import (
	"os"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/memo-research/memo/internal/atomicfile"
)

// WriteFile writes n rows to the Arrow IPC file path atomically (a
// temporary name, renamed when complete), batch rows per record batch so
// that readers hold one batch at a time; fill appends row i to the
// builder. No rows still gives a file with the schema and one empty batch.
// The read side is ReadFile.
func WriteFile(path string, schema *arrow.Schema, n, batch int, fill func(b *array.RecordBuilder, i int)) error {
	return WriteBatches(path, schema, n, batch, func(b *array.RecordBuilder, start, end int) {
		for i := start; i < end; i++ {
			fill(b, i)
		}
	})
}

// WriteBatches is WriteFile for a fill that appends rows [start, end) at
// once, a column at a time.
func WriteBatches(path string, schema *arrow.Schema, n, batch int, fill func(b *array.RecordBuilder, start, end int)) error {
	return atomicfile.Create(path, func(f *os.File) error {
		w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator))
		if err != nil {
			return err
		}
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		for start := 0; start == 0 || start < n; start += batch {
			fill(b, start, min(start+batch, n))
			rec := b.NewRecord()
			err := w.Write(rec)
			rec.Release()
			if err != nil {
				return err
			}
		}
		return w.Close()
	})
}
