package engine

import (
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
)

// The cache path, fed all at once or one token at a time, must give the
// training path's logits.
func TestCachedMatchesForward(t *testing.T) {
	g := newTest(t, model.Config{Preset: "nano", Vocab: 61, Context: 32, Seed: 1})
	x := ids(t, [][]int64{{1, 5, 9, 2, 7, 7, 3, 60}, {4, 4, 0, 12, 33, 8, 1, 2}})
	full := g.Forward(x)
	if sz := full.MustSize(); sz[0] != 2 || sz[1] != 8 || sz[2] != 61 {
		t.Fatalf("logits %v, want [2 8 61]", sz)
	}
	c1, _ := NewCache(g, 2, 8)
	all := c1.Forward(x)
	if d := maxAbsDiff(full, all); d > 1e-5 {
		t.Errorf("cached (one call) differs from Forward by %g", d)
	}
	c2, _ := NewCache(g, 2, 8)
	for i := int64(0); i < 8; i++ {
		col := x.MustNarrow(1, i, 1, false)
		step := c2.Forward(col)
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
	g := newTest(t, model.Config{Preset: "nano", Vocab: 61, Context: 64, Seed: 2})
	prompts := [][]int32{{3, 1, 4, 1, 5, 9, 2, 6}, {2, 7}, {18, 28, 18, 28, 45}}
	batched, err := Generate(g, prompts, 12, GenOptions{UseCache: true})
	if err != nil {
		t.Fatal(err)
	}
	recomputed, err := Generate(g, prompts, 12, GenOptions{UseCache: false})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range prompts {
		alone, err := Generate(g, [][]int32{p}, 12, GenOptions{UseCache: true})
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
	if _, err := Generate(g, [][]int32{{1, 2}}, 63, GenOptions{UseCache: true}); err != nil {
		t.Errorf("filling the context exactly: %v", err)
	}
	if _, err := Generate(g, [][]int32{{1, 2}}, 64, GenOptions{}); err == nil {
		t.Error("generating past the context did not fail")
	}
	if _, err := Generate(g, [][]int32{{61}}, 1, GenOptions{}); err == nil {
		t.Error("a token outside the vocabulary did not fail")
	}
}

func TestCacheReorder(t *testing.T) {
	g := newTest(t, model.Config{Preset: "nano", Vocab: 61, Context: 16, Seed: 5})
	x := ids(t, [][]int64{{1, 2, 3}, {9, 8, 7}})
	c, _ := NewCache(g, 2, 8)
	c.Forward(x)
	if err := c.Reorder([]int{1, 1}); err != nil {
		t.Fatal(err)
	}
	next := ids(t, [][]int64{{5}, {5}})
	out := c.Forward(next)
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

// Long sequences take the blocked causal path; it must agree with the
// cache path's plain masked attention.
func TestBlockedAttentionMatchesCache(t *testing.T) {
	g := newTest(t, model.Config{Preset: "nano", Vocab: 61, Context: 256, Seed: 9})
	for _, n := range []int{64, 256} {
		row := make([]int64, n)
		for i := range row {
			row[i] = int64((i*17 + 3) % 61)
		}
		x := ids(t, [][]int64{row})
		full := g.Forward(x)
		c, _ := NewCache(g, 1, n)
		cached := c.Forward(x)
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
	g := newTest(t, model.Config{Preset: "tiny", Vocab: 300, Context: 64, Seed: 3})
	rows := make([][]int64, 3)
	for r := range rows {
		for j := 0; j < 40; j++ {
			rows[r] = append(rows[r], int64((r*97+j*31)%300))
		}
	}
	x := ids(t, rows)
	starts := []int{0, 5, 17} // left padding, as Stepper makes it
	c1, _ := NewCache(g, 3, 41)
	c2, _ := NewCache(g, 3, 41)
	for _, c := range []*Cache{c1, c2} {
		if err := c.SetStarts(starts); err != nil {
			t.Fatal(err)
		}
	}
	full := c1.Forward(x)
	last := c2.ForwardLast(x)
	if sz := last.MustSize(); sz[0] != 3 || sz[1] != 1 || sz[2] != 300 {
		t.Fatalf("last-position logits %v, want [3 1 300]", sz)
	}
	fullLast := full.MustNarrow(1, 39, 1, false)
	if d := maxAbsDiff(fullLast, last); d > 1e-6 {
		t.Errorf("last-position head differs from the full head's last position by %g", d)
	}
	want, got := model.RowsOf(fullLast, 3), model.RowsOf(last, 3)
	for r := range want {
		if a, b := Argmax(want[r]), Argmax(got[r]); a != b {
			t.Errorf("row %d: greedy token %d with the full head, %d with the last position's", r, a, b)
		}
	}
	// Both caches hold the same keys: the next step (one position, the
	// same product either way) agrees bit for bit.
	next := ids(t, [][]int64{{7}, {8}, {9}})
	if d := maxAbsDiff(c1.Forward(next), c2.ForwardLast(next)); d != 0 {
		t.Errorf("step after the prompt differs by %g", d)
	}
}

// BenchmarkGenerateCached times greedy decoding of 50 tokens for 8 prompts.
func BenchmarkGenerateCached(b *testing.B) {
	vs := nn.NewVarStore(gotch.CPU)
	g, err := model.New(vs.Root(), model.Config{Preset: "small", Vocab: 4096})
	if err != nil {
		b.Fatal(err)
	}
	prompts := make([][]int32, 8)
	for i := range prompts {
		for j := 0; j < 50+i; j++ {
			prompts[i] = append(prompts[i], int32((i*31+j*7)%4096))
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Generate(g, prompts, 50, GenOptions{UseCache: true}); err != nil {
			b.Fatal(err)
		}
		torchx.Collect()
	}
}
