package engine

import (
	"errors"
	"reflect"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
)

// fakeGraph stands in for a CUDA graph on the CPU: the capture keeps the
// step's function without running it, and a replay runs it again, reading
// what the step's input tensors hold then, as a graph's kernels would. A
// step that made a tensor from Go values would, as a graph, replay a copy
// of the capture's values; a replay that makes one fails the test.
type fakeGraph struct {
	t       *testing.T
	run     func()
	replays *int
}

func (f *fakeGraph) Replay() error {
	before := torchx.HostTensorsMade()
	f.run()
	if made := torchx.HostTensorsMade() - before; made != 0 {
		f.t.Errorf("a replayed step made %d tensors from host values", made)
	}
	*f.replays++
	return nil
}

func (f *fakeGraph) Free() {}

// withFakeGraphs turns graphs on for the CPU with capture standing in
// for captureStep, until the test ends.
func withFakeGraphs(t *testing.T, capture func(dev gotch.Device, warm, run func()) (stepGraph, error)) {
	oldCapture, oldFor, oldOn := captureStep, graphsFor, CUDAGraphs()
	captureStep, graphsFor = capture, func(gotch.Device) bool { return true }
	SetCUDAGraphs(true)
	graphsFailed.Store(false)
	t.Cleanup(func() {
		captureStep, graphsFor = oldCapture, oldFor
		SetCUDAGraphs(oldOn)
		graphsFailed.Store(false)
	})
}

// graphBatches are four batches of one shape (4 rows, 5 positions of
// prompt): two unpadded, then two padded.
var graphBatches = [][][]int32{
	{{5, 17, 2, 90, 41}, {8, 1, 1, 1, 1}, {33, 33, 33, 2, 2}, {1, 2, 3, 4, 5}},
	{{9, 9, 9, 9, 9}, {4, 3, 2, 1, 0}, {7, 7, 1, 2, 3}, {60, 61, 62, 63, 64}},
	{{5, 17, 2, 90, 41}, {8}, {33, 33, 33}, {1, 2, 3, 4, 5}},
	{{1}, {2, 3}, {4, 5, 6}, {7, 8, 9, 10, 11}},
}

// greedyBatches decodes each batch of prompts by n greedy tokens with one
// stepper (as an attack does, batch after batch), and each with a new
// stepper with graphs off.
func greedyBatches(t *testing.T, g *model.GPT, batches [][][]int32, n int) (got, want [][][]int32) {
	t.Helper()
	decode := func(s *Stepper, prompts [][]int32) [][]int32 {
		first, err := s.StartGreedy(prompts, n+1)
		if err != nil {
			t.Fatal(err)
		}
		out, err := s.ContinueGreedy(first, n)
		if err != nil {
			t.Fatal(err)
		}
		// As extract's decoders do after each batch: the captured steps
		// must outlive it (the first GPU run closed them away, capturing
		// every step anew each batch, and ran 0.80x the eager steps).
		s.Close()
		return out
	}
	graphed := NewStepper(g, true)
	defer graphed.Release()
	var cache *Cache
	for i, prompts := range batches {
		got = append(got, decode(graphed, prompts))
		if i == 0 {
			cache = graphed.cache
		} else if graphed.cache != cache && cache.graphs != nil && !graphsFailed.Load() {
			t.Errorf("batch %d: a new cache for the same shape; its captured steps were dropped", i)
		}
		SetCUDAGraphs(false)
		eager := NewStepper(g, true)
		want = append(want, decode(eager, prompts))
		eager.Release()
		SetCUDAGraphs(true)
	}
	return got, want
}

// Greedy decoding with its token steps captured once and replayed (here
// by fakeGraph, on the CPU) must give the tokens of decoding without:
// each position's step is captured in the first batch that reaches it
// and replayed in the later ones of the same shape, its inputs (tokens,
// positions, the padding mask) copied in, for rotary and learned
// positions and padded and unpadded batches. A capture that fails, or a
// capture stream that refuses, leaves the steps to run as without.
func TestGraphedGreedyMatchesEager(t *testing.T) {
	const n = 9
	for _, arch := range []string{"", "gpt2"} {
		g := newTest(t, model.Config{Preset: "nano", Arch: arch, Vocab: 97, Context: 48, Seed: 3})
		captures, replays := 0, 0
		withFakeGraphs(t, func(_ gotch.Device, warm, run func()) (stepGraph, error) {
			warm()
			captures++
			return &fakeGraph{t: t, run: run, replays: &replays}, nil
		})
		got, want := greedyBatches(t, g, graphBatches, n)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("arch %q: graphed %v, eager %v", arch, got, want)
		}
		// n−2 token steps a batch go through the cache after the first
		// token's; unpadded and padded steps are captured apart.
		if captures != 2*(n-2) || replays != 2*(n-2) {
			t.Errorf("arch %q: %d captures and %d replays, want %d of each", arch, captures, replays, 2*(n-2))
		}
	}

	g := newTest(t, model.Config{Preset: "nano", Vocab: 97, Context: 48, Seed: 3})
	for name, capture := range map[string]func(gotch.Device, func(), func()) (stepGraph, error){
		"capture fails": func(_ gotch.Device, warm, _ func()) (stepGraph, error) {
			warm()
			return nil, errors.New("operation not permitted when stream is capturing")
		},
		"no side stream": func(gotch.Device, func(), func()) (stepGraph, error) {
			return nil, errors.New("no side stream")
		},
	} {
		withFakeGraphs(t, capture)
		got, want := greedyBatches(t, g, graphBatches, n)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: graphed %v, eager %v", name, got, want)
		}
		if !graphsFailed.Load() {
			t.Errorf("%s: graphs not marked failed", name)
		}
	}
}

// On a GPU (scripts/gpu/issue41-next.sh's part b runs it there), the
// real capture: greedy decoding with its token steps captured and
// replayed as CUDA graphs gives the tokens of decoding without, and the
// steps were captured, not left to run one call at a time.
func TestCUDAGraphGreedyOnGPU(t *testing.T) {
	if !gotch.CUDA.IsAvailable() || !torchx.GraphsAvailable() {
		t.Skip("no GPU, or a build without the cuda tag")
	}
	oldOn, oldCapture := CUDAGraphs(), captureStep
	captures := 0
	captureStep = func(dev gotch.Device, warm, run func()) (stepGraph, error) {
		captures++
		return oldCapture(dev, warm, run)
	}
	SetCUDAGraphs(true)
	graphsFailed.Store(false)
	defer func() {
		SetCUDAGraphs(oldOn)
		captureStep = oldCapture
		graphsFailed.Store(false)
	}()
	vs := nn.NewVarStore(gotch.CudaBuilder(0))
	g, err := model.New(vs.Root(), model.Config{Preset: "nano", Vocab: 97, Context: 48, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	const n = 9
	got, want := greedyBatches(t, g, graphBatches, n)
	if graphsFailed.Load() {
		t.Fatal("a capture failed (its warning above says why)")
	}
	if captures != 2*(n-2) {
		t.Errorf("%d steps captured, want %d", captures, 2*(n-2))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("graphed %v, eager %v", got, want)
	}
}
