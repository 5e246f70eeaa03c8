package arrowsafe

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
)

// ValidateRecord checks every column of rec (see Validate) and that each
// column has the record's number of rows.
func ValidateRecord(rec arrow.Record) error {
	if rec.NumRows() < 0 {
		return fmt.Errorf("%w: %d rows", ErrCorrupt, rec.NumRows())
	}
	if int(rec.NumCols()) != rec.Schema().NumFields() {
		return fmt.Errorf("%w: %d columns for %d fields", ErrCorrupt, rec.NumCols(), rec.Schema().NumFields())
	}
	for i, col := range rec.Columns() {
		name := rec.Schema().Field(i).Name
		if int64(col.Len()) != rec.NumRows() {
			return fmt.Errorf("%w: column %q has %d rows, the batch %d", ErrCorrupt, name, col.Len(), rec.NumRows())
		}
		if err := Validate(col); err != nil {
			return fmt.Errorf("%w: column %q: %v", ErrCorrupt, name, err)
		}
	}
	return nil
}

// Validate checks that every accessor of a can be called for each of its
// rows without going outside its buffers: the Arrow library's ValidateFull,
// for the types memo reads. Types memo never reads (views, unions, maps…)
// pass unchecked: the readers skip such columns.
func Validate(a arrow.Array) error {
	return validateData(a.Data(), 0)
}

// maxDepth bounds nesting, as the IPC reader does.
const maxDepth = 64

func validateData(d arrow.ArrayData, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("nested deeper than %d", maxDepth)
	}
	off, n := d.Offset(), d.Len()
	// Lengths come from the file: bound them so that the arithmetic below
	// cannot overflow (no real column has 2^40 values).
	if off < 0 || n < 0 || off > 1<<40 || n > 1<<40 {
		return fmt.Errorf("offset %d, length %d", off, n)
	}
	end := off + n
	bufs := d.Buffers()
	if nulls := d.NullN(); nulls > n {
		return fmt.Errorf("%d nulls in %d values", nulls, n)
	}
	if len(bufs) > 0 && bufs[0] != nil && bufs[0].Len() > 0 && bufs[0].Len() < (end+7)/8 {
		return fmt.Errorf("validity bitmap of %d bytes for %d values", bufs[0].Len(), end)
	}
	buf := func(i int) []byte {
		if i < len(bufs) && bufs[i] != nil {
			return bufs[i].Bytes()
		}
		return nil
	}
	dt := d.DataType()
	switch dt.ID() {
	case arrow.NULL:
		return nil
	case arrow.STRING, arrow.BINARY:
		return offsets(buf(1), off, n, 4, len(buf(2)), "bytes")
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return offsets(buf(1), off, n, 8, len(buf(2)), "bytes")
	case arrow.LIST, arrow.LARGE_LIST:
		width := 4
		if dt.ID() == arrow.LARGE_LIST {
			width = 8
		}
		children := d.Children()
		if len(children) != 1 {
			return fmt.Errorf("list with %d children", len(children))
		}
		if err := offsets(buf(1), off, n, width, children[0].Len(), "values"); err != nil {
			return err
		}
		if err := validateData(children[0], depth+1); err != nil {
			return fmt.Errorf("list values: %w", err)
		}
		return nil
	case arrow.FIXED_SIZE_LIST:
		children := d.Children()
		size := dt.(*arrow.FixedSizeListType).Len()
		if len(children) != 1 || size < 0 || size > 1<<20 || children[0].Len() < end*int(size) {
			return fmt.Errorf("fixed-size list of %d × %d values without as many values", end, size)
		}
		return validateData(children[0], depth+1)
	case arrow.STRUCT:
		for i, c := range d.Children() {
			if c.Len() < end {
				return fmt.Errorf("struct field %d has %d values, want %d", i, c.Len(), end)
			}
			if err := validateData(c, depth+1); err != nil {
				return fmt.Errorf("struct field %d: %w", i, err)
			}
		}
		return nil
	case arrow.DICTIONARY:
		return validateDictionary(d, depth)
	}
	if fw, ok := dt.(arrow.FixedWidthDataType); ok {
		bits := fw.BitWidth()
		if need := (end*bits + 7) / 8; len(buf(1)) < need {
			return fmt.Errorf("%s values: %d bytes for %d values", dt, len(buf(1)), end)
		}
	}
	return nil
}

// offsets checks n+1 offsets of width bytes starting at index off of raw:
// present, not decreasing, from 0 up and at most limit.
func offsets(raw []byte, off, n, width, limit int, what string) error {
	if n == 0 {
		return nil
	}
	if len(raw) < (off+n+1)*width {
		return fmt.Errorf("%d bytes of offsets for %d values", len(raw), off+n)
	}
	var prev int64
	for i := 0; i <= n; i++ {
		p := (off + i) * width
		var o int64
		if width == 4 {
			o = int64(int32(binary.LittleEndian.Uint32(raw[p:])))
		} else {
			o = int64(binary.LittleEndian.Uint64(raw[p:]))
		}
		switch {
		case o < 0:
			return fmt.Errorf("offset %d is %d", off+i, o)
		case i > 0 && o < prev:
			return fmt.Errorf("offset %d (%d) is below the one before (%d)", off+i, o, prev)
		case o > int64(limit):
			return fmt.Errorf("offset %d (%d) is past the %d %s", off+i, o, limit, what)
		}
		prev = o
	}
	return nil
}

// validateDictionary checks the indices, the dictionary, and that every
// index of a valid slot is inside the dictionary.
func validateDictionary(d arrow.ArrayData, depth int) error {
	dt := d.DataType().(*arrow.DictionaryType)
	dict := d.Dictionary()
	if dict == nil {
		return fmt.Errorf("dictionary array without a dictionary")
	}
	if err := validateData(dict, depth+1); err != nil {
		return fmt.Errorf("dictionary: %w", err)
	}
	fw, ok := dt.IndexType.(arrow.FixedWidthDataType)
	if !ok {
		return fmt.Errorf("dictionary index type %s", dt.IndexType)
	}
	width := fw.BitWidth() / 8
	bufs := d.Buffers()
	if len(bufs) < 2 || bufs[1] == nil {
		if d.Len() == 0 {
			return nil
		}
		return fmt.Errorf("dictionary without indices")
	}
	raw := bufs[1].Bytes()
	off, n := d.Offset(), d.Len()
	if width == 0 || len(raw) < (off+n)*width {
		return fmt.Errorf("%d bytes of indices for %d values", len(raw), off+n)
	}
	var valid []byte
	if bufs[0] != nil && bufs[0].Len() > 0 {
		valid = bufs[0].Bytes()
	}
	signed := arrow.IsSignedInteger(dt.IndexType.ID())
	for i := off; i < off+n; i++ {
		if valid != nil && valid[i/8]&(1<<(i%8)) == 0 {
			continue
		}
		var v int64
		p := raw[i*width:]
		switch width {
		case 1:
			v = int64(p[0])
			if signed {
				v = int64(int8(p[0]))
			}
		case 2:
			v = int64(binary.LittleEndian.Uint16(p))
			if signed {
				v = int64(int16(binary.LittleEndian.Uint16(p)))
			}
		case 4:
			v = int64(binary.LittleEndian.Uint32(p))
			if signed {
				v = int64(int32(binary.LittleEndian.Uint32(p)))
			}
		case 8:
			v = int64(binary.LittleEndian.Uint64(p))
		}
		if v < 0 || v >= int64(dict.Len()) {
			return fmt.Errorf("index %d of row %d is outside the dictionary's %d values", v, i-off, dict.Len())
		}
	}
	return nil
}
