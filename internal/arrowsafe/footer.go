package arrowsafe

import (
	"encoding/binary"
	"fmt"
	"io"
)

// The Arrow library sizes Go slices by the lengths of the footer's
// flatbuffer vectors (the schema's fields, a field's children, the custom
// metadata) before it reads them: one flipped byte there asks the runtime for
// hundreds of gigabytes and the process dies with "out of memory", which no
// recover catches. checkFooter walks the footer first and checks that each
// vector it will see fits inside the footer. Everything else the library
// reads from the footer is indexed, and an index past the end panics, which
// Guard turns into an error.

// footerSlots etc. are the field numbers of Arrow's File.fbs and Schema.fbs.
const (
	footerSchema        = 1
	footerDictionaries  = 2
	footerRecordBatches = 3
	footerMetadata      = 4
	schemaFields        = 1
	schemaMetadata      = 2
	schemaFeatures      = 3
	fieldName           = 0
	fieldTypeType       = 2
	fieldType           = 3
	fieldDictionary     = 4
	fieldChildren       = 5
	fieldMetadata       = 6
	typeTimestamp       = 10
	typeUnion           = 14
	blockSize           = 24 // struct Block { offset: long; metaDataLength: int; bodyLength: long }
	maxTables           = 1 << 16
	messageHeader       = 2 // Message.fbs: version, header_type, header, bodyLength, custom_metadata
	messageBodyLength   = 3
	messageMetadata     = 4
)

// fb is a flatbuffer being checked; tables counts the tables visited, so
// that offsets pointing back at a parent cannot loop.
type fb struct {
	buf    []byte
	tables int
}

func (b *fb) u32(pos int) (int, error) {
	if pos < 0 || pos+4 > len(b.buf) {
		return 0, fmt.Errorf("offset %d outside the %d-byte footer", pos, len(b.buf))
	}
	return int(binary.LittleEndian.Uint32(b.buf[pos:])), nil
}

// table checks the table at pos and its vtable; it returns the vtable's
// position and length.
func (b *fb) table(pos int) (vt, vlen int, err error) {
	if b.tables++; b.tables > maxTables {
		return 0, 0, fmt.Errorf("more than %d tables", maxTables)
	}
	soff, err := b.u32(pos)
	if err != nil {
		return 0, 0, err
	}
	vt = pos - int(int32(soff))
	if vt < 0 || vt+4 > len(b.buf) {
		return 0, 0, fmt.Errorf("vtable at %d outside the footer", vt)
	}
	vlen = int(binary.LittleEndian.Uint16(b.buf[vt:]))
	tlen := int(binary.LittleEndian.Uint16(b.buf[vt+2:]))
	if vlen < 4 || vt+vlen > len(b.buf) || pos+tlen > len(b.buf) {
		return 0, 0, fmt.Errorf("table at %d overruns the footer", pos)
	}
	return vt, vlen, nil
}

// ref is the absolute position a reference field of the table at pos points
// to, or -1 when the field is absent.
func (b *fb) ref(pos, slot int) (int, error) {
	vt, vlen, err := b.table(pos)
	if err != nil {
		return 0, err
	}
	b.tables-- // table was counted by the caller's visit
	// As flatbuffers reads it: a slot is present when its offset in the
	// vtable is below the vtable's length, even if its two bytes overrun it.
	if 4+2*slot >= vlen {
		return -1, nil
	}
	if vt+4+2*slot+2 > len(b.buf) {
		return 0, fmt.Errorf("vtable at %d overruns the footer", vt)
	}
	off := int(binary.LittleEndian.Uint16(b.buf[vt+4+2*slot:]))
	if off == 0 {
		return -1, nil
	}
	rel, err := b.u32(pos + off)
	if err != nil {
		return 0, err
	}
	return pos + off + rel, nil
}

// vector checks the vector in field slot of the table at pos, of elements
// elem bytes wide, and returns its start and length (-1, 0 when absent).
func (b *fb) vector(pos, slot, elem int) (start, n int, err error) {
	at, err := b.ref(pos, slot)
	if err != nil || at < 0 {
		return -1, 0, err
	}
	if n, err = b.u32(at); err != nil {
		return 0, 0, err
	}
	if n > (len(b.buf)-at-4)/elem {
		return 0, 0, fmt.Errorf("a vector of %d %d-byte elements in a %d-byte footer", n, elem, len(b.buf))
	}
	return at + 4, n, nil
}

// tables checks each table of the vector of tables in field slot.
func (b *fb) tableVector(pos, slot int, each func(pos int) error) error {
	start, n, err := b.vector(pos, slot, 4)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		rel, _ := b.u32(start + 4*i)
		at := start + 4*i + rel
		if _, _, err := b.table(at); err != nil {
			return err
		}
		if err := each(at); err != nil {
			return err
		}
	}
	return nil
}

func (b *fb) keyValues(pos, slot int) error {
	return b.tableVector(pos, slot, func(kv int) error {
		if _, _, err := b.vector(kv, 0, 1); err != nil {
			return err
		}
		_, _, err := b.vector(kv, 1, 1)
		return err
	})
}

func (b *fb) field(pos, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("fields nested deeper than %d", maxDepth)
	}
	if _, _, err := b.vector(pos, fieldName, 1); err != nil {
		return err
	}
	if err := b.keyValues(pos, fieldMetadata); err != nil {
		return err
	}
	if t, err := b.ref(pos, fieldType); err != nil {
		return err
	} else if t >= 0 {
		if _, _, err := b.table(t); err != nil {
			return err
		}
		kind := -1
		if vt, vlen, _ := b.table(pos); 4+2*fieldTypeType < vlen && vt+4+2*fieldTypeType+2 <= len(b.buf) {
			if off := int(binary.LittleEndian.Uint16(b.buf[vt+4+2*fieldTypeType:])); off != 0 && pos+off < len(b.buf) {
				kind = int(b.buf[pos+off])
			}
		}
		switch kind {
		case typeTimestamp: // timezone
			if _, _, err := b.vector(t, 1, 1); err != nil {
				return err
			}
		case typeUnion: // typeIds
			if _, _, err := b.vector(t, 1, 4); err != nil {
				return err
			}
		}
	}
	if d, err := b.ref(pos, fieldDictionary); err != nil {
		return err
	} else if d >= 0 {
		if _, _, err := b.table(d); err != nil {
			return err
		}
		if it, err := b.ref(d, 1); err != nil {
			return err
		} else if it >= 0 {
			if _, _, err := b.table(it); err != nil {
				return err
			}
		}
	}
	return b.tableVector(pos, fieldChildren, func(c int) error { return b.field(c, depth+1) })
}

// checkFooter checks the footer of an IPC file of size bytes in src. A file
// too short to have one, or without the magic, is left to the library, which
// says so.
func checkFooter(src Source, size int64) error {
	const magic = "ARROW1"
	if size < int64(len(magic))*2+4 {
		return nil
	}
	tail := make([]byte, len(magic)+4)
	if _, err := src.ReadAt(tail, size-int64(len(tail))); err != nil || string(tail[4:]) != magic {
		return nil
	}
	n := int64(binary.LittleEndian.Uint32(tail))
	if n <= 0 || n+int64(len(tail)) > size {
		return nil
	}
	b := &fb{buf: make([]byte, n)}
	if _, err := src.ReadAt(b.buf, size-int64(len(tail))-n); err != nil {
		return err
	}
	root, err := b.u32(0)
	if err != nil {
		return err
	}
	if _, _, err := b.table(root); err != nil {
		return err
	}
	for _, slot := range []int{footerDictionaries, footerRecordBatches} {
		if _, _, err := b.vector(root, slot, blockSize); err != nil {
			return err
		}
	}
	if err := b.keyValues(root, footerMetadata); err != nil {
		return err
	}
	schema, err := b.ref(root, footerSchema)
	if err != nil || schema < 0 {
		return err
	}
	return b.schema(schema)
}

// CheckStream walks the messages of an IPC stream in src before the
// library reads it, and rewinds src: the library allocates each message's
// metadata by the length in its prefix (up to 2 GiB) and sizes slices by the
// schema's vectors, so each length must fit in what is left of the stream,
// and the schema message is checked the way checkFooter checks a file's
// footer. Call it (under Guard) before ipc.NewReader.
func CheckStream(src Source) error {
	size, err := src.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	defer src.Seek(0, io.SeekStart)
	head := make([]byte, 8)
	for pos, first := int64(0), true; pos+4 <= size; first = false {
		n := int64(4)
		if pos+8 <= size {
			n = 8
		}
		if _, err := src.ReadAt(head[:n], pos); err != nil {
			return err
		}
		length, at := int64(binary.LittleEndian.Uint32(head)), pos+4
		if length == 0xFFFFFFFF { // continuation marker, then the length
			if n < 8 {
				return fmt.Errorf("stream cut after byte %d", pos)
			}
			length, at = int64(binary.LittleEndian.Uint32(head[4:])), pos+8
		}
		if length == 0 {
			return nil // end of stream
		}
		if length > size-at {
			return fmt.Errorf("message at byte %d of %d bytes, past the end of the %d-byte stream", pos, length, size)
		}
		b := &fb{buf: make([]byte, length)}
		if _, err := src.ReadAt(b.buf, at); err != nil {
			return err
		}
		root, err := b.u32(0)
		if err != nil {
			return err
		}
		vt, vlen, err := b.table(root)
		if err != nil {
			return err
		}
		if err := b.keyValues(root, messageMetadata); err != nil {
			return err
		}
		var body int64
		if slot := 4 + 2*messageBodyLength; slot < vlen {
			if vt+slot+2 > len(b.buf) {
				return fmt.Errorf("message at byte %d: vtable overruns its metadata", pos)
			}
			if off := int(binary.LittleEndian.Uint16(b.buf[vt+slot:])); off != 0 {
				if root+off+8 > len(b.buf) {
					return fmt.Errorf("message at byte %d: body length outside its metadata", pos)
				}
				body = int64(binary.LittleEndian.Uint64(b.buf[root+off:]))
			}
		}
		if body < 0 || body > size-at-length {
			return fmt.Errorf("message at byte %d: a body of %d bytes past the end of the %d-byte stream", pos, body, size)
		}
		if first {
			header, err := b.ref(root, messageHeader)
			if err != nil {
				return err
			}
			if header >= 0 {
				if err := b.schema(header); err != nil {
					return err
				}
			}
		}
		pos = at + length + body
	}
	return nil
}

// schema checks the Schema table at pos.
func (b *fb) schema(schema int) error {
	if _, _, err := b.table(schema); err != nil {
		return err
	}
	if err := b.keyValues(schema, schemaMetadata); err != nil {
		return err
	}
	if _, _, err := b.vector(schema, schemaFeatures, 8); err != nil {
		return err
	}
	return b.tableVector(schema, schemaFields, func(f int) error { return b.field(f, 0) })
}
