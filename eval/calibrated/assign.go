package calibrated

import (
	"fmt"
	"math/bits"

	"github.com/memo-research/memo/internal/splitmix"
)

// Assign decides which reference model trains on which of n candidates:
// in[k][j] is true when model k trains on candidate j. K must be even and
// at least 2. Models 2p and 2p+1 are complements, so every candidate is IN
// for exactly K/2 models and every even prefix of the models is balanced
// too: the first 4 rows of a K = 16 assignment are the K = 4 one. Pair p
// gives model 2p a uniformly random ⌊n/2⌋ of the candidates when p is even
// and ⌈n/2⌉ when p is odd, so with n odd the extra candidate alternates
// between the two halves of successive pairs.
//
// The result depends on (n, K, seed) alone: our own splitmix64 stream
// drives a Fisher–Yates shuffle per pair, so it does not move with Go's
// math/rand, and pair p's draw does not depend on K.
func Assign(n, K int, seed uint64) ([][]bool, error) {
	if n < 0 {
		return nil, fmt.Errorf("calibrated: Assign: n = %d candidates: must be >= 0", n)
	}
	if K < 2 || K%2 != 0 {
		return nil, fmt.Errorf("calibrated: Assign: K = %d reference models: must be even and >= 2", K)
	}
	in := make([][]bool, K)
	for k := range in {
		in[k] = make([]bool, n)
	}
	rng := splitmix64{splitmix.New(seed)}
	perm := make([]int, n)
	for p := 0; p < K/2; p++ {
		for i := range perm {
			perm[i] = i
		}
		// Fisher–Yates (Durstenfeld 1964): every permutation equally likely.
		for i := n - 1; i > 0; i-- {
			j := int(rng.below(uint64(i + 1)))
			perm[i], perm[j] = perm[j], perm[i]
		}
		half := n/2 + (n%2)*(p%2)
		for i, j := range perm {
			k := 2*p + 1 // the complement gets what 2p does not
			if i < half {
				k = 2 * p
			}
			in[k][j] = true
		}
	}
	return in, nil
}

// splitmix64 is internal/splitmix's stream, with Lemire's bounded draw.
type splitmix64 struct{ splitmix.Stream }

// below returns a uniform integer in [0, bound), bound > 0, by Lemire's
// multiply-and-reject method (Lemire 2019, "Fast Random Integer Generation
// in an Interval", ACM TOMACS): the high word of x·bound is uniform once
// the low words that would over-represent some results are rejected.
func (s *splitmix64) below(bound uint64) uint64 {
	hi, lo := bits.Mul64(s.Next(), bound)
	if lo < bound {
		threshold := -bound % bound // 2^64 mod bound
		for lo < threshold {
			hi, lo = bits.Mul64(s.Next(), bound)
		}
	}
	return hi
}
