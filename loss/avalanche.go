package loss

// avalancheMasker is the reference's "hash-avalanche" strategy: the same
// window product as hash-table, as uint64, through hashint (Thomas Wang's
// 64-bit shift-add mix with every step masked to 32 bits), dropped when the
// hash is below (2^32-1)/k.
type avalancheMasker struct {
	h   int
	thr float32
}

func newAvalancheMasker(k, h int) *avalancheMasker {
	// The reference compares an int64 tensor with a Python float, which
	// PyTorch does in float32 (the default dtype): both sides are rounded.
	return &avalancheMasker{h: h, thr: float32(float64(1<<32-1) / float64(k))}
}

// WangHash32 is the reference's hashint(key, width=32), step for step, in
// uint64 arithmetic that wraps like the tensor code. Only the low 32 bits of
// key affect the result: the first step masks to 32 bits and its inputs'
// low 32 bits depend on nothing above.
func WangHash32(key uint64) uint32 {
	const mask = 1<<32 - 1
	key = (^key + (key << 21)) & mask
	key = (key << 21) - key - 1
	key ^= key >> 24
	key = (key + (key << 3) + (key << 8)) & mask
	key *= 265
	key ^= key >> 14
	key = (key + (key << 2) + (key << 4)) & mask
	key *= 21
	key ^= key >> 28
	key = (key + (key << 31)) & mask
	return uint32(key)
}

// wangDecider drops a key whose hash is below the threshold.
type wangDecider struct{ thr float32 }

func (d wangDecider) decide(key int64) bool {
	return float32(WangHash32(uint64(key))) < d.thr
}

func (m *avalancheMasker) Mask(targets []int32, dropped []bool) {
	maskProducts(targets, m.h, wangDecider{m.thr}, dropped)
}
