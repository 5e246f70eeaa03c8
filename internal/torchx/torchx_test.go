package torchx

import (
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Seeding libtorch must make its random draws repeat.
func TestSeedRepeatsDraws(t *testing.T) {
	Init(1, 42)
	a := ts.MustRandn([]int64{4, 4}, gotch.Float, gotch.CPU).Float64Values()
	Seed(42)
	b := ts.MustRandn([]int64{4, 4}, gotch.Float, gotch.CPU).Float64Values()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("draw %d differs after reseeding: %v vs %v", i, a[i], b[i])
		}
	}
	if got := Threads(); got != 1 {
		t.Fatalf("Threads() = %d after Init(1, ...), want 1", got)
	}
}
