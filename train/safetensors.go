package train

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"unsafe"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// The safetensors format (Hugging Face): an 8-byte little-endian header
// length N, N bytes of JSON mapping each tensor name to its dtype, shape and
// [begin, end) byte offsets into the data that follows, an optional
// "__metadata__" map of strings, then the raw little-endian data. memo
// writes float32 ("F32") only and pads the header with spaces to a multiple
// of 8 bytes, as the reference implementation does.

type namedTensor struct {
	Name   string
	Tensor *ts.Tensor
}

// modelTensors names g's parameters with their Hugging Face tensor names.
func modelTensors(g *model.GPT) []namedTensor {
	out := make([]namedTensor, len(g.Params()))
	for i, p := range g.Params() {
		out[i] = namedTensor{p.Name, p.Tensor}
	}
	return out
}

type stEntry struct {
	DType   string  `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Offsets [2]int  `json:"data_offsets"`
}

// stTensor is one tensor read from a file.
type stTensor struct {
	Shape []int64
	Data  []byte // little-endian float32
}

// maxHeader bounds the JSON header so a corrupt length cannot ask for gigabytes.
const maxHeader = 100 << 20

func init() {
	// The data is copied as the host lays out float32; refuse to run where
	// that is not little-endian rather than write files others misread.
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		panic("train: safetensors I/O assumes a little-endian host")
	}
}

// floatsOf copies a float32 tensor's values to Go memory.
func floatsOf(t *ts.Tensor) ([]float32, error) {
	if t.DType() != gotch.Float {
		return nil, fmt.Errorf("dtype %v: want float32", t.DType())
	}
	c := t.MustContiguous(false)
	defer c.MustDrop()
	if c.MustDevice().IsCuda() { // gotch reports the CPU as {CPU 1}, not gotch.CPU
		cpu := c.MustTo(gotch.CPU, false)
		defer cpu.MustDrop()
		c = cpu
	}
	n := c.Numel()
	out := make([]float32, n)
	if n == 0 {
		return out, nil
	}
	if err := c.CopyData(out, n); err != nil {
		return nil, err
	}
	return out, nil
}

func bytesOf(f []float32) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f))
}

// writeSafetensors writes tensors in the given order to path.
func writeSafetensors(path string, tensors []namedTensor, meta map[string]string) error {
	header := map[string]any{}
	if len(meta) > 0 {
		header["__metadata__"] = meta
	}
	datas := make([][]float32, len(tensors))
	off := 0
	for i, nt := range tensors {
		vals, err := floatsOf(nt.Tensor)
		if err != nil {
			return fmt.Errorf("write %s: tensor %s: %w", path, nt.Name, err)
		}
		datas[i] = vals
		n := 4 * len(vals)
		header[nt.Name] = stEntry{DType: "F32", Shape: nt.Tensor.MustSize(), Offsets: [2]int{off, off + n}}
		off += n
	}
	hj, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("write %s: header: %w", path, err)
	}
	for len(hj)%8 != 0 {
		hj = append(hj, ' ')
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hj)))
	w.Write(lenBuf[:])
	w.Write(hj)
	for _, d := range datas {
		w.Write(bytesOf(d))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// readSafetensors reads and checks a whole file: the header must parse,
// every tensor be F32 with offsets inside the data and matching its shape,
// and the data end exactly where the last tensor does (a truncated file fails).
func readSafetensors(path string) (map[string]stTensor, map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	var lenBuf [8]byte
	if _, err := io.ReadFull(f, lenBuf[:]); err != nil {
		return nil, nil, fmt.Errorf("%s: no safetensors header (%d bytes): %w", path, st.Size(), err)
	}
	hl := binary.LittleEndian.Uint64(lenBuf[:])
	if hl > maxHeader || int64(hl)+8 > st.Size() {
		return nil, nil, fmt.Errorf("%s: header length %d does not fit a %d-byte file (truncated or not safetensors)", path, hl, st.Size())
	}
	hj := make([]byte, hl)
	if _, err := io.ReadFull(f, hj); err != nil {
		return nil, nil, fmt.Errorf("%s: header: %w", path, err)
	}
	raw := map[string]json.RawMessage{}
	if err := json.Unmarshal(hj, &raw); err != nil {
		return nil, nil, fmt.Errorf("%s: header is not valid JSON: %w", path, err)
	}
	dataLen := st.Size() - 8 - int64(hl)
	var meta map[string]string
	entries := map[string]stEntry{}
	names := []string{}
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &meta); err != nil {
				return nil, nil, fmt.Errorf("%s: __metadata__: %w", path, err)
			}
			continue
		}
		var e stEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, nil, fmt.Errorf("%s: tensor %s: %w", path, name, err)
		}
		if e.DType != "F32" {
			return nil, nil, fmt.Errorf("%s: tensor %s has dtype %s: memo reads F32 only", path, name, e.DType)
		}
		n := int64(4)
		for _, d := range e.Shape {
			n *= d
		}
		if e.Offsets[0] < 0 || int64(e.Offsets[1]) > dataLen || int64(e.Offsets[1]-e.Offsets[0]) != n {
			return nil, nil, fmt.Errorf("%s: tensor %s: offsets %v do not fit shape %v in %d data bytes (truncated?)", path, name, e.Offsets, e.Shape, dataLen)
		}
		entries[name] = e
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return entries[names[i]].Offsets[0] < entries[names[j]].Offsets[0] })
	end := 0
	for _, n := range names {
		if entries[n].Offsets[0] != end {
			return nil, nil, fmt.Errorf("%s: tensor %s starts at %d, want %d (overlapping or gapped data)", path, n, entries[n].Offsets[0], end)
		}
		end = entries[n].Offsets[1]
	}
	if int64(end) != dataLen {
		return nil, nil, fmt.Errorf("%s: %d data bytes, the header describes %d (truncated or trailing garbage)", path, dataLen, end)
	}
	data := make([]byte, dataLen)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, nil, fmt.Errorf("%s: data: %w", path, err)
	}
	out := make(map[string]stTensor, len(entries))
	for name, e := range entries {
		out[name] = stTensor{Shape: e.Shape, Data: data[e.Offsets[0]:e.Offsets[1]:e.Offsets[1]]}
	}
	return out, meta, nil
}

// copyInto overwrites dst (a parameter or state tensor) with t's values,
// checking the shape.
func copyInto(dst *ts.Tensor, name string, t stTensor) error {
	want := dst.MustSize()
	if fmt.Sprint(want) != fmt.Sprint(t.Shape) {
		return fmt.Errorf("tensor %s: shape %v in the file, the model has %v", name, t.Shape, want)
	}
	src, err := ts.OfDataSize(t.Data, t.Shape, gotch.Float)
	if err != nil {
		return fmt.Errorf("tensor %s: %w", name, err)
	}
	defer src.MustDrop()
	torchx.NoGrad(func() { dst.Copy_(src) })
	return nil
}
