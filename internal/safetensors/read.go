package safetensors

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"unsafe"
)

// MaxHeader bounds the JSON header. Real headers are kilobytes (a few
// hundred bytes per tensor); the bound keeps a corrupt length field from
// making Open allocate gigabytes.
const MaxHeader = 100 << 20

// metadataKey is the header entry that holds string metadata, not a tensor.
const metadataKey = "__metadata__"

// Info describes one tensor of a file. Begin and End are byte offsets into
// the data section, which starts right after the header.
type Info struct {
	Name, DType string
	Shape       []int64
	Begin, End  int64
}

// Numel is the number of elements, the product of the shape (1 for a scalar).
func (i Info) Numel() int64 {
	n := int64(1)
	for _, d := range i.Shape {
		n *= d
	}
	return n
}

// File is an open safetensors file whose header has been checked. Its
// methods may be called from several goroutines at once.
type File struct {
	path  string
	r     io.ReaderAt
	close func() error
	data  int64 // file offset of the data section
	infos []Info
	index map[string]int
	meta  map[string]string
}

// entry is a tensor's header entry as the JSON spells it.
type entry struct {
	DType   string  `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Offsets []int64 `json:"data_offsets"`
}

// Open opens path and checks its header against the file (see the package
// documentation). Errors name path and, where one is at fault, the tensor.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	sf, err := parse(path, f, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	sf.close = f.Close
	return sf, nil
}

// parse reads and checks the header of the size-byte file r, named path in
// errors. It reads nothing past the header.
func parse(path string, r io.ReaderAt, size int64) (*File, error) {
	var lenBuf [8]byte
	if size < 8 {
		return nil, fmt.Errorf("%s: %d bytes, too short for a safetensors header length (truncated or not safetensors)", path, size)
	}
	if _, err := r.ReadAt(lenBuf[:], 0); err != nil {
		return nil, fmt.Errorf("%s: read header length: %w", path, err)
	}
	hl := binary.LittleEndian.Uint64(lenBuf[:])
	// Check the length against the file before allocating for it.
	if hl > MaxHeader || hl > uint64(size-8) {
		return nil, fmt.Errorf("%s: header length %d does not fit a %d-byte file (truncated or not safetensors)", path, hl, size)
	}
	hj := make([]byte, hl)
	if _, err := r.ReadAt(hj, 8); err != nil {
		return nil, fmt.Errorf("%s: read header: %w", path, err)
	}
	if t := bytes.TrimLeft(hj, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("%s: header is not a JSON object (not safetensors)", path)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hj, &raw); err != nil {
		return nil, fmt.Errorf("%s: header is not valid JSON: %w", path, err)
	}
	dataLen := size - 8 - int64(hl)
	sf := &File{path: path, r: r, close: func() error { return nil }, data: 8 + int64(hl), index: make(map[string]int, len(raw))}
	for name, msg := range raw {
		if name == metadataKey {
			if err := json.Unmarshal(msg, &sf.meta); err != nil {
				return nil, fmt.Errorf("%s: %s is not a map of strings: %w", path, metadataKey, err)
			}
			continue
		}
		info, err := checkEntry(name, msg)
		if err != nil {
			return nil, fmt.Errorf("%s: tensor %s: %w", path, name, err)
		}
		if info.End > dataLen {
			return nil, fmt.Errorf("%s: tensor %s: data_offsets [%d, %d) end past the %d data bytes (truncated?)", path, name, info.Begin, info.End, dataLen)
		}
		sf.infos = append(sf.infos, info)
	}
	// Data order; empty tensors sit wherever their offsets say, so ties
	// are broken by end, then name, to make the order deterministic.
	slices.SortFunc(sf.infos, func(a, b Info) int {
		return cmp.Or(cmp.Compare(a.Begin, b.Begin), cmp.Compare(a.End, b.End), cmp.Compare(a.Name, b.Name))
	})
	end := int64(0)
	for i, info := range sf.infos {
		if info.Begin != end {
			what := "a gap before it"
			if info.Begin < end {
				what = "it overlaps the tensor before it"
			}
			return nil, fmt.Errorf("%s: tensor %s: data starts at byte %d, the tensors before it end at %d (%s)", path, info.Name, info.Begin, end, what)
		}
		end = info.End
		sf.index[info.Name] = i
	}
	// Every tensor ends inside the data (checked above), so what is left
	// to catch is data past the last one: a file with something appended,
	// or a header that lost entries.
	if end != dataLen {
		return nil, fmt.Errorf("%s: the header describes %d data bytes, the file holds %d (trailing bytes after the last tensor)", path, end, dataLen)
	}
	return sf, nil
}

// checkEntry decodes one tensor's header entry and checks it on its own:
// a known dtype, a non-negative shape, and offsets spanning exactly the
// shape's bytes.
func checkEntry(name string, msg json.RawMessage) (Info, error) {
	var e entry
	if err := json.Unmarshal(msg, &e); err != nil {
		return Info{}, fmt.Errorf("bad header entry: %w", err)
	}
	size, ok := dtypeSize[e.DType]
	if !ok {
		return Info{}, fmt.Errorf("unknown dtype %q", e.DType)
	}
	if len(e.Offsets) != 2 {
		return Info{}, fmt.Errorf("data_offsets %v: want [begin, end]", e.Offsets)
	}
	if e.Shape == nil {
		e.Shape = []int64{} // a scalar; keep Info.Shape non-nil
	}
	n, err := byteSize(e.Shape, size)
	if err != nil {
		return Info{}, err
	}
	b, en := e.Offsets[0], e.Offsets[1]
	if b < 0 || en < b || en-b != n {
		return Info{}, fmt.Errorf("data_offsets [%d, %d) hold %d bytes, dtype %s shape %v needs %d", b, en, en-b, e.DType, e.Shape, n)
	}
	return Info{Name: name, DType: e.DType, Shape: e.Shape, Begin: b, End: en}, nil
}

// byteSize is the byte size of a tensor of shape and element size, or an
// error for a negative dimension or a size past any file's.
func byteSize(shape []int64, elem int64) (int64, error) {
	n := elem
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %v has a negative dimension", shape)
		}
		if d != 0 && n > math.MaxInt64/d {
			return 0, fmt.Errorf("shape %v is too large", shape)
		}
		n *= d
	}
	return n, nil
}

// Path is the file's path as given to Open.
func (f *File) Path() string { return f.path }

// Names lists the tensors in data order.
func (f *File) Names() []string {
	out := make([]string, len(f.infos))
	for i, info := range f.infos {
		out[i] = info.Name
	}
	return out
}

// Info describes tensor name; ok is false when the file has none by that name.
func (f *File) Info(name string) (Info, bool) {
	i, ok := f.index[name]
	if !ok {
		return Info{}, false
	}
	info := f.infos[i]
	info.Shape = slices.Clone(info.Shape)
	return info, true
}

// Metadata is the header's __metadata__ map (nil when it has none).
func (f *File) Metadata() map[string]string { return f.meta }

// chunk is how many elements of a 16-bit tensor are read per ReadAt: big
// enough that reads stay sequential and fast, small enough that the
// staging buffer adds nothing to a load's peak memory.
const chunk = 1 << 18

// Float32 reads tensor name and converts it to float32: F32 as it is,
// BF16 and F16 exactly (every value of either is a float32). Only that
// tensor's bytes are read, so a load holds one tensor at a time.
func (f *File) Float32(name string) ([]float32, error) {
	info, err := f.floatInfo(name)
	if err != nil {
		return nil, err
	}
	out := make([]float32, info.Numel())
	if err := f.Float32Into(name, out); err != nil {
		return nil, err
	}
	return out, nil
}

// floatInfo is the Info of a tensor Float32 can read.
func (f *File) floatInfo(name string) (Info, error) {
	i, ok := f.index[name]
	if !ok {
		return Info{}, fmt.Errorf("%s: no tensor %s", f.path, name)
	}
	info := f.infos[i]
	if !floatDType(info.DType) {
		return Info{}, fmt.Errorf("%s: tensor %s has dtype %s: memo reads F32, BF16 and F16", f.path, name, info.DType)
	}
	if info.Numel() > math.MaxInt/4 {
		return Info{}, fmt.Errorf("%s: tensor %s: %d elements do not fit in memory", f.path, name, info.Numel())
	}
	return info, nil
}

// Float32Into is Float32 into dst, which must hold exactly the tensor's
// elements: a caller can read straight into a model parameter's memory,
// with no copy and no garbage.
func (f *File) Float32Into(name string, dst []float32) error {
	info, err := f.floatInfo(name)
	if err != nil {
		return err
	}
	n := info.Numel()
	if int64(len(dst)) != n {
		return fmt.Errorf("%s: tensor %s has %d elements, the destination %d", f.path, name, n, len(dst))
	}
	if n == 0 {
		return nil
	}
	off := f.data + info.Begin
	if info.DType == F32 {
		// The file's bytes are the slice's bytes on a little-endian host.
		if err := f.readAt(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 4*n), off); err != nil {
			return fmt.Errorf("%s: tensor %s: %w", f.path, name, err)
		}
		return nil
	}
	buf := make([]byte, 2*min(n, chunk))
	for start := int64(0); start < n; start += chunk {
		m := min(chunk, n-start)
		b := buf[:2*m]
		if err := f.readAt(b, off+2*start); err != nil {
			return fmt.Errorf("%s: tensor %s: %w", f.path, name, err)
		}
		// On a little-endian host the bytes are the uint16s as they lie.
		src := unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), m)
		out := dst[start : start+m]
		if info.DType == BF16 {
			for j, h := range src {
				out[j] = math.Float32frombits(uint32(h) << 16)
			}
		} else {
			for j, h := range src {
				out[j] = f16Table[h]
			}
		}
	}
	return nil
}

// readAt fills b from offset off; the file shrinking after Open shows up
// as an unexpected end of file.
func (f *File) readAt(b []byte, off int64) error {
	_, err := f.r.ReadAt(b, off)
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("file ends before the tensor does (truncated after it was opened?): %w", io.ErrUnexpectedEOF)
	}
	return err
}

// Close closes the file.
func (f *File) Close() error { return f.close() }
