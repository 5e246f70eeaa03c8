package train

import (
	"math"
	"testing"
)

// Micro-batches and ranks combine their loss sums by adding field by field;
// the all-reduce carries them as a vector and must read back the same fields.
func TestLossSums(t *testing.T) {
	a := lossSums{kept: 0.5, allCE: 10, allN: 4, droppedCE: 3, droppedN: 1}
	b := lossSums{kept: 0.25, allCE: 2, allN: 2}
	cases := []struct {
		name string
		in   []lossSums
		want lossSums
	}{
		{"none", nil, lossSums{}},
		{"one", []lossSums{a}, a},
		{"two", []lossSums{a, b}, lossSums{kept: 0.75, allCE: 12, allN: 6, droppedCE: 3, droppedN: 1}},
	}
	for _, c := range cases {
		var s lossSums
		for _, x := range c.in {
			s.add(x)
		}
		if s != c.want {
			t.Errorf("%s: sum %+v, want %+v", c.name, s, c.want)
		}
		if got := lossSumsOf(s.vector()); got != s {
			t.Errorf("%s: lossSumsOf(vector()) = %+v, want %+v", c.name, got, s)
		}
	}
	if r := ratio(b.droppedCE, b.droppedN); !math.IsNaN(r) {
		t.Errorf("ratio over no dropped targets = %v, want NaN", r)
	}
}
