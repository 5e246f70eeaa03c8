package engine

import (
	"errors"
	"reflect"
	"testing"
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
	// pick sees every row in order at every step.
	var seen []int
	if _, err := Continue(next, logitsAfter([]int32{0, 0, 0}), 2, func(r int, l []float32) int32 {
		seen = append(seen, r)
		return 0
	}); err != nil || !reflect.DeepEqual(seen, []int{0, 1, 2, 0, 1, 2}) {
		t.Errorf("pick saw rows %v (%v), want 0 1 2 twice", seen, err)
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
