package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/safetensors"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Named is a tensor under the name it has in a safetensors file.
type Named struct {
	Name   string
	Tensor *ts.Tensor
}

// ModelTensors names g's parameters with their Hugging Face tensor names,
// in g's parameter order (the order they are written in).
func ModelTensors(g *model.GPT) []Named {
	out := make([]Named, len(g.Params()))
	for i, p := range g.Params() {
		out[i] = Named{p.Name, p.Tensor}
	}
	return out
}

// WriteTensors writes float32 tensors to path as F32 safetensors, in the
// given order, one tensor at a time and straight from its memory (see
// writeTensors).
func WriteTensors(path string, tensors []Named, meta map[string]string) error {
	_, err := writeTensors(path, tensors, meta, "")
	return err
}

// writeTensors is WriteTensors returning the file's sha256, computed as
// the bytes go out rather than by reading a multi-gigabyte file back. Each
// tensor is written from its own storage (a CPU copy made by libtorch for
// one on a GPU or not contiguous, freed before the next), never from a
// copy on the Go heap: memo pauses Go's collector (internal/torchx), so
// such copies would all stay until the next collection, doubling a large
// checkpoint's memory. A label turns on a progress line for files of at
// least progressBytes.
func writeTensors(path string, tensors []Named, meta map[string]string, label string) (string, error) {
	desc := make([]safetensors.Tensor, len(tensors))
	var total int64
	for i, nt := range tensors {
		desc[i] = safetensors.Tensor{Name: nt.Name, DType: safetensors.F32, Shape: nt.Tensor.MustSize()}
		total += 4 * int64(nt.Tensor.Numel())
	}
	sum := sha256.New()
	opt := safetensors.WriteOptions{Sum: sum}
	if label != "" && total >= progressBytes {
		p := newByteProgress(label, total)
		defer p.done()
		opt.Progress = p.update
	}
	err := safetensors.WriteLent(path, desc, meta, func(i int, use func([]float32) error) error {
		return lendFloats(tensors[i].Tensor, use)
	}, opt)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}

// lendFloats calls use with a float32 tensor's values in CPU memory: its
// own storage when it has one, else a contiguous CPU copy in libtorch's
// memory, dropped afterwards.
func lendFloats(t *ts.Tensor, use func([]float32) error) error {
	if t.DType() != gotch.Float {
		return fmt.Errorf("dtype %v: want float32", t.DType())
	}
	if torchx.HasFloat32Storage(t) {
		return torchx.WithFloat32Storage(t, use)
	}
	c := t.MustContiguous(false)
	defer c.MustDrop()
	if c.MustDevice().IsCuda() { // gotch reports the CPU as {CPU 1}, not gotch.CPU
		cpu := c.MustTo(gotch.CPU, false)
		defer cpu.MustDrop()
		c = cpu
	}
	return torchx.WithFloat32Storage(c, use)
}

// ReadInto copies the tensors of the safetensors file at path into dst by
// name, one tensor at a time (F32, BF16 or F16 in the file); every one must
// be there with dst's shape. Tensors of the file that dst does not name are
// left alone.
func ReadInto(path string, dst []Named) error {
	f, err := safetensors.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var total, done int64
	for _, nt := range dst {
		total += 4 * int64(nt.Tensor.Numel())
	}
	var p *byteProgress
	if total >= progressBytes {
		p = newByteProgress("checkpoint load "+filepath.Base(filepath.Dir(path))+" "+filepath.Base(path), total)
		defer p.done()
	}
	for _, nt := range dst {
		info, ok := f.Info(nt.Name)
		if !ok {
			return fmt.Errorf("%s: tensor %s is missing", path, nt.Name)
		}
		if want := nt.Tensor.MustSize(); !slices.Equal(want, info.Shape) {
			return fmt.Errorf("%s: tensor %s: shape %v in the file, the model has %v", path, nt.Name, info.Shape, want)
		}
		name := nt.Name
		where := fmt.Sprintf("%s: tensor %s", path, nt.Name)
		if err := fill(nt.Tensor, info.Shape, where, func(dst []float32) error { return f.Float32Into(name, dst) }); err != nil {
			return err
		}
		if p != nil {
			done += 4 * int64(nt.Tensor.Numel())
			p.update(done, total)
		}
	}
	return nil
}

// fill overwrites dst with the values read writes into the slice it is
// given: dst's own storage when dst is a contiguous float32 tensor on the
// CPU (every float32 parameter memo builds there), so a load reads and
// converts straight into the model with no copy; otherwise a CPU tensor,
// then copy_. readRaw's errors name the file and tensor themselves (the
// safetensors reader's do); fill's own begin with where.
func fill(dst *ts.Tensor, shape []int64, where string, readRaw func([]float32) error) error {
	n := int(dst.Numel())
	if n == 0 {
		return nil
	}
	read := func(vals []float32) error {
		if err := readRaw(vals); err != nil {
			return err
		}
		if err := finite(vals); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		return nil
	}
	if torchx.HasFloat32Storage(dst) {
		// Writing the storage is what copy_ under no_grad would do: no
		// graph exists yet.
		return torchx.WithFloat32Storage(dst, read)
	}
	// A GPU parameter, or one held in bf16 or fp16 for inference: read
	// into a float32 CPU tensor of libtorch's (not a Go slice, which would
	// stay on the paused collector's heap), then copy_, which converts
	// (rounding to nearest even, as a cast of the float32 weight would).
	src, err := ts.Empty(shape, gotch.Float, gotch.CPU)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	defer src.MustDrop()
	if err := torchx.WithFloat32Storage(src, read); err != nil {
		return err
	}
	torchx.NoGrad(func() { dst.Copy_(src) })
	return nil
}

// finite refuses weights holding a NaN or an infinity: a model loaded with
// one generates token 0 forever or scores everything NaN, and an attack on
// it reports chance; no training memo runs writes one (it stops on a
// non-finite loss), so the file is damaged or not a trained model.
func finite(vals []float32) error {
	for i, v := range vals {
		if v-v != 0 { // NaN and ±Inf, and nothing else, give NaN
			return badinput.Errorf("value %d is %v: the weights are damaged (memo refuses non-finite weights)", i, v)
		}
	}
	return nil
}
