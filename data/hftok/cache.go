package hftok

import (
	"strings"
	"sync"
	"sync/atomic"
)

// pieceCache maps pre-tokens to their ids. It is sharded maps under
// read-write locks rather than a sync.Map: lookups dominate encoding, and
// sync.Map's hashing of interface keys cost a quarter of Llama 3's encoding
// time. A piece is cached only while the cache holds fewer than maxCached.
type pieceCache struct {
	shards [32]struct {
		sync.RWMutex
		m map[string][]int32
	}
	n atomic.Int64
}

// shard picks a shard from the length and two bytes: enough to spread
// locks, without hashing the string twice.
func (c *pieceCache) shard(s string) int {
	h := len(s)
	if len(s) > 0 {
		h = h*31 + int(s[0])*7 + int(s[len(s)-1])
	}
	return h & 31
}

func (c *pieceCache) get(s string) ([]int32, bool) {
	sh := &c.shards[c.shard(s)]
	sh.RLock()
	ids, ok := sh.m[s]
	sh.RUnlock()
	return ids, ok
}

// put stores ids for s unless the cache is full or s is too long to be
// worth keeping (a whole document, when there is no pre-tokenizer).
func (c *pieceCache) put(s string, ids []int32) {
	if len(s) >= maxCachedLen || c.n.Load() >= maxCached {
		return
	}
	sh := &c.shards[c.shard(s)]
	sh.Lock()
	if sh.m == nil {
		sh.m = map[string][]int32{}
	}
	if _, ok := sh.m[s]; !ok {
		// A copy of the key: s points into the text being encoded, which
		// the cache would otherwise keep alive for the life of the process.
		sh.m[strings.Clone(s)] = ids
		c.n.Add(1)
	}
	sh.Unlock()
}
