package loss

import (
	"math"
	"sync/atomic"
)

// randomMasker drops each target independently with probability 1/k.
// Decisions come from a counter-based generator keyed by (seed, row, p), so
// they are reproducible without shared generator state: the row number is
// the count of Mask calls so far, or the caller's own via MaskRow. A
// repeated document thus gets a fresh mask at each occurrence, which is what
// a random baseline is for.
type randomMasker struct {
	seed uint64
	thr  uint64
	rows atomic.Uint64
}

func newRandomMasker(k int, seed int64) *randomMasker {
	return &randomMasker{seed: uint64(seed), thr: math.MaxUint64 / uint64(k)}
}

// splitmix64 is Steele, Lea and Flood's finaliser: a bijection with full
// avalanche, so consecutive counters give independent-looking outputs.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Mask masks the next row in call order.
func (m *randomMasker) Mask(targets []int32, dropped []bool) {
	m.MaskRow(m.rows.Add(1)-1, targets, dropped)
}

// MaskRow masks the row numbered row (for example step*batch + i), which
// makes the mask independent of call order: use it when rows are masked
// concurrently or a run resumes mid-way.
func (m *randomMasker) MaskRow(row uint64, targets []int32, dropped []bool) {
	checkLen(targets, dropped)
	base := splitmix64(m.seed ^ splitmix64(row))
	for p := range targets {
		dropped[p] = splitmix64(base+uint64(p)) < m.thr
	}
}

// RowMasker is implemented by maskers whose decisions depend on which row
// they mask (the random strategy); the hashed strategies need no row number.
type RowMasker interface {
	Masker
	MaskRow(row uint64, targets []int32, dropped []bool)
}
