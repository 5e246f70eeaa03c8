package loss

import "sync"

// hashTableMasker is the reference's "hash-table" strategy: the wrapping
// int64 product of the h targets ending at p indexes the table, and p is
// dropped when the value there is below 1/k.
type hashTableMasker struct {
	h    int
	drop []uint64 // bit i set = Table()[i] < float32(1/k)
}

var (
	dropBitsMu sync.Mutex
	dropBits   = map[int][]uint64{}
)

// tableDropBits precomputes, once per k, which table entries mean "drop":
// a 125 KB bitset stays in cache where the 4 MB table would not.
func tableDropBits(k int) []uint64 {
	dropBitsMu.Lock()
	defer dropBitsMu.Unlock()
	if b, ok := dropBits[k]; ok {
		return b
	}
	// PyTorch compares a float32 tensor with the Python float 1/k in float32.
	thr := float32(1.0 / float64(k))
	b := make([]uint64, (TableSize+63)/64)
	for i, v := range Table() {
		if v < thr {
			b[i>>6] |= 1 << (i & 63)
		}
	}
	dropBits[k] = b
	return b
}

func newHashTableMasker(k, h int) *hashTableMasker {
	return &hashTableMasker{h: h, drop: tableDropBits(k)}
}

// TableIndex is the table slot the reference looks up for a window: the
// wrapping int64 product of its tokens, reduced mod TableSize to [0, TableSize).
func TableIndex(window []int32) int {
	key := int64(1)
	for _, t := range window {
		key *= int64(t)
	}
	idx := key % TableSize
	if idx < 0 {
		idx += TableSize
	}
	return int(idx)
}

// tableDecider drops a key whose table value is below 1/k.
type tableDecider struct{ drop []uint64 }

func (d tableDecider) decide(key int64) bool {
	idx := key % TableSize
	// Branch-free "add TableSize if negative": the sign is a coin flip, so
	// a branch would be mispredicted half the time.
	idx += TableSize & (idx >> 63)
	return d.drop[idx>>6]&(1<<(idx&63)) != 0
}

func (m *hashTableMasker) Mask(targets []int32, dropped []bool) {
	maskProducts(targets, m.h, tableDecider{m.drop}, dropped)
}
