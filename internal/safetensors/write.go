package safetensors

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/memo-research/memo/internal/atomicfile"
)

// Tensor describes one tensor for Write: its name, the dtype to store it
// as (F32, BF16 or F16) and its shape.
type Tensor struct {
	Name, DType string
	Shape       []int64
}

// Write streams tensors to path in the given order. data(i) returns tensor
// i's values as float32 (exactly as many as its shape holds); Write
// converts them to the tensor's dtype, BF16 and F16 rounding to nearest,
// ties to even. Only one tensor's values are held at a time.
//
// The header's JSON keys are sorted ("__metadata__", when meta is not
// empty, first) and padded with spaces to a multiple of 8 bytes, as the
// reference implementation pads, so that the data section starts aligned.
// The file is written under a temporary name in path's directory, synced
// and renamed, so a file at path is always a finished one; on error
// nothing is left behind.
func Write(path string, tensors []Tensor, meta map[string]string, data func(i int) ([]float32, error)) error {
	return WriteLent(path, tensors, meta, func(i int, use func([]float32) error) error {
		vals, err := data(i)
		if err != nil {
			return err
		}
		return use(vals)
	}, WriteOptions{})
}

// WriteOptions are WriteLent's optional extras.
type WriteOptions struct {
	// Sum, when set, is fed every byte of the file as it is written, so a
	// caller gets the file's digest without reading it back.
	Sum hash.Hash
	// Progress, when set, is called after each tensor with the bytes
	// written so far and the file's size.
	Progress func(done, total int64)
}

// WriteLent is Write for values the caller lends rather than gives: lend(i,
// use) calls use once with tensor i's values, which need stay valid only
// during that call (a tensor's own memory, say), so writing a checkpoint
// makes no copy of it on the Go heap.
func WriteLent(path string, tensors []Tensor, meta map[string]string, lend func(i int, use func([]float32) error) error, opt WriteOptions) error {
	header := make(map[string]any, len(tensors)+1)
	if len(meta) > 0 {
		header[metadataKey] = meta
	}
	var off int64
	for _, t := range tensors {
		if t.Name == metadataKey || t.Name == "" {
			return fmt.Errorf("write %s: %q cannot name a tensor", path, t.Name)
		}
		if _, dup := header[t.Name]; dup {
			return fmt.Errorf("write %s: tensor %s listed twice", path, t.Name)
		}
		if !floatDType(t.DType) {
			return fmt.Errorf("write %s: tensor %s: dtype %q: memo writes F32, BF16 and F16", path, t.Name, t.DType)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{} // a scalar: "shape": [], never null
		}
		n, err := byteSize(shape, dtypeSize[t.DType])
		if err != nil {
			return fmt.Errorf("write %s: tensor %s: %w", path, t.Name, err)
		}
		header[t.Name] = entry{DType: t.DType, Shape: shape, Offsets: []int64{off, off + n}}
		off += n
	}
	hj, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("write %s: header: %w", path, err)
	}
	for len(hj)%8 != 0 {
		hj = append(hj, ' ')
	}
	total := 8 + int64(len(hj)) + off

	err = atomicfile.CreateSync(path, func(f *os.File) error {
		var dst io.Writer = f
		if opt.Sum != nil {
			dst = io.MultiWriter(f, opt.Sum)
		}
		// A large tensor's bytes bypass the buffer (bufio writes a slice
		// longer than its buffer straight through): one write call each.
		w := bufio.NewWriterSize(dst, 1<<20)
		var lenBuf [8]byte
		binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hj)))
		w.Write(lenBuf[:]) // bufio keeps the first error; Flush reports it
		w.Write(hj)
		done := 8 + int64(len(hj))
		var half []byte
		for i, t := range tensors {
			want := Info{Shape: t.Shape}.Numel()
			err := lend(i, func(vals []float32) error {
				if int64(len(vals)) != want {
					return fmt.Errorf("%d values, shape %v holds %d", len(vals), t.Shape, want)
				}
				if t.DType == F32 {
					if len(vals) > 0 {
						w.Write(unsafe.Slice((*byte)(unsafe.Pointer(&vals[0])), 4*len(vals)))
					}
					return nil
				}
				// Convert in chunks so a large tensor needs no second full copy.
				for start := 0; start < len(vals); start += chunk {
					half = encode16(half[:0], vals[start:min(start+chunk, len(vals))], t.DType)
					w.Write(half)
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("tensor %s: %w", t.Name, err)
			}
			done += want * dtypeSize[t.DType]
			if opt.Progress != nil {
				opt.Progress(done, total)
			}
		}
		return w.Flush()
	})
	if err != nil {
		return err // atomicfile's error says "write PATH: ..."
	}
	syncDir(filepath.Dir(path))
	return nil
}

// encode16 appends vals converted to dtype (BF16 or F16), little-endian, to dst.
func encode16(dst []byte, vals []float32, dtype string) []byte {
	conv := Float32ToF16
	if dtype == BF16 {
		conv = Float32ToBF16
	}
	for _, v := range vals {
		dst = binary.LittleEndian.AppendUint16(dst, conv(v))
	}
	return dst
}

// syncDir makes a rename in dir durable; where a file system cannot sync a
// directory there is nothing more to do, so failures are ignored.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
