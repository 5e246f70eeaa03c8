package model

import (
	"math"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"
)

func newTest(t *testing.T, cfg Config) *GPT {
	t.Helper()
	vs := nn.NewVarStore(gotch.CPU)
	g, err := New(vs.Root(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestParamCountMatchesTensors(t *testing.T) {
	for _, untied := range []bool{false, true} {
		g := newTest(t, Config{Preset: "nano", Vocab: 97, Untied: untied})
		var n int64
		for _, p := range g.Params() {
			sz := int64(1)
			for _, d := range p.Tensor.MustSize() {
				sz *= d
			}
			n += sz
		}
		if n != g.Config().Params() {
			t.Errorf("untied=%v: tensors hold %d values, Params() = %d", untied, n, g.Config().Params())
		}
		names := g.Names()
		if names[0] != "model.embed_tokens.weight" || names[2] != "model.layers.0.self_attn.q_proj.weight" {
			t.Errorf("names start %v", names[:3])
		}
		if last := names[len(names)-1]; untied && last != "lm_head.weight" || !untied && last != "model.norm.weight" {
			t.Errorf("untied=%v: last name %q", untied, last)
		}
	}
}

func TestSameSeedSameWeights(t *testing.T) {
	a := newTest(t, Config{Preset: "nano", Vocab: 50, Seed: 3})
	b := newTest(t, Config{Preset: "nano", Vocab: 50, Seed: 3})
	c := newTest(t, Config{Preset: "nano", Vocab: 50, Seed: 4})
	if !a.Params()[0].Tensor.MustEqual(b.Params()[0].Tensor, false) {
		t.Error("same seed gave different embeddings")
	}
	if a.Params()[0].Tensor.MustEqual(c.Params()[0].Tensor, false) {
		t.Error("different seeds gave the same embeddings")
	}
	std := a.Params()[0].Tensor.MustStd(true, false).Float64Values()[0]
	if math.Abs(std-0.02) > 0.002 {
		t.Errorf("embedding std %.4f, want about 0.02", std)
	}
}

func ids(t *testing.T, rows [][]int64) *ts.Tensor {
	t.Helper()
	flat := []int64{}
	for _, r := range rows {
		flat = append(flat, r...)
	}
	x, err := tensorOf(flat, []int64{int64(len(rows)), int64(len(rows[0]))}, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func maxAbsDiff(a, b *ts.Tensor) float64 {
	d := a.MustSub(b, false).MustAbs(true).MustMax(true)
	return d.Float64Values()[0]
}

// The cache path, fed all at once or one token at a time, must give the
// training path's logits.
func TestCachedMatchesForward(t *testing.T) {
	g := newTest(t, Config{Preset: "nano", Vocab: 61, Context: 32, Seed: 1})
	x := ids(t, [][]int64{{1, 5, 9, 2, 7, 7, 3, 60}, {4, 4, 0, 12, 33, 8, 1, 2}})
	full := g.Forward(x)
	if sz := full.MustSize(); sz[0] != 2 || sz[1] != 8 || sz[2] != 61 {
		t.Fatalf("logits %v, want [2 8 61]", sz)
	}
	c1, _ := g.NewCache(2, 8)
	all := g.ForwardCached(x, c1)
	if d := maxAbsDiff(full, all); d > 1e-5 {
		t.Errorf("cached (one call) differs from Forward by %g", d)
	}
	c2, _ := g.NewCache(2, 8)
	for i := int64(0); i < 8; i++ {
		col := x.MustNarrow(1, i, 1, false)
		step := g.ForwardCached(col, c2)
		want := full.MustNarrow(1, i, 1, false)
		if d := maxAbsDiff(step, want); d > 1e-5 {
			t.Errorf("position %d: cached step differs from Forward by %g", i, d)
		}
	}
	if c2.Len() != 8 {
		t.Errorf("cache length %d, want 8", c2.Len())
	}
}

// Left-padded rows must decode as they do alone, with and without the cache.
func TestGeneratePaddedBatch(t *testing.T) {
	g := newTest(t, Config{Preset: "nano", Vocab: 61, Context: 64, Seed: 2})
	prompts := [][]int32{{3, 1, 4, 1, 5, 9, 2, 6}, {2, 7}, {18, 28, 18, 28, 45}}
	batched, err := g.Generate(prompts, 12, GenOptions{UseCache: true})
	if err != nil {
		t.Fatal(err)
	}
	recomputed, err := g.Generate(prompts, 12, GenOptions{UseCache: false})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range prompts {
		alone, err := g.Generate([][]int32{p}, 12, GenOptions{UseCache: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(batched[i]) != 12 {
			t.Fatalf("row %d: %d tokens, want 12", i, len(batched[i]))
		}
		for j := range alone[0] {
			if alone[0][j] != batched[i][j] || recomputed[i][j] != batched[i][j] {
				t.Fatalf("row %d: batched %v, alone %v, recomputed %v", i, batched[i], alone[0], recomputed[i])
			}
		}
	}
	// 2 prompt tokens + 63 new fill the 64 positions: the last new token
	// is never fed back. One more overflows.
	if _, err := g.Generate([][]int32{{1, 2}}, 63, GenOptions{UseCache: true}); err != nil {
		t.Errorf("filling the context exactly: %v", err)
	}
	if _, err := g.Generate([][]int32{{1, 2}}, 64, GenOptions{}); err == nil {
		t.Error("generating past the context did not fail")
	}
	if _, err := g.Generate([][]int32{{61}}, 1, GenOptions{}); err == nil {
		t.Error("a token outside the vocabulary did not fail")
	}
}

func TestCacheReorder(t *testing.T) {
	g := newTest(t, Config{Preset: "nano", Vocab: 61, Context: 16, Seed: 5})
	x := ids(t, [][]int64{{1, 2, 3}, {9, 8, 7}})
	c, _ := g.NewCache(2, 8)
	g.ForwardCached(x, c)
	if err := c.Reorder([]int{1, 1}); err != nil {
		t.Fatal(err)
	}
	next := ids(t, [][]int64{{5}, {5}})
	out := g.ForwardCached(next, c)
	a := out.MustSelect(0, 0, false)
	b := out.MustSelect(0, 1, false)
	if d := maxAbsDiff(a, b); d != 0 {
		t.Errorf("rows reordered to the same history differ by %g", d)
	}
	full := g.Forward(ids(t, [][]int64{{9, 8, 7, 5}})).MustNarrow(1, 3, 1, false).MustSelect(0, 0, false)
	if d := maxAbsDiff(a, full); d > 1e-5 {
		t.Errorf("reordered row differs from recomputation by %g", d)
	}
}

func TestReplicaSharesWeights(t *testing.T) {
	g := newTest(t, Config{Preset: "nano", Vocab: 61, Context: 16, Seed: 5})
	r := g.Replica()
	x := ids(t, [][]int64{{1, 2, 3, 4}})
	if d := maxAbsDiff(g.Forward(x), r.Forward(x)); d != 0 {
		t.Fatalf("replica logits differ by %g", d)
	}
	torchx.NoGrad(func() { g.Params()[0].Tensor.MustMulScalar_(ts.FloatScalar(2)) })
	if d := maxAbsDiff(g.Forward(x), r.Forward(x)); d != 0 {
		t.Fatalf("after updating the master, replica logits differ by %g", d)
	}
	loss := r.Forward(x).MustSum(gotch.Float, true)
	loss.MustBackward()
	if g.Params()[0].Tensor.MustGrad(false).MustDefined() {
		t.Error("backward on the replica wrote the master's gradient")
	}
	if !r.Params()[0].Tensor.MustGrad(false).MustDefined() {
		t.Error("backward on the replica left its own gradient undefined")
	}
}

// Long sequences take the blocked causal path; it must agree with the
// cache path's plain masked attention.
func TestBlockedAttentionMatchesCache(t *testing.T) {
	g := newTest(t, Config{Preset: "nano", Vocab: 61, Context: 256, Seed: 9})
	for _, n := range []int{64, 256} {
		row := make([]int64, n)
		for i := range row {
			row[i] = int64((i*17 + 3) % 61)
		}
		x := ids(t, [][]int64{row})
		full := g.Forward(x)
		c, _ := g.NewCache(1, n)
		cached := g.ForwardCached(x, c)
		if d := maxAbsDiff(full, cached); d > 1e-4 {
			t.Errorf("T=%d: blocked attention differs from masked attention by %g", n, d)
		}
	}
}

// The prompt pass's last-position head must give the full head's last
// position, at a size where BLAS picks its product kernels by shape (batch
// 3 × 40 tokens). The products of 3 and of 120 rows may round differently
// (measured: 1.8e-7 here), so the check is to float32 rounding, and the
// greedy choice must agree.
func TestForwardCachedLastIsFullsLastPosition(t *testing.T) {
	g := newTest(t, Config{Preset: "tiny", Vocab: 300, Context: 64, Seed: 3})
	rows := make([][]int64, 3)
	for r := range rows {
		for j := 0; j < 40; j++ {
			rows[r] = append(rows[r], int64((r*97+j*31)%300))
		}
	}
	x := ids(t, rows)
	starts := []int{0, 5, 17} // left padding, as Stepper makes it
	c1, _ := g.NewCache(3, 41)
	c2, _ := g.NewCache(3, 41)
	for _, c := range []*Cache{c1, c2} {
		if err := c.SetStarts(starts); err != nil {
			t.Fatal(err)
		}
	}
	full := g.ForwardCached(x, c1)
	last := g.ForwardCachedLast(x, c2)
	if sz := last.MustSize(); sz[0] != 3 || sz[1] != 1 || sz[2] != 300 {
		t.Fatalf("last-position logits %v, want [3 1 300]", sz)
	}
	fullLast := full.MustNarrow(1, 39, 1, false)
	if d := maxAbsDiff(fullLast, last); d > 1e-6 {
		t.Errorf("last-position head differs from the full head's last position by %g", d)
	}
	want, got := rowsOf(fullLast, 3), rowsOf(last, 3)
	for r := range want {
		if a, b := Argmax(want[r]), Argmax(got[r]); a != b {
			t.Errorf("row %d: greedy token %d with the full head, %d with the last position's", r, a, b)
		}
	}
	// Both caches hold the same keys: the next step (one position, the
	// same product either way) agrees bit for bit.
	next := ids(t, [][]int64{{7}, {8}, {9}})
	if d := maxAbsDiff(g.ForwardCached(next, c1), g.ForwardCachedLast(next, c2)); d != 0 {
		t.Errorf("step after the prompt differs by %g", d)
	}
}
