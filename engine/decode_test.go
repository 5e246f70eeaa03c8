package engine

import (
	"errors"
	"math"
	"reflect"
	"sync"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Continue by hand: a counter "model" whose logits favour the token after
// the last one fed. The first token comes from the logits given, next is
// called n−1 times, and its errors and a wrong row count stop the loop.
func TestContinue(t *testing.T) {
	logitsAfter := func(toks []int32) [][]float32 {
		out := make([][]float32, len(toks))
		for r, tok := range toks {
			out[r] = make([]float32, 8)
			out[r][(tok+1)%8] = 1
		}
		return out
	}
	calls := 0
	next := func(toks []int32) ([][]float32, error) {
		calls++
		return logitsAfter(toks), nil
	}
	got, err := Continue(next, logitsAfter([]int32{2, 6}), 4, Greedy)
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]int32{{3, 4, 5, 6}, {7, 0, 1, 2}}; !reflect.DeepEqual(got, want) || calls != 3 {
		t.Errorf("got %v after %d calls of next, want %v after 3", got, calls, want)
	}
	// pick sees every row once at every step, possibly several at once.
	var mu sync.Mutex
	seen := map[int]int{}
	if _, err := Continue(next, logitsAfter([]int32{0, 0, 0}), 2, func(r int, l []float32) int32 {
		mu.Lock()
		seen[r]++
		mu.Unlock()
		return 0
	}); err != nil || !reflect.DeepEqual(seen, map[int]int{0: 2, 1: 2, 2: 2}) {
		t.Errorf("pick saw rows %v times (%v), want 0 1 2 twice", seen, err)
	}
	if got, err := Continue(next, logitsAfter([]int32{1}), 0, Greedy); err != nil || !reflect.DeepEqual(got, [][]int32{nil}) {
		t.Errorf("n = 0: %v, %v; want one empty row", got, err)
	}
	boom := errors.New("boom")
	failing := func([]int32) ([][]float32, error) { return nil, boom }
	if _, err := Continue(failing, logitsAfter([]int32{1}), 2, Greedy); !errors.Is(err, boom) {
		t.Errorf("next's error: got %v", err)
	}
	short := func([]int32) ([][]float32, error) { return logitsAfter([]int32{1}), nil }
	if _, err := Continue(short, logitsAfter([]int32{1, 2}), 2, Greedy); err == nil {
		t.Error("one row of logits for two rows: no error")
	}
}

// ContinueIDs by hand: next is called n−1 times with the tokens just
// chosen, and its errors and a wrong token count stop the loop.
func TestContinueIDs(t *testing.T) {
	var fed [][]int32
	next := func(toks []int32) ([]int32, error) {
		fed = append(fed, append([]int32(nil), toks...))
		out := make([]int32, len(toks))
		for r, tok := range toks {
			out[r] = (tok + 1) % 8
		}
		return out, nil
	}
	got, err := ContinueIDs(next, []int32{3, 7}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]int32{{3, 4, 5}, {7, 0, 1}}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if want := [][]int32{{3, 7}, {4, 0}}; !reflect.DeepEqual(fed, want) {
		t.Errorf("next was fed %v, want %v", fed, want)
	}
	if got, err := ContinueIDs(next, []int32{1}, 0); err != nil || !reflect.DeepEqual(got, [][]int32{nil}) {
		t.Errorf("n = 0: %v, %v; want one empty row", got, err)
	}
	boom := errors.New("boom")
	if _, err := ContinueIDs(func([]int32) ([]int32, error) { return nil, boom }, []int32{1}, 2); !errors.Is(err, boom) {
		t.Errorf("next's error: got %v", err)
	}
	if _, err := ContinueIDs(func([]int32) ([]int32, error) { return []int32{1}, nil }, []int32{1, 2}, 2); err == nil {
		t.Error("one token for two rows: no error")
	}
}

// TestArgmaxNaN: Argmax ranks a NaN below every number wherever it sits
// (at index 0 it used to be kept, nothing comparing above it); a row of
// NaNs gives 0.
func TestArgmaxNaN(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct {
		row  []float32
		want int32
	}{
		{[]float32{nan, 1, 2}, 2},
		{[]float32{1, nan, 2}, 2},
		{[]float32{nan, 2, 2}, 1},
		{[]float32{nan, nan}, 0},
		{[]float32{nan, float32(math.Inf(-1))}, 1},
	} {
		if got := Argmax(tc.row); got != tc.want {
			t.Errorf("Argmax(%v) = %d, want %d", tc.row, got, tc.want)
		}
	}
}

// argmaxRows, taken by libtorch, must pick Argmax's token on every row:
// the first of equal maxima, +0 and −0 equal, infinities, and rows with a
// NaN, which torch.argmax ranks first and Argmax never picks.
func TestArgmaxRowsIsArgmax(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	rows := [][]float32{
		{0.5, 2, -1, 2, 1},          // tie: the first
		{negZero, 0, negZero, 0, 0}, // ±0 equal: the first
		{-inf, -inf, -inf, -inf, -inf},
		{1, inf, 3, inf, -inf},
		{1, nan, 3, 2, 0},    // a NaN inside: Argmax skips it
		{nan, 5, 9, 9, 1},    // a NaN first: skipped as well
		{-3, -2, -1, -2, -9}, // all negative
	}
	flat := []float32{}
	for _, r := range rows {
		flat = append(flat, r...)
	}
	devs := testDevices()
	for _, dev := range devs {
		for _, dt := range []gotch.DType{gotch.Float, gotch.BFloat16, gotch.Half} {
			x := ts.MustOfSlice(flat).MustView([]int64{int64(len(rows)), 5}, true).MustTotype(dt, true).MustTo(dev, true)
			got := argmaxRows(x)
			for i, r := range rows {
				if want := Argmax(r); got[i] != want {
					t.Errorf("%v %v row %d %v: argmaxRows %d, Argmax %d", dev, dt, i, r, got[i], want)
				}
			}
			x.MustDrop()
		}
	}
}

// Greedy decoding through StartGreedy and NextGreedy (the argmax on the
// device) must give the tokens Greedy picks from Start's and Next's
// logits, with and without the cache, on left-padded prompts.
func TestGreedyOnDeviceMatchesLogits(t *testing.T) {
	g := newTest(t, model.Config{Preset: "nano", Vocab: 97, Context: 48, Seed: 3})
	prompts := [][]int32{{5, 17, 2, 90, 41}, {8}, {33, 33, 33}, {1, 2, 3, 4, 5, 6, 7, 8, 9}}
	const n = 12
	for _, useCache := range []bool{true, false} {
		s := NewStepper(g, useCache)
		logits, err := s.Start(prompts, n)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Continue(s.Next, logits, n, Greedy)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		d := NewStepper(g, useCache)
		first, err := d.StartGreedy(prompts, n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ContinueIDs(d.NextGreedy, first, n)
		if err != nil {
			t.Fatal(err)
		}
		d.Close()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("cache %v: greedy on the device %v, from the logits %v", useCache, got, want)
		}
		gen, err := Generate(g, prompts, n, GenOptions{UseCache: useCache})
		if err != nil || !reflect.DeepEqual(gen, want) {
			t.Errorf("cache %v: Generate %v (%v), want %v", useCache, gen, err, want)
		}
	}
	if _, err := NewStepper(g, true).StartGreedy([][]int32{{1, 200}}, 2); err == nil {
		t.Error("StartGreedy took a token outside the vocabulary")
	}
}

// ContinueGreedy, feeding each step's argmax to the next on the device,
// must give the step-by-step loop's tokens and leave the stepper where
// that loop does (the next NextGreedy agrees), with and without the
// cache; and where a logit is NaN (an LM-head row of NaNs here, which
// torch.argmax would pick and Argmax never does) it must still give
// Argmax's tokens.
func TestContinueGreedyMatchesSteps(t *testing.T) {
	for _, poisoned := range []bool{false, true} {
		g := newTest(t, model.Config{Preset: "nano", Vocab: 97, Context: 48, Seed: 3, Untied: true})
		if poisoned {
			head, ok := g.Param("lm_head.weight")
			if !ok {
				t.Fatal("no lm_head.weight")
			}
			torchx.NoGrad(func() {
				row := head.Tensor.MustNarrow(0, 5, 1, false)
				row.MustFill_(ts.FloatScalar(math.NaN()))
				row.MustDrop()
			})
		}
		prompts := [][]int32{{5, 17, 2, 90, 41}, {8}, {33, 33, 33}, {1, 2, 3, 4, 5, 6, 7, 8, 9}}
		const n = 12
		for _, useCache := range []bool{true, false} {
			steps := NewStepper(g, useCache)
			logits, err := steps.Start(prompts, n+1)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Continue(steps.Next, logits, n, Greedy)
			if err != nil {
				t.Fatal(err)
			}
			last := make([]int32, len(want))
			for r := range want {
				last[r] = want[r][n-1]
			}
			wantNext, err := steps.NextGreedy(last)
			if err != nil {
				t.Fatal(err)
			}
			steps.Close()
			d := NewStepper(g, useCache)
			first, err := d.StartGreedy(prompts, n+1)
			if err != nil {
				t.Fatal(err)
			}
			got, err := d.ContinueGreedy(first, n)
			if err != nil {
				t.Fatal(err)
			}
			gotNext, err := d.NextGreedy(last)
			if err != nil {
				t.Fatal(err)
			}
			d.Close()
			if !reflect.DeepEqual(d.seqs, steps.seqs) || d.fed != steps.fed {
				t.Errorf("NaN head row %v, cache %v: rows %v (%d fed) after ContinueGreedy, %v (%d fed) step by step",
					poisoned, useCache, d.seqs, d.fed, steps.seqs, steps.fed)
			}
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotNext, wantNext) {
				t.Errorf("NaN head row %v, cache %v: ContinueGreedy %v then %v; step by step %v then %v",
					poisoned, useCache, got, gotNext, want, wantNext)
			}
		}
	}
}
