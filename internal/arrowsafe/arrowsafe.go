// Package arrowsafe reads Arrow IPC and Parquet files that may be corrupt
// without letting the Arrow library panic or hand back arrays whose accessors
// would panic later.
//
// The Arrow Go library trusts the lengths and offsets in a file: a flipped
// byte in a body length, a string offset or a list offset makes it panic
// ("slice bounds out of range", "string offset buffer must have at least …")
// when a record is loaded, or later in Value(i). It also allocates whatever a
// corrupt footer asks for before reading it. Version 17 has no ValidateFull
// for the types memo stores, so this package does the equivalent: every
// library call runs under recover, allocations are capped by the file's size,
// and every record is checked (buffer sizes, monotone offsets inside their
// value buffers, dictionary indices inside the dictionary) before a caller
// reads a value. Errors name the file.
package arrowsafe

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// ErrCorrupt is wrapped by every error that reports corrupt data (as opposed
// to a file that cannot be opened at all).
var ErrCorrupt = errors.New("corrupt data")

// Guard runs fn and turns a panic inside it into an error wrapping
// ErrCorrupt; the caller names the file.
func Guard(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: the Arrow library failed on it (%v)", ErrCorrupt, r)
		}
	}()
	return fn()
}

// capped is an allocator that refuses (by panicking, which Guard turns into
// an error) any single allocation larger than limit: a corrupt length would
// otherwise make the Go runtime abort the process with "out of memory",
// which no recover catches.
type capped struct {
	memory.Allocator
	limit int
}

func (a capped) check(size int) {
	if size < 0 || size > a.limit {
		panic(fmt.Sprintf("a buffer of %d bytes in a file of at most %d", size, a.limit))
	}
}

func (a capped) Allocate(size int) []byte { a.check(size); return a.Allocator.Allocate(size) }

func (a capped) Reallocate(size int, b []byte) []byte {
	a.check(size)
	return a.Allocator.Reallocate(size, b)
}

// Allocator is an allocator for reading src that refuses any buffer larger
// than the file itself (for files that are not compressed).
func Allocator(src Source) memory.Allocator {
	n, _ := size(src)
	return capped{memory.DefaultAllocator, int(n) + 4096}
}

// Source is what the readers read from: an *os.File or a *bytes.Reader.
type Source interface {
	io.Reader
	io.ReaderAt
	io.Seeker
}

// size is the number of bytes in r.
func size(r Source) (int64, error) {
	n, err := r.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, err
	}
	_, err = r.Seek(0, io.SeekStart)
	return n, err
}

// FileReader is an Arrow IPC file reader whose records are validated.
type FileReader struct {
	path string
	r    *ipc.FileReader
	n    int
}

// NewFileReader opens the IPC file in src (path names it in errors). With a
// schema, a file with another schema is refused. expand bounds how much
// larger than the file one decompressed buffer may be (1 for files memo
// writes, which are never compressed).
func NewFileReader(path string, src Source, schema *arrow.Schema, expand int) (*FileReader, error) {
	n, err := size(src)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	opts := []ipc.Option{ipc.WithAllocator(capped{memory.DefaultAllocator, int(n)*max(expand, 1) + 4096})}
	if schema != nil {
		opts = append(opts, ipc.WithSchema(schema))
	}
	fr := &FileReader{path: path}
	err = Guard(func() error {
		if err := checkFooter(src, n); err != nil {
			return fmt.Errorf("%w: footer: %v", ErrCorrupt, err)
		}
		var err error
		if fr.r, err = ipc.NewFileReader(src, opts...); err != nil {
			return err
		}
		// The footer's flatbuffer is only decoded on use: a corrupt one
		// panics here, not at open.
		fr.n = fr.r.NumRecords()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return fr, nil
}

// Schema is the file's schema.
func (f *FileReader) Schema() *arrow.Schema { return f.r.Schema() }

// NumRecords is the number of record batches in the footer.
func (f *FileReader) NumRecords() int { return f.n }

// Close releases the reader.
func (f *FileReader) Close() error {
	if err := Guard(f.r.Close); err != nil {
		return fmt.Errorf("read %s: %w", f.path, err)
	}
	return nil
}

// Record loads batch i and validates it; it stays valid until the next call.
func (f *FileReader) Record(i int) (arrow.Record, error) {
	var rec arrow.Record
	err := Guard(func() error {
		var err error
		if rec, err = f.r.Record(i); err != nil {
			return err
		}
		return ValidateRecord(rec)
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: record batch %d: %w", f.path, i, err)
	}
	return rec, nil
}

// ReadFile reads every record batch of the IPC file at path through fn.
func ReadFile(path string, schema *arrow.Schema, fn func(rec arrow.Record) error) error {
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer fh.Close()
	return Read(path, fh, schema, fn)
}

// Read is ReadFile on an open source.
func Read(path string, src Source, schema *arrow.Schema, fn func(rec arrow.Record) error) error {
	r, err := NewFileReader(path, src, schema, 1)
	if err != nil {
		return err
	}
	defer r.Close()
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.Record(i)
		if err != nil {
			return err
		}
		if err := fn(rec); err != nil {
			return fmt.Errorf("read %s: record batch %d: %w", path, i, err)
		}
	}
	return nil
}

// ReadStream reads every record batch of the Arrow IPC stream in src
// through fn, each validated first; errors name path.
func ReadStream(path string, src Source, fn func(rec arrow.Record) error) error {
	err := Guard(func() error {
		if err := CheckStream(src); err != nil {
			return fmt.Errorf("%w: schema message: %v", ErrCorrupt, err)
		}
		r, err := ipc.NewReader(src, ipc.WithAllocator(Allocator(src)))
		if err != nil {
			return fmt.Errorf("not an Arrow IPC stream: %w", err)
		}
		defer r.Release()
		for r.Next() {
			if err := ValidateRecord(r.Record()); err != nil {
				return err
			}
			if err := fn(r.Record()); err != nil {
				return err
			}
		}
		if err := r.Err(); err != nil && !errors.Is(err, os.ErrClosed) {
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// ReadParquet reads the whole Parquet file in src into a table whose chunks
// are validated. expand bounds how much larger than the file one buffer may
// be (Parquet pages are compressed, so larger than 1).
func ReadParquet(path string, src Source, expand int) (arrow.Table, error) {
	n, err := size(src)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	mem := capped{memory.NewGoAllocator(), int(n)*max(expand, 1) + 1<<20}
	var tbl arrow.Table
	err = Guard(func() error {
		// pqarrow.ReadTable reads each column in a goroutine of its own, where
		// a panic cannot be recovered here: read them one by one instead.
		pf, fr, schema, err := openParquet(src, mem)
		if err != nil {
			return err
		}
		defer pf.Close()
		groups := make([]int, pf.NumRowGroups())
		for i := range groups {
			groups[i] = i
		}
		cols := make([]arrow.Column, schema.NumFields())
		for i := range cols {
			cr, err := fr.GetColumn(context.Background(), i)
			if err != nil {
				return err
			}
			chunked, err := fr.ReadColumn(groups, cr)
			if err != nil {
				return fmt.Errorf("column %q: %w", schema.Field(i).Name, err)
			}
			cols[i] = *arrow.NewColumn(schema.Field(i), chunked)
			chunked.Release()
		}
		tbl = array.NewTable(schema, cols, -1)
		for i := range cols {
			cols[i].Release()
		}
		for i := 0; i < int(tbl.NumCols()); i++ {
			col := tbl.Column(i)
			for _, chunk := range col.Data().Chunks() {
				if err := Validate(chunk); err != nil {
					return fmt.Errorf("%w: column %q: %v", ErrCorrupt, col.Name(), err)
				}
			}
		}
		return nil
	})
	if err != nil {
		if tbl != nil {
			tbl.Release()
		}
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return tbl, nil
}

// openParquet opens the Parquet file in src and reads its schema: the
// footer alone. The caller closes pf, and calls it under Guard.
func openParquet(src Source, mem memory.Allocator) (pf *file.Reader, fr *pqarrow.FileReader, schema *arrow.Schema, err error) {
	pf, err = file.NewParquetReader(src, file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		return nil, nil, nil, err
	}
	defer func() {
		if err != nil {
			pf.Close()
		}
	}()
	// A Parquet writer that stores the Arrow schema (memo's does) puts it
	// in the metadata as a base64 IPC stream, which pqarrow hands to the
	// IPC reader: check it as any stream.
	if v := pf.MetaData().KeyValueMetadata().FindValue("ARROW:schema"); v != nil {
		decoded, derr := base64.StdEncoding.DecodeString(*v)
		if len(decoded) == 0 || derr != nil {
			decoded, derr = base64.RawStdEncoding.DecodeString(*v)
		}
		if derr == nil {
			if cerr := CheckStream(bytes.NewReader(decoded)); cerr != nil {
				return nil, nil, nil, fmt.Errorf("%w: the Arrow schema in the metadata: %v", ErrCorrupt, cerr)
			}
		}
	}
	if fr, err = pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, mem); err != nil {
		return nil, nil, nil, err
	}
	if schema, err = fr.Schema(); err != nil {
		return nil, nil, nil, err
	}
	return pf, fr, schema, nil
}

// ParquetSchema is the Arrow schema of the Parquet file at path, from its
// footer alone: what a check before reading it needs.
func ParquetSchema(path string) (*arrow.Schema, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer fh.Close()
	n, err := size(fh)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var schema *arrow.Schema
	err = Guard(func() error {
		pf, _, s, err := openParquet(fh, capped{memory.NewGoAllocator(), int(n) + 1<<20})
		if err != nil {
			return err
		}
		schema = s
		return pf.Close()
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return schema, nil
}

// ReadParquetFile is ReadParquet on the file at path.
func ReadParquetFile(path string, expand int) (arrow.Table, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer fh.Close()
	return ReadParquet(path, fh, expand)
}

// TableRecords calls fn with each record of tbl, rows at a time.
func TableRecords(path string, tbl arrow.Table, rows int64, fn func(rec arrow.Record) error) error {
	err := Guard(func() error {
		tr := array.NewTableReader(tbl, rows)
		defer tr.Release()
		for tr.Next() {
			if err := fn(tr.Record()); err != nil {
				return err
			}
		}
		return tr.Err()
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}
