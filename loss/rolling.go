package loss

import (
	"math"
	"slices"
)

// rollingMasker is memo's own strategy: target p is dropped when a keyed,
// order-sensitive hash of the h targets before it (targets[p-h .. p-1], the
// paper's f(x_{i-h}, ..., x_{i-1})) is below 2^64/k, unless the target is
// exempt. Positions p < h have no full context in the row and are kept.
type rollingMasker struct {
	h      int
	thr    uint64
	key    uint64
	outPow uint64 // rollBase^(h-1): the weight of the token leaving the window
	exempt []int32
}

// rollBase is an odd multiplier, so the polynomial's weights are units mod
// 2^64 and no token's contribution can vanish.
const rollBase = 0x100000001b3

func newRollingMasker(k, h int, seed int64, exempt []int32) *rollingMasker {
	pow := uint64(1)
	for i := 1; i < h; i++ {
		pow *= rollBase
	}
	ex := slices.Clone(exempt)
	slices.Sort(ex)
	return &rollingMasker{
		h:      h,
		thr:    math.MaxUint64 / uint64(k),
		key:    splitmix64(uint64(seed) ^ 0x676f6c6466697368), // "goldfish"
		outPow: pow,
		exempt: slices.Compact(ex),
	}
}

// tokenValue spreads a token id over 64 bits and never maps it to 0, so
// token 0 and token 1 weigh like any other token (they do not in a product).
func tokenValue(t int32) uint64 {
	return (uint64(uint32(t)) + 1) * 0x9e3779b97f4a7c15
}

// fmix64 is MurmurHash3's 64-bit finaliser: it carries the high-order
// mixing of the polynomial down into every bit before the threshold test.
func fmix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

func (m *rollingMasker) isExempt(t int32) bool {
	switch len(m.exempt) {
	case 0:
		return false
	case 1:
		return t == m.exempt[0]
	}
	_, found := slices.BinarySearch(m.exempt, t)
	return found
}

func (m *rollingMasker) Mask(targets []int32, dropped []bool) {
	checkLen(targets, dropped)
	d := dropped[:len(targets)]
	clear(d)
	h := m.h
	if len(targets) <= h {
		return
	}
	// hash = sum of tokenValue(window[j]) * rollBase^(h-1-j), mod 2^64.
	var hash uint64
	for _, t := range targets[:h] {
		hash = hash*rollBase + tokenValue(t)
	}
	for p := h; p < len(targets); p++ {
		if t := targets[p]; !m.isExempt(t) {
			d[p] = fmix64(hash^m.key) < m.thr
		}
		hash = (hash-tokenValue(targets[p-h])*m.outPow)*rollBase + tokenValue(targets[p])
	}
}
