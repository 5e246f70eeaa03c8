package loss

import (
	"math"

	"github.com/memo-research/memo/internal/splitmix"
)

// randomMasker drops each target independently with probability 1/k.
// Decisions come from a counter-based generator keyed by (seed, row, p),
// where row is the row's global position in the training stream (the
// trainer passes it through MaskRow). The masker holds no state, so a run
// resumed from a checkpoint, or a batch masked by several ranks, draws the
// very masks an uninterrupted single process would. A repeated document
// lands at a new stream position at each occurrence and so gets a fresh
// mask, which is what a random baseline is for.
type randomMasker struct {
	seed uint64
	thr  uint64
}

func newRandomMasker(k int, seed int64) *randomMasker {
	return &randomMasker{seed: uint64(seed), thr: math.MaxUint64 / uint64(k)}
}

// splitmix64 is SplitMix64's output for counter x: a bijection with full
// avalanche, so consecutive counters give independent-looking outputs.
func splitmix64(x uint64) uint64 { return splitmix.Mix(x + splitmix.Golden) }

// Mask masks a row that has no place in a training stream (memo mask shows
// one text): it is row 0.
func (m *randomMasker) Mask(targets []int32, dropped []bool) {
	m.MaskRow(0, targets, dropped)
}

// MaskRow masks the row at global position row of the training stream.
func (m *randomMasker) MaskRow(row uint64, targets []int32, dropped []bool) {
	checkLen(targets, dropped)
	base := splitmix64(m.seed ^ splitmix64(row))
	for p := range targets {
		dropped[p] = splitmix64(base+uint64(p)) < m.thr
	}
}

// RowMasker is implemented by maskers whose decisions depend on which row
// of the training stream they mask (the random strategy); the hashed and
// static strategies look at the tokens alone and need no row number.
type RowMasker interface {
	Masker
	MaskRow(row uint64, targets []int32, dropped []bool)
}
