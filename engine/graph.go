package engine

// CUDA graphs for greedy decoding's token steps. At batch 256 a 1.1B
// model's token step is a few hundred small kernels whose launches, one
// call from Go through libtorch each, take longer than the GPU takes to
// run them; a captured graph launches them all in one call. A step's
// shapes are fixed by the cache's rows and the positions filled, so the
// graph of the step at position n, captured once, serves that position in
// every later batch of the same shape (an attack's batches of one prompt
// length): its inputs (the tokens, the positions and the padding mask)
// are copied into tensors that stay at one address, and its logits come
// out in a tensor made during the capture.
//
// Off unless SetCUDAGraphs(true) or MEMO_CUDA_GRAPHS=on, and used only
// by ContinueGreedy on a CUDA model without sliding windows or an
// approximation; a capture that fails turns them off for the rest of the
// process (the steps run as without) and says so once. On one H200 the
// GPU test's captures replayed the tokens of decoding without, and at
// batch 256 on a 1.1B model replay ran 2.53x the steps without
// (docs/DECODING.md).

import (
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// graphsOn is SetCUDAGraphs'; graphsFailed is set by the first capture
// that fails, after which no step is captured again in this process (a
// capture fails for what the step does, which does not change).
var graphsOn, graphsFailed atomic.Bool

func init() { graphsOn.Store(os.Getenv("MEMO_CUDA_GRAPHS") == "on") }

// SetCUDAGraphs turns the replay of captured token steps in greedy
// decoding on a GPU on or off (the default: MEMO_CUDA_GRAPHS=on).
func SetCUDAGraphs(on bool) { graphsOn.Store(on) }

// CUDAGraphs reports whether greedy decoding on a GPU replays captured
// token steps.
func CUDAGraphs() bool { return graphsOn.Load() }

// stepGraph is a captured token step.
type stepGraph interface {
	Replay() error
	Free()
}

// captureStep runs warm (the step, eagerly) on the stream the capture
// uses, then captures run (the same step) there without running it. The
// engine's tests replace it to check the plumbing on the CPU.
var captureStep = func(dev gotch.Device, warm, run func()) (stepGraph, error) {
	if err := torchx.OnSideStream(dev, warm); err != nil {
		return nil, err
	}
	return torchx.CaptureGraph(dev, run)
}

// graphsFor reports whether a model on dev can have its steps captured
// (tests let the CPU through to their stand-in capture).
var graphsFor = func(dev gotch.Device) bool { return dev.IsCuda() && torchx.GraphsAvailable() }

// graphKey names a captured step of one cache: the positions filled
// before it, and whether its rows are padded (a mask is an input).
type graphKey struct {
	past   int
	padded bool
}

// graphStep is one captured step, its mask input and its logits output.
type graphStep struct {
	graph stepGraph
	mask  *ts.Tensor // [B,1,1,past+1] float32, nil unpadded
	out   *ts.Tensor // [B,1,V], made by the capture
}

// cacheGraphs are a cache's captured steps and the inputs they share.
type cacheGraphs struct {
	ids, pos *ts.Tensor // [B,1] and [B] int64
	steps    map[graphKey]*graphStep
}

func (cg *cacheGraphs) drop() {
	for _, st := range cg.steps {
		st.drop()
	}
	for _, t := range []*ts.Tensor{cg.ids, cg.pos} {
		if t != nil {
			t.MustDrop()
		}
	}
	cg.steps, cg.ids, cg.pos = nil, nil, nil
}

func (st *graphStep) drop() {
	if st.graph != nil {
		st.graph.Free()
	}
	for _, t := range []*ts.Tensor{st.mask, st.out} {
		if t != nil {
			t.MustDrop()
		}
	}
}

// forwardToken is ForwardLast of one token a row, tok [B,1] int64 on the
// cache's device, returning [B,1,V]; with graphed, through the step's
// captured graph where the cache can have one.
func (kc *Cache) forwardToken(tok *ts.Tensor, graphed bool) *ts.Tensor {
	if graphed && graphsOn.Load() && !graphsFailed.Load() && kc.approx == nil && kc.g.Config().SlidingWindow == 0 && graphsFor(kc.g.Device()) {
		if kc.graphs == nil {
			kc.graphs = &cacheGraphs{steps: map[graphKey]*graphStep{}}
		}
		if out := kc.graphedStep(tok); out != nil {
			return out
		}
	}
	return kc.ForwardLast(tok)
}

// graphedStep runs the next token step by replaying its graph, or, the
// first time at this position, eagerly on the capture's stream and then
// captures it; nil (nothing run) where the capture's stream refused.
func (kc *Cache) graphedStep(tok *ts.Tensor) *ts.Tensor {
	cg, dev, n := kc.graphs, kc.g.Device(), kc.n
	st := kc.passState(true)
	pos, mask, maskDims := st.StepValues(1)
	key := graphKey{past: n, padded: mask != nil}
	step := cg.steps[key]
	if step == nil {
		step = &graphStep{}
		if mask != nil {
			step.mask = ts.MustZeros(maskDims, gotch.Float, dev)
		}
	}
	if cg.ids == nil {
		cg.ids = ts.MustZeros([]int64{int64(kc.batch), 1}, gotch.Int64, dev)
		cg.pos = ts.MustZeros([]int64{int64(kc.batch)}, gotch.Int64, dev)
	}
	torchx.NoGrad(func() {
		cg.ids.Copy_(tok)
		copyValues(cg.pos, pos)
		if mask != nil {
			copyValues(step.mask, mask)
		}
	})
	st.Static = &model.StaticInputs{Positions: cg.pos, Mask: step.mask}
	run := func() *ts.Tensor {
		kc.n = n
		return kc.g.ForwardWith(cg.ids, st)
	}
	if step.graph != nil {
		kc.n = n
		if err := step.graph.Replay(); err != nil {
			panic(fmt.Sprintf("engine: token step at position %d: %v", n, err))
		}
		kc.n = n + 1
		return step.out.MustAlias(false)
	}
	var out *ts.Tensor
	graph, err := captureStep(dev, func() { out = run() }, func() {
		if step.out != nil {
			step.out.MustDrop()
		}
		step.out = run()
	})
	kc.n = n + 1
	if err != nil {
		if !graphsFailed.Swap(true) {
			slog.Warn("engine: CUDA graphs off: a token step could not be captured, so every step runs one call at a time", "rows", kc.batch, "position", n, "err", err)
		}
		step.drop()
		if out == nil { // nothing ran
			kc.n = n
		}
		return out
	}
	step.graph = graph
	cg.steps[key] = step
	return out
}

// copyValues copies host values into t, a tensor of their count on its
// device, outside any capture.
func copyValues[T float32 | int64](t *ts.Tensor, vals []T) {
	src, err := model.TensorOf(vals, t.MustSize(), t.MustDevice())
	if err != nil {
		panic(fmt.Sprintf("engine: graph inputs: %v", err))
	}
	t.Copy_(src)
	src.MustDrop()
}

// reset makes the cache empty for new rows of the same count, starting at
// starts, keeping its tensors (and so the steps captured on them).
func (kc *Cache) reset(starts []int) error {
	if err := kc.SetStarts(starts); err != nil {
		return err
	}
	kc.n = 0
	return nil
}

// capturedSteps is how many token steps kc holds as captured graphs that
// can replay (0 with graphs off, or after a capture failed).
func (kc *Cache) capturedSteps() int {
	if kc.graphs == nil || graphsFailed.Load() {
		return 0
	}
	return len(kc.graphs.steps)
}

// reusable reports whether a stepper's next batch of rows rows and maxLen
// positions can decode in kc, keeping its captured steps.
func (kc *Cache) reusable(rows, maxLen int) bool {
	return kc.capturedSteps() > 0 && kc.batch == rows && kc.maxLen == maxLen
}

// dropGraphs frees the captured steps: the cache's tensors moved.
func (kc *Cache) dropGraphs() {
	if kc.graphs != nil {
		kc.graphs.drop()
		kc.graphs = nil
	}
}

// GraphsCaptured is how many token steps the stepper's cache holds as
// captured graphs (0 with graphs off, or after a capture failed).
func (s *Stepper) GraphsCaptured() int {
	if s.cache == nil {
		return 0
	}
	return s.cache.capturedSteps()
}
