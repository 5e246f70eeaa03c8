package data

import (
	"fmt"
	"hash/fnv"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// OverlapTokens is the window length of the member/non-member check: no
// control shares this many consecutive tokens with any target.
const OverlapTokens = 50

// assignSplits draws targets and controls from the target sources, then
// validation and background from what is left, all in one seeded
// permutation of doc ids. A would-be control that shares an OverlapTokens
// window with a target is rejected. So is a would-be background document
// that shares one with a target or a control: trained on, it would teach
// the model a control's text (no longer a non-member) or a target's (seen
// more often than its repetition count says). Every such rejection is
// reported by name. tokens gives a document's ids (from the build's spool):
// targets and controls keep theirs in memory for the window checks, the
// others are read one at a time.
func assignSplits(cfg Config, docs []*candidate, rep *Report, reject func(Rejected, string), tokens func(*candidate) []int32) error {
	perm := make([]int, len(docs))
	for i := range perm {
		perm[i] = i
	}
	shuffle(newSplitMix(uint64(cfg.Seed)^0x73706c697473), len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })

	inPool := func(c *candidate) bool {
		if len(cfg.TargetSources) == 0 {
			return true
		}
		for _, s := range cfg.TargetSources {
			if src, err := ParseSource(s); err == nil && src.Name() == c.source {
				return true
			}
		}
		return false
	}
	var pool, rest []*candidate
	for _, i := range perm {
		if inPool(docs[i]) {
			pool = append(pool, docs[i])
		} else {
			rest = append(rest, docs[i])
		}
	}
	if len(pool) < cfg.Targets+cfg.Controls {
		return fmt.Errorf("data.targets + data.controls = %d, but only %d eligible documents in the target sources (%d rejected, see report): lower them, add sources or change data.chunk_tokens / data.min_tokens",
			cfg.Targets+cfg.Controls, len(pool), len(rep.Rejected))
	}
	// members: the windows of targets, then of controls too. Their ids
	// stay in the spool: a window is read back only to confirm a hash hit.
	for i, c := range pool[:cfg.Targets] {
		c.split, c.reps = SplitTarget, cfg.repetitionsFor(i, cfg.Targets)
		rep.Repetitions[strconv.Itoa(c.reps)]++
	}
	members := newWindowIndex(pool[:cfg.Targets], tokens)
	// The targets' chunks by source document, for data.control_gap.
	targetChunks := map[int][]*candidate{}
	for _, c := range pool[:cfg.Targets] {
		targetChunks[c.parent] = append(targetChunks[c.parent], c)
	}
	next := cfg.Targets
	for n := 0; n < cfg.Controls; next++ {
		if next >= len(pool) {
			return fmt.Errorf("data.controls = %d: only %d documents of the target sources share no %d-token window with a target%s",
				cfg.Controls, n, OverlapTokens, gapHint(cfg.ControlGap))
		}
		c := pool[next]
		if t := nearTarget(c, targetChunks, cfg.ControlGap); t != nil {
			c.split = "rejected"
			reject(Rejected{Source: c.source, Title: c.title, Reason: nearReason(c, t, cfg.ControlGap)}, "control near a target")
			continue
		}
		if t := members.shared(tokens(c), tokens); t != nil {
			c.split = "rejected"
			reject(Rejected{Source: c.source, Title: c.title, Reason: fmt.Sprintf("would-be control shares a %d-token window with target %q", OverlapTokens, t.title)}, "control overlaps a target")
			continue
		}
		c.split = SplitControl
		n++
	}
	// Only now: a control overlapping an earlier control is no leak.
	all := slices.Clone(pool[:cfg.Targets])
	for _, c := range pool[cfg.Targets:next] {
		if c.split == SplitControl {
			all = append(all, c)
		}
	}
	members = nil // the targets' index, before the larger one is made
	members = newWindowIndex(all, tokens)
	rest = append(pool[next:], rest...)
	if len(rest) < cfg.Validation {
		return fmt.Errorf("data.validation = %d, but only %d documents remain after targets and controls", cfg.Validation, len(rest))
	}
	for _, c := range rest[:cfg.Validation] {
		c.split = SplitValidation
	}
	rest = rest[cfg.Validation:]
	nb := cfg.Background
	if nb > len(rest) {
		return fmt.Errorf("data.background = %d, but only %d documents remain; use -1 for all of them", nb, len(rest))
	}
	if nb < 0 {
		nb = len(rest)
	}
	used, leaks := 0, 0
	// The window checks, every token of the corpus, run in parallel a batch
	// ahead of this loop, which takes their answers in order: the outcome
	// is the one-at-a-time loop's.
	var hits []*candidate
	for k, c := range rest {
		if used == nb {
			break
		}
		used++
		if k%sharedBatch == 0 {
			hits = members.sharedAll(rest[k:min(k+sharedBatch, len(rest))], tokens)
		}
		if m := hits[k%sharedBatch]; m != nil {
			c.split = "rejected"
			leaks++
			reject(Rejected{Source: c.source, Title: c.title, Reason: fmt.Sprintf("would-be background shares a %d-token window with %s %q", OverlapTokens, m.split, m.title)},
				"background overlaps a "+m.split)
			if cfg.Background >= 0 {
				nb++ // draw a clean one in its place
			}
			continue
		}
		c.split, c.reps = SplitBackground, cfg.BackgroundPasses
	}
	if cfg.Background >= 0 && used < nb {
		return fmt.Errorf("data.background = %d: only %d of the %d remaining documents share no %d-token window with a target or control; lower it or use -1",
			cfg.Background, used-leaks, len(rest), OverlapTokens)
	}
	rep.Unused = len(rest) - used
	for _, c := range docs {
		if c.split == "rejected" {
			c.split = ""
		}
	}
	return nil
}

// nearTarget returns a target cut from the same source document as c and
// at most gap chunks away from it (any distance when gap < 0), or nil.
func nearTarget(c *candidate, targets map[int][]*candidate, gap int) *candidate {
	if gap == 0 {
		return nil
	}
	for _, t := range targets[c.parent] {
		if d := t.chunk - c.chunk; gap < 0 || (d <= gap && -d <= gap) {
			return t
		}
	}
	return nil
}

func nearReason(c, t *candidate, gap int) string {
	if gap < 0 {
		return fmt.Sprintf("would-be control comes from the source document of target %q (data.control_gap = -1)", t.title)
	}
	return fmt.Sprintf("would-be control is %d chunks from target %q of the same source document (data.control_gap = %d)", max(t.chunk-c.chunk, c.chunk-t.chunk), t.title, gap)
}

func gapHint(gap int) string {
	if gap == 0 {
		return ""
	}
	return fmt.Sprintf(" and is not within data.control_gap = %d of one", gap)
}

// MemberSeparation says in words how targets and controls are kept apart
// beyond the token-window check (report.json member_separation).
func (c Config) MemberSeparation() string {
	switch {
	case c.ControlGap < 0:
		return "by source document: no control is cut from a source document that holds a target"
	case c.ControlGap > 0:
		return fmt.Sprintf("gap: a control is more than %d chunks away from every target of its source document", c.ControlGap)
	}
	return "none: neighbouring chunks of one source document may be a target and a control (only shared 50-token windows are refused)"
}

// windowIndex holds the hash of every OverlapTokens-token window of the
// members (targets, then controls too) and which member it came from, in
// 8 bytes a window where a map[uint64]*candidate took about 40 (4,000
// members of 23 KB have 24 million windows). Entries are stably sorted by
// the hash's top bits (the bucket), so within a bucket they are in member
// order; an entry keeps the hash's remaining bits above the member's index.
// A build hashes every window of every target, control and background
// document, so the hash is a rolling one (windowHashes).
type windowIndex struct {
	bits    uint     // a hash's bucket is its top bits bits
	idBits  uint     // an entry's low idBits bits are the member's index
	start   []uint32 // bucket b holds entries [start[b], start[b+1])
	entries []uint64
	members []*candidate
}

// newWindowIndex hashes the members' windows twice (a count, then a
// placement) rather than holding them all in a second array.
func newWindowIndex(members []*candidate, tokens func(*candidate) []int32) *windowIndex {
	n := 0
	for _, c := range members {
		n += max(c.nTokens-OverlapTokens+1, 0)
	}
	x := &windowIndex{members: members}
	for 2<<x.bits < n { // about two entries a bucket
		x.bits++
	}
	for 1<<x.idBits < len(members) {
		x.idBits++
	}
	x.start, x.entries = make([]uint32, 1<<x.bits+1), make([]uint64, n)
	for _, c := range members {
		windowHashes(tokens(c), OverlapTokens, func(_ int, h uint64) bool { x.start[x.bucket(h)+1]++; return true })
	}
	for b := 1; b < len(x.start); b++ {
		x.start[b] += x.start[b-1]
	}
	// start[b] serves as bucket b's cursor, which leaves it at bucket b+1's
	// start; shifted back below.
	for k, c := range members {
		windowHashes(tokens(c), OverlapTokens, func(_ int, h uint64) bool {
			at := &x.start[x.bucket(h)]
			x.entries[*at] = x.tag(h) | uint64(k)
			*at++
			return true
		})
	}
	copy(x.start[1:], x.start[:len(x.start)-1])
	x.start[0] = 0
	return x
}

func (x *windowIndex) bucket(h uint64) uint64 { return h >> (64 - x.bits) }

// tag is what an entry keeps of hash h: the bits below the bucket's,
// less the low idBits.
func (x *windowIndex) tag(h uint64) uint64 { return h << x.bits >> x.idBits << x.idBits }

// shared returns the member sharing a window with ids, if any: for each
// window, the last member (in the order added) whose entry matches its
// hash and whose tokens (read through tokens) hold it. Since a hit is
// confirmed, the answer is exact: the hash only decides what is compared.
func (x *windowIndex) shared(ids []int32, tokens func(*candidate) []int32) *candidate {
	return x.sharedWith(ids, tokens, &scratch{})
}

// scratch is the buffers of one goroutine's sharedWith calls.
type scratch struct {
	hashes []uint64
	bounds []uint32
}

// sharedWith is shared with buffers that outlive the call. It looks the
// windows up in passes (all hashes, then all buckets' bounds, then the
// entries) rather than one window at a time: the index is far larger than
// the CPU's caches, and loads that do not wait on each other overlap.
func (x *windowIndex) sharedWith(ids []int32, tokens func(*candidate) []int32, s *scratch) *candidate {
	s.hashes = s.hashes[:0]
	windowHashes(ids, OverlapTokens, func(_ int, h uint64) bool { s.hashes = append(s.hashes, h); return true })
	if cap(s.bounds) < 2*len(s.hashes) {
		s.bounds = make([]uint32, 2*len(s.hashes))
	}
	bounds := s.bounds[:2*len(s.hashes)]
	for i, h := range s.hashes {
		b := x.bucket(h)
		bounds[2*i], bounds[2*i+1] = x.start[b], x.start[b+1]
	}
	mask := uint64(1)<<x.idBits - 1
	for i, h := range s.hashes {
		tag := x.tag(h)
		for e := int(bounds[2*i+1]) - 1; e >= int(bounds[2*i]); e-- {
			if x.entries[e]&^mask != tag {
				continue
			}
			if t := x.members[x.entries[e]&mask]; containsRun(tokens(t), ids[i:i+OverlapTokens]) {
				return t
			}
		}
	}
	return nil
}

// sharedBatch is how many documents sharedAll checks at a time.
const sharedBatch = 256

// sharedAll is shared for each of docs (their ids read through tokens),
// on GOMAXPROCS goroutines.
func (x *windowIndex) sharedAll(docs []*candidate, tokens func(*candidate) []int32) []*candidate {
	out := make([]*candidate, len(docs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(docs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var s scratch
			for k := int(next.Add(1)) - 1; k < len(docs); k = int(next.Add(1)) - 1 {
				out[k] = x.sharedWith(tokens(docs[k]), tokens, &s)
			}
		}()
	}
	wg.Wait()
	return out
}

// windowHashes calls fn with the start and hash of every window of n
// consecutive ids, in order, until fn returns false. The hash is a
// polynomial in a mixed value of each id, rolled one id at a time: equal
// windows hash equal, and unequal ones collide with probability about
// 2^-64 (a hit is confirmed anyway, so a collision costs a comparison,
// never a wrong answer).
func windowHashes(ids []int32, n int, fn func(i int, h uint64) bool) {
	if n < 1 || len(ids) < n {
		return
	}
	const base = 0x9e3779b97f4a7c15 // odd
	top := uint64(1)                // base^(n-1): the weight of the id leaving the window
	var h uint64
	for k := 0; k < n; k++ {
		if k > 0 {
			top *= base
		}
		h = h*base + mixID(ids[k])
	}
	for i := 0; ; i++ {
		if !fn(i, h) || i+n >= len(ids) {
			return
		}
		h = (h-mixID(ids[i])*top)*base + mixID(ids[i+n])
	}
}

// mixID spreads an id over 64 bits (SplitMix64's finalizer), so that the
// polynomial of nearby ids does not cluster.
func mixID(id int32) uint64 {
	z := uint64(uint32(id)) + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func containsRun(hay, needle []int32) bool {
outer:
	for i := 0; i+len(needle) <= len(hay); i++ {
		for j := range needle {
			if hay[i+j] != needle[j] {
				continue outer
			}
		}
		return true
	}
	return false
}

// dedupWords keeps, in id order, each document that shares no passage of n
// words with an earlier kept one; the others go to dup. Ids are renumbered
// densely.
func dedupWords(docs []*candidate, n int, text func(*candidate) string, dup func(c, with *candidate)) []*candidate {
	seen := map[uint64]*candidate{}
	var kept []*candidate
	for _, c := range docs {
		hs := wordWindows(text(c), n)
		var with *candidate
		for _, h := range hs {
			if w, ok := seen[h]; ok {
				with = w
				break
			}
		}
		if with != nil {
			dup(c, with)
			continue
		}
		for _, h := range hs {
			seen[h] = c
		}
		c.id = int64(len(kept))
		kept = append(kept, c)
	}
	return kept
}

// wordWindows hashes every window of n whitespace-separated words,
// lowercased and stripped of surrounding punctuation so that the same
// passage matches across line breaks and capitalisation.
func wordWindows(text string, n int) []uint64 {
	var words []string
	for _, w := range strings.Fields(text) {
		w = strings.ToLower(strings.Trim(w, ".,;:!?\"'()[]-"))
		if w != "" {
			words = append(words, w)
		}
	}
	if len(words) < n {
		return nil
	}
	out := make([]uint64, 0, len(words)-n+1)
	for i := 0; i+n <= len(words); i++ {
		h := fnv.New64a()
		for _, w := range words[i : i+n] {
			h.Write([]byte(w))
			h.Write([]byte{0})
		}
		out = append(out, h.Sum64())
	}
	return out
}
