package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/procmem"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"
)

// BenchConfig is a checkpoint round trip to time: a model of this shape
// (and, with Optimizer, AdamW's two moments per parameter, as training
// saves them) saved under Dir and loaded back.
type BenchConfig struct {
	Model     model.Config
	Optimizer bool
	Dir       string // a directory the checkpoint is written in (removed afterwards)
}

// BenchResult is what Bench measured. Rates are in MB/s (10^6 bytes).
type BenchResult struct {
	Params       int64   `json:"params"`
	Bytes        int64   `json:"bytes"` // model.safetensors + optimizer.safetensors
	SaveS        float64 `json:"save_s"`
	SaveMBs      float64 `json:"save_mb_s"`
	VerifyS      float64 `json:"verify_s"` // the sha256 check a load makes first
	LoadS        float64 `json:"load_s"`   // Load (which verifies first) and ReadInto of the moments
	LoadMBs      float64 `json:"load_mb_s"`
	ReadMBs      float64 `json:"read_mb_s"`      // the load less one verification: the tensors' reading (0: not separable)
	GoHeapMaxMB  float64 `json:"go_heap_max_mb"` // largest Go heap seen between tensors
	PeakRSSMB    float64 `json:"peak_rss_mb"`    // the process's VmHWM at the end
	TensorMB     float64 `json:"tensor_mb"`      // libtorch memory the saved tensors hold
	CheckedValue int     `json:"checked_values"` // values compared after the load
}

// Bench saves a generated model (every value a function of its tensor
// and position, so the load can be checked) with Save and loads it back
// with Load and ReadInto, the functions training and resuming call. The
// model is built on the CPU.
// ErrBenchDir marks Bench's failure to make its scratch directory under
// BenchConfig.Dir: the directory given is unusable (bad input), unlike a
// failure while writing there (a full disk).
var ErrBenchDir = errors.New("cannot make the scratch checkpoint's directory")

func Bench(c BenchConfig) (BenchResult, error) {
	var res BenchResult
	cfg, err := c.Model.Resolve()
	if err != nil {
		return res, err
	}
	dir, err := os.MkdirTemp(c.Dir, "memo-bench-checkpoint-")
	if err != nil {
		return res, fmt.Errorf("%w: %w", ErrBenchDir, err)
	}
	defer os.RemoveAll(dir)
	// memo bench exits at once on an interrupt, past the deferred
	// removal: each Ctrl-C left a gigabyte behind.
	defer atomicfile.AtInterrupt(func() { os.RemoveAll(dir) })()
	heap := &heapWatch{}

	vs := nn.NewVarStore(gotch.CPU)
	g, err := model.NewUninitialized(vs.Root(), cfg)
	if err != nil {
		return res, err
	}
	params := ModelTensors(g)
	var opt []Named
	if c.Optimizer {
		for _, p := range params {
			for _, suffix := range []string{".exp_avg", ".exp_avg_sq"} {
				t, err := ts.Empty(p.Tensor.MustSize(), gotch.Float, gotch.CPU)
				if err != nil {
					return res, err
				}
				opt = append(opt, Named{p.Name + suffix, t})
			}
		}
	}
	all := append(append([]Named{}, params...), opt...)
	names := make([]string, len(all))
	for i, nt := range all {
		names[i] = nt.Name
	}
	for i, nt := range all {
		res.Params += int64(nt.Tensor.Numel())
		if err := torchx.WithFloat32Storage(nt.Tensor, func(v []float32) error {
			for j := range v {
				v[j] = benchValue(i, j)
			}
			return nil
		}); err != nil {
			return res, err
		}
	}
	if c.Optimizer {
		res.Params /= 3
	}
	res.TensorMB = 0
	for _, nt := range all {
		res.TensorMB += float64(4*nt.Tensor.Numel()) / 1e6
	}
	heap.sample()

	t0 := time.Now()
	ck, err := Save(dir, g, opt, State{Step: 1, TotalSteps: 1}, 0)
	if err != nil {
		return res, err
	}
	res.SaveS = time.Since(t0).Seconds()
	heap.sample()
	for _, f := range []string{ModelFile, OptimizerFile} {
		st, err := os.Stat(filepath.Join(ck, f))
		if err != nil {
			return res, err
		}
		res.Bytes += st.Size()
	}
	// Free the saved model before loading, as a resuming process starts
	// without one: the parameters are the var store's, the moments ours.
	for _, nt := range opt {
		nt.Tensor.MustDrop()
	}
	vs.Destroy()
	torchx.Collect()
	torchx.ReleaseFreeMemory()

	t0 = time.Now()
	if _, err := Verify(ck); err != nil {
		return res, err
	}
	res.VerifyS = time.Since(t0).Seconds()
	t0 = time.Now()
	g2, _, _, err := Load(ck, "cpu")
	if err != nil {
		return res, err
	}
	loaded := ModelTensors(g2)
	if c.Optimizer {
		for _, p := range loaded {
			for _, suffix := range []string{".exp_avg", ".exp_avg_sq"} {
				t, err := ts.Empty(p.Tensor.MustSize(), gotch.Float, gotch.CPU)
				if err != nil {
					return res, err
				}
				loaded = append(loaded, Named{p.Name + suffix, t})
			}
		}
		// Adam's moments come after the parameters, in the order saved.
		if err := ReadInto(filepath.Join(ck, OptimizerFile), loaded[len(params):]); err != nil {
			return res, err
		}
	}
	res.LoadS = time.Since(t0).Seconds()
	heap.sample()
	res.SaveMBs = float64(res.Bytes) / 1e6 / res.SaveS
	res.LoadMBs = float64(res.Bytes) / 1e6 / res.LoadS
	// The load verifies the files again: reading is the load less one
	// verification. Where the difference is within the timings' noise (a
	// small checkpoint, a warm page cache), it means nothing: left 0.
	if read := res.LoadS - res.VerifyS; read > 0.1*res.LoadS {
		res.ReadMBs = float64(res.Bytes) / 1e6 / read
	}

	// Check a few values of every tensor (the ends, the middle).
	for i, nt := range loaded {
		if want := names[i]; nt.Name != want {
			return res, fmt.Errorf("tensor %d: loaded %s, saved %s", i, nt.Name, names[i])
		}
		err := torchx.WithFloat32Storage(nt.Tensor, func(v []float32) error {
			for _, j := range []int{0, len(v) / 2, len(v) - 1} {
				if v[j] != benchValue(i, j) {
					return fmt.Errorf("tensor %s[%d] = %v after the load, saved %v", nt.Name, j, v[j], benchValue(i, j))
				}
				res.CheckedValue++
			}
			return nil
		})
		if err != nil {
			return res, err
		}
	}
	res.GoHeapMaxMB = heap.maxMB
	res.PeakRSSMB = float64(procmem.PeakRSS()) / 1e6
	return res, nil
}

// benchValue is value j of tensor i in Bench's model.
func benchValue(i, j int) float32 { return float32(i) + float32(j%1000)*1e-3 }

// heapWatch keeps the largest Go heap it was shown.
type heapWatch struct{ maxMB float64 }

func (h *heapWatch) sample() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	h.maxMB = max(h.maxMB, float64(m.HeapAlloc)/1e6)
}
