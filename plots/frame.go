package plots

import (
	"errors"
	"fmt"
	"os"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"

	"github.com/memo-research/memo/internal/arrowsafe"
)

// frame is a small column store: the handful of columns a figure needs, copied
// out of Arrow so that nothing here holds Arrow memory past the read.
type frame struct {
	n      int
	floats map[string][]float64
	strs   map[string][]string
	bools  map[string][]bool
}

func newFrame() *frame {
	return &frame{floats: map[string][]float64{}, strs: map[string][]string{}, bools: map[string][]bool{}}
}

// col returns the first of names present as a numeric column.
func (f *frame) col(names ...string) ([]float64, string, bool) {
	for _, n := range names {
		if v, ok := f.floats[n]; ok {
			return v, n, true
		}
	}
	return nil, "", false
}

func (f *frame) str(names ...string) ([]string, bool) {
	for _, n := range names {
		if v, ok := f.strs[n]; ok {
			return v, true
		}
	}
	return nil, false
}

// boolean reads a bool column, or a numeric one as value != 0.
func (f *frame) boolean(names ...string) ([]bool, bool) {
	for _, n := range names {
		if v, ok := f.bools[n]; ok {
			return v, true
		}
		if v, ok := f.floats[n]; ok {
			b := make([]bool, len(v))
			for i, x := range v {
				b[i] = x != 0
			}
			return b, true
		}
	}
	return nil, false
}

// add appends one record; columns of types a figure cannot use (lists) are skipped.
func (f *frame) add(rec arrow.Record) error {
	for i, field := range rec.Schema().Fields() {
		name := field.Name
		if err := f.addColumn(name, rec.Column(i)); err != nil {
			return fmt.Errorf("column %s: %w", name, err)
		}
	}
	f.n += int(rec.NumRows())
	return nil
}

func (f *frame) addColumn(name string, a arrow.Array) error {
	n := a.Len()
	switch c := a.(type) {
	case *array.Float64:
		for i := 0; i < n; i++ {
			f.floats[name] = append(f.floats[name], nullNaN(c.IsNull(i), c.Value(i)))
		}
	case *array.Float32:
		for i := 0; i < n; i++ {
			f.floats[name] = append(f.floats[name], nullNaN(c.IsNull(i), float64(c.Value(i))))
		}
	case *array.Int64:
		for i := 0; i < n; i++ {
			f.floats[name] = append(f.floats[name], nullNaN(c.IsNull(i), float64(c.Value(i))))
		}
	case *array.Int32:
		for i := 0; i < n; i++ {
			f.floats[name] = append(f.floats[name], nullNaN(c.IsNull(i), float64(c.Value(i))))
		}
	case *array.Int16:
		for i := 0; i < n; i++ {
			f.floats[name] = append(f.floats[name], nullNaN(c.IsNull(i), float64(c.Value(i))))
		}
	case *array.Int8:
		for i := 0; i < n; i++ {
			f.floats[name] = append(f.floats[name], nullNaN(c.IsNull(i), float64(c.Value(i))))
		}
	case *array.Uint32:
		for i := 0; i < n; i++ {
			f.floats[name] = append(f.floats[name], nullNaN(c.IsNull(i), float64(c.Value(i))))
		}
	case *array.Uint64:
		for i := 0; i < n; i++ {
			f.floats[name] = append(f.floats[name], nullNaN(c.IsNull(i), float64(c.Value(i))))
		}
	case *array.Boolean:
		for i := 0; i < n; i++ {
			f.bools[name] = append(f.bools[name], !c.IsNull(i) && c.Value(i))
		}
	case *array.String:
		for i := 0; i < n; i++ {
			f.strs[name] = append(f.strs[name], c.Value(i))
		}
	case *array.LargeString:
		for i := 0; i < n; i++ {
			f.strs[name] = append(f.strs[name], c.Value(i))
		}
	case *array.Dictionary:
		dict, ok := c.Dictionary().(*array.String)
		if !ok {
			return nil
		}
		for i := 0; i < n; i++ {
			f.strs[name] = append(f.strs[name], dict.Value(c.GetValueIndex(i)))
		}
	}
	return nil
}

func nullNaN(null bool, v float64) float64 {
	if null {
		return nanValue
	}
	return v
}

// readArrow reads an Arrow IPC file, falling back to the stream format so that
// either writer convention works. Each batch is validated (arrowsafe) before
// a value is read, so a corrupt file is an error naming it, never a panic.
func readArrow(path string) (*frame, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	f := newFrame()
	if r, err := arrowsafe.NewFileReader(path, fh, nil, 1); err == nil {
		defer r.Close()
		for i := 0; i < r.NumRecords(); i++ {
			rec, err := r.Record(i)
			if err != nil {
				return nil, err
			}
			if err := f.add(rec); err != nil {
				return nil, fmt.Errorf("read %s: %w", path, err)
			}
		}
		return f, nil
	}
	if _, err := fh.Seek(0, 0); err != nil {
		return nil, err
	}
	err = arrowsafe.Guard(func() error {
		if err := arrowsafe.CheckStream(fh); err != nil {
			return fmt.Errorf("%w: schema message: %v", arrowsafe.ErrCorrupt, err)
		}
		r, err := ipc.NewReader(fh, ipc.WithAllocator(arrowsafe.Allocator(fh)))
		if err != nil {
			return fmt.Errorf("neither an Arrow IPC file nor stream: %w", err)
		}
		defer r.Release()
		for r.Next() {
			if err := arrowsafe.ValidateRecord(r.Record()); err != nil {
				return err
			}
			if err := f.add(r.Record()); err != nil {
				return err
			}
		}
		if err := r.Err(); err != nil && !errors.Is(err, os.ErrClosed) {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return f, nil
}

func readParquet(path string) (*frame, error) {
	tbl, err := arrowsafe.ReadParquetFile(path, 64)
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	f := newFrame()
	return f, arrowsafe.TableRecords(path, tbl, 1<<16, f.add)
}
