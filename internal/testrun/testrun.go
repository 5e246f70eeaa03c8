// Package testrun reads finished run directories for tests that compare
// two runs: the final weights by name and the relative distance between
// two sets of them. train's and dist's tests both compare runs this way;
// one reader keeps what "the final weights" means the same in both.
package testrun

import (
	"math"
	"testing"

	"github.com/memo-research/memo/checkpoint"
)

// Weights is the final checkpoint's weights of runDir by name, as float64
// whatever their stored precision, loaded on the CPU.
func Weights(t testing.TB, runDir string) map[string][]float64 {
	t.Helper()
	_, vs, _, err := checkpoint.Load(runDir, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float64{}
	for name, v := range vs.Variables() {
		out[name] = v.Float64Values()
	}
	return out
}

// RelDiff is ‖a − b‖₂ / ‖b‖₂ over all weights of b; a weight of b that a
// lacks or holds at another size fails the test.
func RelDiff(t testing.TB, a, b map[string][]float64) float64 {
	t.Helper()
	var d, n float64
	for name, y := range b {
		x, ok := a[name]
		if !ok || len(x) != len(y) {
			t.Fatalf("weight %s: %d values vs %d", name, len(x), len(y))
		}
		for i := range y {
			d += (x[i] - y[i]) * (x[i] - y[i])
			n += y[i] * y[i]
		}
	}
	return math.Sqrt(d / n)
}
