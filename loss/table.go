package loss

import "sync"

const (
	// TableSize is the number of entries in the reference's hash table
	// (a prime, so the product key spreads over all of it).
	TableSize = 1_000_003
	// TableSeed seeds the generator that fills the table (fib47, a prime).
	TableSeed = 2971215073
)

var (
	tableOnce sync.Once
	table     []float32
)

// Table returns the reference's hash table: torch.rand(1_000_003) drawn from
// a CPU generator seeded with TableSeed, i.e. for each 32-bit MT19937 output
// u, float32(u & 0xFFFFFF) * 2^-24, in order. It is built once, on first use
// (about 10 ms), and shared; callers must not modify it.
func Table() []float32 {
	tableOnce.Do(func() {
		t := make([]float32, TableSize)
		g := newMT19937(TableSeed)
		for i := range t {
			// 24 random bits scaled into [0, 1): exact in float32.
			t[i] = float32(g.uint32()&0xFFFFFF) * (1.0 / (1 << 24))
		}
		table = t
	})
	return table
}
