// Package splitmix is SplitMix64 (Steele, Lea and Flood 2014, "Fast
// Splittable Pseudorandom Number Generators", OOPSLA, with the output
// constants of Vigna's splitmix64.c): a 64-bit counter stepped by the
// golden ratio and passed through a bijective mixer. memo uses it wherever
// a random choice must be recomputable from a seed on any machine and any
// Go version (goldfish masks, splits and shuffles, reference-model halves),
// which math/rand's generators do not promise.
package splitmix

// Golden is the counter's step, 2^64 divided by the golden ratio (odd).
const Golden = 0x9e3779b97f4a7c15

// Mix is the finaliser: a bijection of 64 bits with full avalanche, so that
// consecutive inputs give independent-looking outputs.
func Mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Stream is the generator: Next steps the counter and mixes it.
type Stream struct{ state uint64 }

// New returns the stream that starts from seed.
func New(seed uint64) Stream { return Stream{state: seed} }

// Next returns the stream's next value.
func (s *Stream) Next() uint64 {
	s.state += Golden
	return Mix(s.state)
}
