package checkpoint

import (
	"fmt"
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
// given order, copying one tensor at a time to Go memory.
func WriteTensors(path string, tensors []Named, meta map[string]string) error {
	desc := make([]safetensors.Tensor, len(tensors))
	for i, nt := range tensors {
		desc[i] = safetensors.Tensor{Name: nt.Name, DType: safetensors.F32, Shape: nt.Tensor.MustSize()}
	}
	return safetensors.Write(path, desc, meta, func(i int) ([]float32, error) {
		return floatsOf(tensors[i].Tensor)
	})
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
	for _, nt := range dst {
		info, ok := f.Info(nt.Name)
		if !ok {
			return fmt.Errorf("%s: tensor %s is missing", path, nt.Name)
		}
		if want := nt.Tensor.MustSize(); !slices.Equal(want, info.Shape) {
			return fmt.Errorf("%s: tensor %s: shape %v in the file, the model has %v", path, nt.Name, info.Shape, want)
		}
		name := nt.Name
		if err := fill(nt.Tensor, info.Shape, func(dst []float32) error { return f.Float32Into(name, dst) }); err != nil {
			return fmt.Errorf("%s: tensor %s: %w", path, nt.Name, err)
		}
	}
	return nil
}

// fill overwrites dst with the values read writes into the slice it is
// given: dst's own storage when dst is a contiguous float32 tensor on the
// CPU (every parameter memo builds there), so a load reads and converts
// straight into the model with no copy; otherwise a Go slice, then copy_.
func fill(dst *ts.Tensor, shape []int64, readRaw func([]float32) error) error {
	n := int(dst.Numel())
	if n == 0 {
		return nil
	}
	read := func(vals []float32) error {
		if err := readRaw(vals); err != nil {
			return err
		}
		return finite(vals)
	}
	if torchx.HasFloat32Storage(dst) {
		// Writing the storage is what copy_ under no_grad would do: no
		// graph exists yet.
		return torchx.WithFloat32Storage(dst, read)
	}
	vals := make([]float32, n)
	if err := read(vals); err != nil {
		return err
	}
	return copyInto(dst, vals, shape)
}

// copyInto overwrites dst with vals, laid out as shape.
func copyInto(dst *ts.Tensor, vals []float32, shape []int64) error {
	if len(vals) == 0 {
		return nil // nothing to copy, and no first element to point libtorch at
	}
	src, err := torchx.TensorOf(vals, shape)
	if err != nil {
		return err
	}
	defer src.MustDrop()
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
