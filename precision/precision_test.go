package precision

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"
)

// bf16-mixed products stay close to float32 ones and their gradients
// reach the float32 master weights; fp32 is the float32 forward bit for
// bit; inference bf16 keeps the logits close; a precision the phase does
// not take is refused.
func TestPrecisions(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cfg := model.Config{Preset: "nano", Vocab: 97, Context: 32, Seed: 9}
	ids := ts.MustOfSlice([]int64{1, 5, 9, 2, 7, 7, 3, 60, 11, 12, 4, 4, 0, 12, 33, 8}).MustView([]int64{2, 8}, true)
	forward := func(g *model.GPT) []float32 {
		var out []float32
		torchx.NoGrad(func() {
			l := g.Forward(ids)
			out = model.RowsOf(l.MustView([]int64{1, -1}, true), 1)[0]
		})
		return out
	}
	g, err := model.New(nn.NewVarStore(gotch.CPU).Root(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := forward(g)
	if err := Set(g, FP32, true); err != nil {
		t.Fatal(err)
	}
	for i, v := range forward(g) {
		if v != want[i] {
			t.Fatalf("fp32 after Set differs at %d: %v vs %v", i, v, want[i])
		}
	}
	worst := func(got []float32) float64 {
		w := 0.0
		for i := range got {
			w = math.Max(w, math.Abs(float64(got[i]-want[i])))
		}
		return w
	}
	if err := Set(g, BF16Mixed, true); err != nil {
		t.Fatal(err)
	}
	if d := worst(forward(g)); d == 0 || d > 0.05 {
		t.Errorf("bf16-mixed logits differ from fp32 by %g: want a bf16 rounding (0, 0.05]", d)
	}
	logits := g.Forward(ids)
	loss := logits.MustSquare(true).MustMean(gotch.Float, true)
	loss.MustBackward()
	for _, p := range g.Params() {
		gr := p.Tensor.MustGrad(false)
		if gr.DType() != gotch.Float || gr.MustAbs(false).MustSum(gotch.Float, true).Float64Values()[0] == 0 {
			t.Errorf("%s: gradient %v, want a nonzero float32 gradient on the master weight", p.Name, gr.DType())
		}
	}
	inf, err := model.New(nn.NewVarStore(gotch.CPU).Root(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := Set(inf, BF16, false); err != nil {
		t.Fatal(err)
	}
	if d := worst(forward(inf)); d == 0 || d > 0.05 {
		t.Errorf("bf16 inference logits differ from fp32 by %g: want (0, 0.05]", d)
	}
	got, err := generate(inf, [][]int32{{1, 5, 9}}, 4)
	if err != nil || len(got[0]) != 4 {
		t.Errorf("bf16 generate: %v, %v", got, err)
	}
	if err := productsWork(gotch.Half, gotch.CPU); err != nil {
		fp16, _ := model.New(nn.NewVarStore(gotch.CPU).Root(), cfg)
		if err := Set(fp16, FP16, false); err == nil {
			t.Error("fp16 on a CPU without float16 products accepted")
		} else {
			t.Log(err)
		}
	}
	for _, c := range []struct {
		p        string
		training bool
	}{{"bf16", true}, {"bf16-mixed", false}, {"fp8", false}} {
		if _, err := Parse(c.p, c.training); err == nil {
			t.Errorf("precision %q (training %v) accepted", c.p, c.training)
		}
	}
}

// An inference precision holds the linear weights in that dtype and frees
// their float32 originals, and computes exactly what casting the float32
// weights at every product computed (memo before it held them): the same
// logits, greedy tokens and gradient norms, tied head or not. On a GPU
// (scripts/gpu/device-session.sh runs it there) the gradient norms may
// differ in their last bits: the fused attention's backward sums in no
// fixed order.
func TestInferencePrecisionHoldsWeightsReduced(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev, normTol := gotch.CPU, 0.0
	if gotch.CUDA.IsAvailable() {
		dev, normTol = gotch.CudaBuilder(0), 1e-3
	}
	ids := ts.MustOfSlice([]int64{1, 5, 9, 2, 7, 7, 3, 60, 11, 12, 4, 4, 0, 12, 33, 8}).MustView([]int64{2, 8}, true).MustTo(dev, true)
	windows := [][]int32{{1, 5, 9, 2, 7, 7, 3, 60}, {11, 12, 4, 4, 0, 12, 33, 8, 2}}
	for _, untied := range []bool{false, true} {
		t.Run(map[bool]string{false: "tied", true: "untied"}[untied], func(t *testing.T) {
			cfg := model.Config{Preset: "nano", Vocab: 97, Context: 32, Seed: 9, Untied: untied}
			newModel := func() *model.GPT {
				g, err := model.New(nn.NewVarStore(dev).Root(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				return g
			}
			// The old way: float32 weights, cast by each product.
			cast := newModel()
			cast.SetBackend(New(cast, gotch.BFloat16))
			held := newModel()
			embed := held.Params()[0].Tensor // model.embed_tokens.weight
			originals := map[string]*ts.Tensor{}
			for _, p := range held.Params() {
				originals[p.Name] = p.Tensor
			}
			if err := Set(held, BF16, false); err != nil {
				t.Fatal(err)
			}
			reduced := 0
			for _, p := range held.Params() {
				want := gotch.Float
				if p.Decay && p.Tensor != embed {
					want = gotch.BFloat16
				}
				if p.Tensor.DType() != want {
					t.Errorf("%s: %v, want %v", p.Name, p.Tensor.DType(), want)
				}
				if want == gotch.BFloat16 {
					reduced++
					if n := originals[p.Name].Numel(); n != 0 {
						t.Errorf("%s: the float32 original still holds %d values", p.Name, n)
					}
				}
			}
			if reduced == 0 {
				t.Fatal("no weight held in bf16")
			}
			// Two bytes saved per reduced value; a tied head's copy costs two.
			want := cast.WeightBytes()
			for _, p := range held.Params() {
				if p.Tensor.DType() == gotch.BFloat16 {
					want -= 2 * int64(p.Tensor.Numel())
				}
			}
			if !untied {
				want += 2 * int64(embed.Numel())
			}
			if got := held.WeightBytes(); got != want || got >= cast.WeightBytes() {
				t.Errorf("WeightBytes %d held in bf16 (%d in float32), want %d", got, cast.WeightBytes(), want)
			}
			logits := func(g *model.GPT) []float32 {
				var out []float32
				torchx.NoGrad(func() { out = model.RowsOf(g.Forward(ids).MustView([]int64{1, -1}, true), 1)[0] })
				return out
			}
			a, b := logits(cast), logits(held)
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("logit %d: %v held in bf16, %v cast at each product", i, b[i], a[i])
				}
			}
			ga, err := engine.GradNorm(cast, windows)
			if err != nil {
				t.Fatal(err)
			}
			gb, err := engine.GradNorm(held, windows)
			if err != nil {
				t.Fatal(err)
			}
			for i := range ga {
				if math.Abs(ga[i]-gb[i]) > normTol*ga[i] || ga[i] == 0 {
					t.Errorf("gradient norm %d: %v held in bf16, %v cast at each product", i, gb[i], ga[i])
				}
			}
			gen := func(g *model.GPT) [][]int32 {
				out, err := generate(g, [][]int32{{1, 5, 9}, {7, 3}}, 6)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			if x, y := gen(cast), gen(held); fmt.Sprint(x) != fmt.Sprint(y) {
				t.Errorf("greedy tokens %v held in bf16, %v cast at each product", y, x)
			}
			if err := Set(held, BF16, false); err != nil {
				t.Errorf("setting the same precision again: %v", err)
			}
			for _, p := range []struct {
				p        string
				training bool
			}{{FP32, false}, {BF16Mixed, true}} {
				if err := Set(held, p.p, p.training); err == nil || !strings.Contains(err.Error(), "already held in bfloat16") {
					t.Errorf("Set(%s) on a bf16-held model: %v, want a refusal", p.p, err)
				}
			}
		})
	}
}

// On a GPU in bf16-mixed, q, k and v left in bfloat16 after their products
// (Layout.KeepsProjections) compute what their float32 round trip computed: a
// bfloat16 value survives float32 exactly, and rotary positions promote q
// and k to float32 either way. The logits agree bit for bit; the
// gradients to bfloat16's resolution (a 1/64 of each tensor's largest):
// the fused attention's backward sums in no fixed order, and v's gradient
// over its repeated heads is now summed from bfloat16 (on an H200 the
// worst element differed by 4.1e-3 of its tensor's largest, a 1e-3 bound
// failed). Runs where there is a GPU (scripts/gpu/device-session.sh).
func TestPrecisionKeptProjections(t *testing.T) {
	if !gotch.CUDA.IsAvailable() || !torchx.FusedAttentionAvailable() {
		t.Skip("needs a GPU and libtorch's fused attention")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := gotch.CudaBuilder(0)
	cfg := model.Config{Preset: "nano", Vocab: 97, Context: 32, Seed: 9, KVHeads: 2, Untied: true}
	ids := ts.MustOfSlice([]int64{1, 5, 9, 2, 7, 7, 3, 60, 11, 12, 4, 4, 0, 12, 33, 8}).MustView([]int64{2, 8}, true).MustTo(dev, true)
	run := func(off bool) (logits *ts.Tensor, grads map[string]*ts.Tensor) {
		was := keepQKVOff
		keepQKVOff = off
		defer func() { keepQKVOff = was }()
		return bf16MixedPass(t, dev, cfg, ids, func(g *model.GPT) {
			if g.Backend().(model.Layout).KeepsProjections() == off {
				t.Fatalf("KeepsProjections = %v with MEMO_KEEP_QKV off = %v", !off, off)
			}
		})
	}
	wantLogits, wantGrads := run(true)
	gotLogits, gotGrads := run(false)
	if d := maxAbsDiff(gotLogits, wantLogits); d != 0 {
		t.Errorf("logits differ by %g with q, k, v kept in bf16", d)
	}
	for name, want := range wantGrads {
		scale := want.MustAbs(false).MustMax(true).Float64Values()[0]
		if d := maxAbsDiff(gotGrads[name], want); d > scale/64 {
			t.Errorf("%s: gradient differs by %g (scale %g)", name, d, scale)
		}
	}
}

// TestNativeGQA checks that leaving k and v unrepeated for the fused
// kernel's grouped heads (GroupedHeads, on a GPU in bf16-mixed) gives the
// logits and gradients of repeating them first, within bfloat16's
// resolution (the backward sums each key/value head's gradient over its
// query heads inside the kernel instead of in a separate sum). Runs where
// there is a GPU with libtorch 2.5 or later.
func TestNativeGQA(t *testing.T) {
	if !gotch.CUDA.IsAvailable() || !torchx.FusedAttentionGQAAvailable() {
		t.Skip("needs a GPU and libtorch's fused attention with grouped heads")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := gotch.CudaBuilder(0)
	cfg := model.Config{Preset: "nano", Vocab: 97, Context: 32, Seed: 9, KVHeads: 2, Untied: true}
	ids := ts.MustOfSlice([]int64{1, 5, 9, 2, 7, 7, 3, 60, 11, 12, 4, 4, 0, 12, 33, 8}).MustView([]int64{2, 8}, true).MustTo(dev, true)
	run := func(native bool) (logits *ts.Tensor, grads map[string]*ts.Tensor) {
		was := gqaOn
		gqaOn = native
		defer func() { gqaOn = was }()
		return bf16MixedPass(t, dev, cfg, ids, func(g *model.GPT) {
			if got := (fusedAttention{g.Backend().(*Backend)}).GroupedHeads(&model.AttentionCall{}); got != native {
				t.Fatalf("GroupedHeads = %v with gqaOn = %v", got, native)
			}
		})
	}
	wantLogits, wantGrads := run(false)
	gotLogits, gotGrads := run(true)
	requireNearPass(t, "with grouped heads left to the kernel", gotLogits, wantLogits, gotGrads, wantGrads)
}

// TestNativeGQADecode: on a GPU in bf16, a decoding step of one query
// over the KV cache hands grouped heads to the fused kernel (enable_gqa)
// instead of repeating every cached key and value; the prompt's pass and
// each step's logits equal the repeated heads' within bf16's resolution.
func TestNativeGQADecode(t *testing.T) {
	if !gotch.CUDA.IsAvailable() || !torchx.FusedAttentionGQAAvailable() {
		t.Skip("needs a GPU and libtorch's fused attention with grouped heads")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := gotch.CudaBuilder(0)
	g, err := model.New(nn.NewVarStore(dev).Root(), model.Config{Preset: "nano", Vocab: 97, Context: 32, Seed: 9, KVHeads: 2, Untied: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := Set(g, BF16, false); err != nil {
		t.Fatal(err)
	}
	on := func(rows [][]int64) *ts.Tensor {
		var flat []int64
		for _, r := range rows {
			flat = append(flat, r...)
		}
		return ts.MustOfSlice(flat).MustView([]int64{int64(len(rows)), -1}, true).MustTo(dev, true)
	}
	prompt := on([][]int64{{1, 5, 9, 2, 7, 7}, {11, 12, 4, 4, 0, 12}})
	steps := []*ts.Tensor{on([][]int64{{3}, {60}}), on([][]int64{{8}, {8}}), on([][]int64{{96}, {1}}), on([][]int64{{0}, {33}})}
	run := func(native bool) []*ts.Tensor {
		was := gqaOn
		gqaOn = native
		defer func() { gqaOn = was }()
		g.SetBackend(New(g, gotch.BFloat16))
		if got := g.Backend().(*Backend).gqa; got != native {
			t.Fatalf("the backend's native GQA = %v with gqaOn = %v", got, native)
		}
		c, err := engine.NewCache(g, 2, 12)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Drop()
		out := []*ts.Tensor{c.ForwardLast(prompt)}
		for _, s := range steps {
			out = append(out, c.ForwardLast(s))
		}
		for i, x := range out {
			out[i] = x.MustTotype(gotch.Float, true).MustTo(gotch.CPU, true)
		}
		return out
	}
	want, got := run(false), run(true)
	for i := range want {
		scale := want[i].MustAbs(false).MustMax(true).Float64Values()[0]
		d := maxAbsDiff(got[i], want[i])
		t.Logf("pass %d: logits differ by %g (largest %g) with grouped heads left to the kernel", i, d, scale)
		if d > scale/64 {
			t.Errorf("pass %d: logits differ by %g (scale %g)", i, d, scale)
		}
	}
}

// requireNearPass fails unless two passes' logits agree within a 64th of
// the reference's largest magnitude (bf16 keeps 8 significant bits) and
// each parameter's gradient within a 32nd of its own, saying how the
// passes differed (how). A gradient sums many products of bf16 values the
// two passes round at different points, so it moves further: on a 2-core
// AVX2 EPYC the largest difference was 1/50 of its scale (the last
// layer's up_proj, which SiLU's rounding feeds directly) and 1/100 to
// 1/65 for most, within 1/64 on the AVX-512 BF16 EPYCs before it; a
// kernel that computes the wrong thing is off by the scale itself.
func requireNearPass(t *testing.T, how string, gotLogits, wantLogits *ts.Tensor, gotGrads, wantGrads map[string]*ts.Tensor) {
	t.Helper()
	scale := wantLogits.MustAbs(false).MustMax(true).Float64Values()[0]
	d := maxAbsDiff(gotLogits, wantLogits)
	t.Logf("logits differ by %g (largest %g) %s", d, scale, how)
	if d > scale/64 {
		t.Errorf("logits differ by %g (scale %g) %s", d, scale, how)
	}
	for name, want := range wantGrads {
		scale := want.MustAbs(false).MustMax(true).Float64Values()[0]
		if d := maxAbsDiff(gotGrads[name], want); d > scale/32 {
			t.Errorf("%s: gradient differs by %g (scale %g) %s", name, d, scale, how)
		}
	}
}

// On a GPU, a bf16-mixed training pass of a Llama (q, k and v kept bf16,
// separate gate and up products) goes through memo's rotary, SwiGLU and
// copy kernels, and gives the compositions' logits and gradients within bf16
// rounding: rotary embedding is expected bit for bit, SwiGLU's backward
// to a rounding (libtorch's compiled SiLU backward may contract
// differently). MEMO_KERNELS=off's path (torchx.SetKernels(false)) is the
// reference.
func TestElementwiseKernelsInTraining(t *testing.T) {
	if !gotch.CUDA.IsAvailable() || !torchx.FusedAttentionAvailable() {
		t.Skip("needs a GPU and libtorch's fused attention")
	}
	if on := torchx.ElementwiseKernels(0); on != "on" {
		t.Fatalf("cuda:0's elementwise kernels: %s", on)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	passesThroughKernels(t, gotch.CudaBuilder(0), "with the kernels", func(g *model.GPT) {
		if !g.Backend().(*Backend).KeepsProjections() {
			t.Fatal("q, k and v are not kept bf16 on the GPU")
		}
	})
}

// The GPU's training layout on the CPU: a bf16-mixed backend that
// multiplies q, k, v (gate, up) separately and keeps inner products bf16,
// with memo's elementwise kernels run by their host code. Each norm writes
// the bfloat16 copies its products read in one kernel call (two a layer),
// which adds the residual branch before it (all but the first),
// rotary embedding and SwiGLU take theirs, and the pass gives the compositions' logits and gradients within bf16
// rounding (the CPU's bfloat16 SiLU rounds differently from the kernel's
// float32 one).
func TestGPULayoutThroughKernelsOnHost(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer torchx.ElementwiseOnHostForTest()()
	// Rotary embedding takes float32 q and k here: the fused attention
	// that would keep them bf16 is not in Debian's libtorch.
	passesThroughKernels(t, gotch.CPU, "with the kernels on the host", func(g *model.GPT) {
		g.SetBackend(&Backend{dt: gotch.BFloat16, keepInner: true, separate: true})
	})
}

// passesThroughKernels runs a bf16-mixed Llama's pass on dev (setup sees
// the model first) without memo's elementwise kernels and with them, and
// requires five kernel calls a layer with them (two rotary calls, the
// two norms each into its products' bfloat16 copies, every norm after the
// first adding the residual branch before it, SwiGLU), none without, and
// logits and gradients within bf16 rounding of each other.
func passesThroughKernels(t *testing.T, dev gotch.Device, how string, setup func(g *model.GPT)) {
	t.Helper()
	cfg := model.Config{Preset: "nano", Vocab: 97, Context: 32, Seed: 9, KVHeads: 2, Untied: true}
	ids := ts.MustOfSlice([]int64{1, 5, 9, 2, 7, 7, 3, 60, 11, 12, 4, 4, 0, 12, 33, 8}).MustView([]int64{2, 8}, true).MustTo(dev, true)
	layers := 0
	kinds := []string{"rope", "swiglu", "copies", "rms-copies", "add-rms-copies"}
	run := func(kernels bool) (*ts.Tensor, map[string]*ts.Tensor, map[string]int64) {
		was := torchx.SetKernels(kernels)
		defer torchx.SetKernels(was)
		before := map[string]int64{}
		for _, k := range kinds {
			before[k] = torchx.ElementwiseCallsOf(k)
		}
		logits, grads := bf16MixedPass(t, dev, cfg, ids, func(g *model.GPT) {
			layers = g.Config().Layers
			setup(g)
		})
		calls := map[string]int64{}
		for _, k := range kinds {
			calls[k] = torchx.ElementwiseCallsOf(k) - before[k]
		}
		return logits, grads, calls
	}
	wantLogits, wantGrads, off := run(false)
	gotLogits, gotGrads, on := run(true)
	// Every norm but the first adds the residual branch before it in the
	// same call.
	want := map[string]int64{"rope": int64(2 * layers), "swiglu": int64(layers), "copies": 0, "rms-copies": 1, "add-rms-copies": int64(2*layers - 1)}
	for _, k := range kinds {
		if off[k] != 0 || on[k] != want[k] {
			t.Fatalf("%s kernel calls: %d with the kernels, %d without; want %d with (%d layers), none without", k, on[k], off[k], want[k], layers)
		}
	}
	requireNearPass(t, fmt.Sprintf("%s (%v calls)", how, on), gotLogits, wantLogits, gotGrads, wantGrads)
}

// bf16MixedPass builds cfg's model on dev in bf16-mixed, lets check see it,
// and returns the logits of ids and every parameter's gradient of their
// mean square.
func bf16MixedPass(t *testing.T, dev gotch.Device, cfg model.Config, ids *ts.Tensor, check func(g *model.GPT)) (*ts.Tensor, map[string]*ts.Tensor) {
	t.Helper()
	g := newBF16Mixed(t, dev, cfg)
	check(g)
	logits := g.Forward(ids)
	logits.MustSquare(false).MustMean(gotch.Float, true).MustBackward()
	return logits.MustDetach(true), gradsOf(g)
}

// newBF16Mixed is cfg's model on dev, trained in bf16-mixed.
func newBF16Mixed(t *testing.T, dev gotch.Device, cfg model.Config) *model.GPT {
	t.Helper()
	g, err := model.New(nn.NewVarStore(dev).Root(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := Set(g, BF16Mixed, true); err != nil {
		t.Fatal(err)
	}
	return g
}

// gradsOf is every parameter's gradient by name.
func gradsOf(g *model.GPT) map[string]*ts.Tensor {
	grads := map[string]*ts.Tensor{}
	for _, p := range g.Params() {
		grads[p.Name] = p.Tensor.MustGrad(false)
	}
	return grads
}

// generate is the engine's cached greedy decoding of n tokens.
func generate(g *model.GPT, prompts [][]int32, n int) ([][]int32, error) {
	return engine.Generate(g, prompts, n, engine.GenOptions{UseCache: true})
}

// maxAbsDiff is the largest |a−b| over two tensors of one shape.
func maxAbsDiff(a, b *ts.Tensor) float64 {
	d := a.MustSub(b, false).MustAbs(true).MustMax(true)
	return d.Float64Values()[0]
}

// The LoRA base's names: fp32 (or nothing) and bf16, nothing else.
func TestBaseDType(t *testing.T) {
	for _, c := range []struct {
		p    string
		want gotch.DType
	}{{"", gotch.Float}, {FP32, gotch.Float}, {BF16, gotch.BFloat16}} {
		if got, err := BaseDType(c.p); err != nil || got != c.want {
			t.Errorf("BaseDType(%q) = %v, %v; want %v", c.p, got, err, c.want)
		}
	}
	for _, p := range []string{"fp16", "bf16-mixed", "BF16"} {
		if _, err := BaseDType(p); err == nil || !strings.Contains(err.Error(), "want fp32 or bf16") {
			t.Errorf("BaseDType(%q): %v", p, err)
		}
	}
}

// A model held in bf16 for inference, scored on the CPU (one q|k|v and
// one gate|up product a layer, as a joined model or the CPU's layout
// multiplies) through the kernels' host code: each norm writes its one
// product's bfloat16 input in one kernel call, and the logits stay within
// bf16 rounding of the composition's (RMSNorm, then the product's cast).
func TestInferenceNormsThroughKernelOnHost(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer torchx.ElementwiseOnHostForTest()()
	cfg := model.Config{Preset: "nano", Vocab: 97, Context: 32, Seed: 9, KVHeads: 2, Untied: true}
	ids := ts.MustOfSlice([]int64{1, 5, 9, 2, 7, 7, 3, 60, 11, 12, 4, 4, 0, 12, 33, 8}).MustView([]int64{2, 8}, true)
	g, err := model.New(nn.NewVarStore(gotch.CPU).Root(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := Set(g, BF16, false); err != nil {
		t.Fatal(err)
	}
	forward := func(kernels bool) (*ts.Tensor, int64) {
		was := torchx.SetKernels(kernels)
		defer torchx.SetKernels(was)
		before := torchx.ElementwiseCallsOf("rms-copies")
		var logits *ts.Tensor
		torchx.NoGrad(func() { logits = g.Forward(ids) })
		return logits, torchx.ElementwiseCallsOf("rms-copies") - before
	}
	want, off := forward(false)
	got, on := forward(true)
	if layers := int64(g.Config().Layers); off != 0 || on != 2*layers {
		t.Fatalf("norm kernel calls: %d with the kernels, %d without; want %d with (%d layers), none without", on, off, 2*layers, layers)
	}
	scale := want.MustAbs(false).MustMax(true).Float64Values()[0]
	if d := maxAbsDiff(got, want); d > scale/64 {
		t.Fatalf("logits differ by %g (largest %g)", d, scale)
	} else {
		t.Logf("logits differ by %g (largest %g)", d, scale)
	}
}

// The training loss's pass with the GPU's layout, on the CPU through the
// kernels' host code: ForwardForLoss leaves the logits in bfloat16 and the
// loss of them takes memo's cross-entropy kernel.
func TestLossLogitsThroughKernelOnHost(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer torchx.ElementwiseOnHostForTest()()
	lossThroughKernel(t, gotch.CPU, func(g *model.GPT) {
		g.SetBackend(&Backend{dt: gotch.BFloat16, keepInner: true, separate: true, keepLogits: true})
	})
}

// On a GPU, a bf16-mixed training pass's logits stay bfloat16 for the loss,
// which takes memo's cross-entropy kernel (lossThroughKernel).
func TestLossKernelInTraining(t *testing.T) {
	if !gotch.CUDA.IsAvailable() {
		t.Skip("needs a GPU")
	}
	if on := torchx.ElementwiseKernels(0); on != "on" {
		t.Fatalf("cuda:0's elementwise kernels: %s", on)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	lossThroughKernel(t, gotch.CudaBuilder(0), func(*model.GPT) {})
}

// lossThroughKernel runs a bf16-mixed Llama's training loss on dev (setup
// sees the model first), the mean cross-entropy of its logits, four ways:
// Forward's float32 logits or ForwardForLoss's, with memo's kernels or
// without. ForwardForLoss's logits are bfloat16. Without the kernels the
// loss casts them to float32 itself, so its losses and (on the CPU)
// gradients equal Forward's bit for bit; with them, the loss is one kernel
// call and agrees with Forward's within float32 rounding of the losses and
// bfloat16 rounding of the gradients (the other kernels run in both).
func lossThroughKernel(t *testing.T, dev gotch.Device, setup func(g *model.GPT)) {
	t.Helper()
	cfg := model.Config{Preset: "nano", Vocab: 97, Context: 32, Seed: 9, KVHeads: 2, Untied: true}
	ids := ts.MustOfSlice([]int64{1, 5, 9, 2, 7, 7, 3, 60, 11, 12, 4, 4, 0, 12, 33, 8}).MustView([]int64{2, 8}, true).MustTo(dev, true)
	targets := ts.MustOfSlice([]int64{5, 9, 2, 7, 7, 3, 60, -100, 12, 4, 4, 0, 12, 33, 8, 96}).MustTo(dev, true)
	type result struct {
		dt    gotch.DType
		nll   *ts.Tensor
		grads map[string]*ts.Tensor
		calls int64
	}
	pass := func(forLoss, kernels bool) result {
		was := torchx.SetKernels(kernels)
		defer torchx.SetKernels(was)
		before := torchx.ElementwiseCallsOf("cross-entropy")
		g := newBF16Mixed(t, dev, cfg)
		setup(g)
		logits := g.Forward
		if forLoss {
			logits = g.ForwardForLoss
		}
		l := logits(ids)
		nll, err := torchx.CrossEntropy(l.MustView([]int64{16, -1}, false), targets, -100)
		if err != nil {
			t.Fatal(err)
		}
		nll.MustMean(gotch.Float, false).MustBackward()
		r := result{dt: l.DType(), nll: nll.MustDetach(true), grads: gradsOf(g)}
		r.calls = torchx.ElementwiseCallsOf("cross-entropy") - before
		return r
	}
	ref, refOff := pass(false, true), pass(false, false)
	got, gotOff := pass(true, true), pass(true, false)
	if ref.dt != gotch.Float || got.dt != gotch.BFloat16 {
		t.Fatalf("logits: Forward's %v, ForwardForLoss's %v; want float32 and bfloat16", ref.dt, got.dt)
	}
	if ref.calls != 0 || refOff.calls != 0 || gotOff.calls != 0 || got.calls != 1 {
		t.Fatalf("cross-entropy kernel calls: %d, %d, %d, %d; want one, for ForwardForLoss's logits with the kernels",
			ref.calls, refOff.calls, got.calls, gotOff.calls)
	}
	if d := maxAbsDiff(gotOff.nll, refOff.nll); d != 0 {
		t.Errorf("without the kernels, the losses of bfloat16 logits differ from float32's by %g", d)
	}
	for name, want := range refOff.grads {
		// A GPU's attention backward may add in another order from one run
		// to the next (flash attention's atomics), so there the gradients
		// are held to bf16 rounding; the CPU's are deterministic.
		tol := 0.0
		if dev.IsCuda() {
			tol = want.MustAbs(false).MustMax(true).Float64Values()[0] / 64
		}
		if d := maxAbsDiff(gotOff.grads[name], want); d > tol {
			t.Errorf("without the kernels, %s's gradient differs by %g", name, d)
		}
	}
	scale := ref.nll.MustAbs(false).MustMax(true).Float64Values()[0]
	if d := maxAbsDiff(got.nll, ref.nll); d > scale*1e-6 {
		t.Errorf("losses differ from Forward's by %g (largest %g)", d, scale)
	}
	for name, want := range ref.grads {
		scale := want.MustAbs(false).MustMax(true).Float64Values()[0]
		if d := maxAbsDiff(got.grads[name], want); d > scale/64 {
			t.Errorf("%s: gradient differs from Forward's by %g (scale %g)", name, d, scale)
		}
	}
}
