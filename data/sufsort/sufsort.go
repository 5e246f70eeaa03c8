// Package sufsort sorts the suffixes of a token stream in which every
// document ends with a separator id, a partition of first tokens at a time:
// the shared core of the suffix-array index (data/tokindex) and of the
// exact-substring dedup of a data build (data.dedup_tokens). A caller
// collects the positions whose first token falls in a range into buckets
// (Collect), then sorts each bucket on the tokens after the first
// (SortBuckets); partitions of first-token ranges come out in order, so
// nothing is merged and only one partition is held at a time.
package sufsort

import (
	"cmp"
	"runtime"
	"slices"
	"sync"
	"unsafe"
)

// Token is a stream's element: 2 bytes a token when the vocabulary leaves
// room for the separator below 2^16, else 4.
type Token interface{ uint16 | uint32 }

// Sep is the separator id of a stream of width bytes a token: the largest
// value, which no tokenizer of that width emits.
func Sep(width int) uint32 {
	if width == 2 {
		return 1<<16 - 1
	}
	return 1<<32 - 1
}

// Width is the bytes a token of a stream over vocab ids takes.
func Width(vocab int) int {
	if uint64(vocab) > uint64(Sep(2)) {
		return 4
	}
	return 2
}

// View views n tokens of a mapped stream (the mapping is page aligned, so
// aligned for T).
func View[T Token](mem []byte, n int64) []T {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(mem))), n)
}

// Starts returns the bucket starts of first tokens [lo, hi) within a
// partition, from hist (suffixes by first token): token t's bucket is
// [starts[t-lo], starts[t-lo+1]).
func Starts(hist []uint32, lo, hi int) []int {
	starts := make([]int, hi-lo+1)
	for t := lo; t < hi; t++ {
		starts[t-lo+1] = starts[t-lo] + int(hist[t])
	}
	return starts
}

// Collect puts each position p in [from, to) of s whose token is in [lo,
// hi) at buf[next[s[p]-lo]] and advances that slot: called with next a
// copy of Starts, for every document of the partition, it fills each
// bucket in position order.
func Collect[T Token](s []T, buf []uint32, next []int, lo, hi int, from, to int64) {
	for pos := from; pos < to; pos++ {
		t := int(s[pos])
		if t >= lo && t < hi {
			buf[next[t-lo]] = uint32(pos)
			next[t-lo]++
		}
	}
}

// SortBuckets sorts each first-token bucket buf[bounds[i]:bounds[i+1]] on
// the tokens after the first, up to maxWindow tokens in all, then by
// position, on every core; the biggest buckets first. A suffix stops at
// its document's separator: two that agree up to it order by position.
func SortBuckets[T Token](s []T, buf []uint32, bounds []int, maxWindow int, sepID T) {
	order := make([]int, 0, len(bounds)-1)
	for i := 0; i+1 < len(bounds); i++ {
		if bounds[i+1]-bounds[i] > 1 {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Compare(bounds[b+1]-bounds[b], bounds[a+1]-bounds[a])
	})
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var keyed []keyedPos
			for i := range work {
				keyed = sortBucket(s, buf[bounds[i]:bounds[i+1]], keyed, maxWindow, sepID)
			}
		}()
	}
	for _, i := range order {
		work <- i
	}
	close(work)
	wg.Wait()
}

// keyedPos is a suffix with its next tokens packed into a key.
type keyedPos struct {
	key uint64
	pos uint32
}

// sortBucket sorts one bucket. Comparing suffixes reads the stream at
// random, a cache miss a token; so each suffix first gets a key of its
// tokens 1..64/bits (zeros after a separator, so that two suffixes whose
// documents end at the same token tie and fall back to position), sorted
// in place, and only equal keys compare the stream from the token after.
// keyed is scratch, returned for reuse.
func sortBucket[T uint16 | uint32](s []T, bucket []uint32, keyed []keyedPos, maxWindow int, sepID T) []keyedPos {
	bits := int(unsafe.Sizeof(T(0))) * 8
	per := 64 / bits
	if maxWindow <= per {
		slices.SortFunc(bucket, func(a, b uint32) int { return cmpSuffix(s, a, b, 1, maxWindow, sepID) })
		return keyed
	}
	keyed = slices.Grow(keyed[:0], len(bucket))[:len(bucket)]
	for i, p := range bucket {
		var key uint64
		ended := false
		for k := 1; k <= per; k++ {
			key <<= bits
			if ended {
				continue
			}
			t := s[int(p)+k]
			key |= uint64(t)
			ended = t == sepID
		}
		keyed[i] = keyedPos{key, p}
	}
	slices.SortFunc(keyed, func(a, b keyedPos) int {
		if a.key != b.key {
			return cmp.Compare(a.key, b.key)
		}
		if sepInKey(a.key, bits, sepID) {
			return cmp.Compare(a.pos, b.pos) // both documents ended within the key
		}
		return cmpSuffix(s, a.pos, b.pos, per+1, maxWindow, sepID)
	})
	for i := range keyed {
		bucket[i] = keyed[i].pos
	}
	return keyed
}

// sepInKey says whether a key holds a separator (its documents end
// within it).
func sepInKey[T uint16 | uint32](key uint64, bits int, sepID T) bool {
	for ; key != 0; key >>= bits {
		if key&(1<<bits-1) == uint64(sepID) {
			return true
		}
	}
	return false
}

// cmpSuffix orders two suffixes equal before token from on their first
// maxWindow tokens, then by position. Both end at a separator (the
// stream's last token is one), where they stop: no suffix reads into the
// next document.
func cmpSuffix[T uint16 | uint32](s []T, a, b uint32, from, maxWindow int, sepID T) int {
	for k := from; k < maxWindow; k++ {
		ta, tb := s[int(a)+k], s[int(b)+k]
		if ta != tb {
			return cmp.Compare(ta, tb)
		}
		if ta == sepID {
			break
		}
	}
	return cmp.Compare(a, b)
}
