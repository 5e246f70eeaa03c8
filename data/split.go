package data

import (
	"fmt"
	"log/slog"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/memo-research/memo/internal/parallel"
	"github.com/memo-research/memo/internal/splitmix"
)

// OverlapTokens is the window length of the member/non-member check: no
// control shares this many consecutive tokens with any target.
const OverlapTokens = 50

// assignSplits draws targets and controls from the target sources, then
// validation and background from what is left, all in one seeded
// permutation of the kept rows (a document's id is its position in kept).
// A would-be control that shares an OverlapTokens window with a target is
// rejected. So is a would-be background document that shares one with a
// target or a control: trained on, it would teach the model a control's
// text (no longer a non-member) or a target's (seen more often than its
// repetition count says). Every such rejection is reported by name. Splits
// are set in tab; ids are read from the spool when needed, targets' and
// controls' too (a window is read back only to confirm a hash hit).
func assignSplits(cfg Config, tab *docTable, kept []int32, rep *Report, reject func(Rejected, string)) (splitReps, error) {
	reps := splitReps{target: map[int32]int{}, background: cfg.BackgroundPasses}
	perm := make([]int32, len(kept))
	for i := range perm {
		perm[i] = int32(i)
	}
	shuffle(newSplitMix(uint64(cfg.Seed)^0x73706c697473), len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	for k, p := range perm {
		perm[k] = kept[p] // from here on, rows
	}
	// order: the rows of the target sources (the pool), then the others,
	// each in permutation order.
	order, nPool := perm, len(perm)
	if len(cfg.TargetSources) > 0 {
		inPool := map[string]bool{}
		for _, s := range cfg.TargetSources {
			if src, err := ParseSource(s); err == nil {
				inPool[src.Name()] = true
			}
		}
		order, nPool = make([]int32, 0, len(perm)), 0
		for pass := 0; pass < 2; pass++ {
			for _, i := range perm {
				if inPool[tab.source(i)] == (pass == 0) {
					order = append(order, i)
				}
			}
			if pass == 0 {
				nPool = len(order)
			}
		}
		perm = nil
	}
	pool := order[:nPool]
	title := func(i int32) string { return tab.title(i) }
	if len(pool) < cfg.Targets+cfg.Controls {
		return reps, fmt.Errorf("data.targets + data.controls = %d, but only %d eligible documents in the target sources (%d rejected, see report): lower them, add sources or change data.chunk_tokens / data.min_tokens",
			cfg.Targets+cfg.Controls, len(pool), len(rep.Rejected))
	}
	// members: the windows of targets, then of controls too.
	for k, i := range pool[:cfg.Targets] {
		tab.setCode(i, codeTarget)
		reps.target[i] = cfg.repetitionsFor(k, cfg.Targets)
		rep.Repetitions[strconv.Itoa(reps.target[i])]++
	}
	members := newWindowIndex(pool[:cfg.Targets], tab.size, tab.tokens)
	// The targets' chunks by source document, for data.control_gap.
	targetChunks := map[int32][]int32{}
	if cfg.ControlGap != 0 {
		for _, i := range pool[:cfg.Targets] {
			p, _ := tab.parentChunk(i)
			targetChunks[p] = append(targetChunks[p], i)
		}
	}
	next := cfg.Targets
	for n := 0; n < cfg.Controls; next++ {
		if next >= len(pool) {
			return reps, fmt.Errorf("data.controls = %d: only %d documents of the target sources share no %d-token window with a target%s",
				cfg.Controls, n, OverlapTokens, gapHint(cfg.ControlGap))
		}
		c := pool[next]
		if t, d := nearTarget(tab, c, targetChunks, cfg.ControlGap); t >= 0 {
			tab.setCode(c, codeRejected)
			reject(Rejected{Source: tab.source(c), Title: title(c), Reason: nearReason(d, title(t), cfg.ControlGap)}, "control near a target")
			continue
		}
		if t := members.shared(tab.tokens(c), tab.tokens); t >= 0 {
			tab.setCode(c, codeRejected)
			reject(Rejected{Source: tab.source(c), Title: title(c), Reason: fmt.Sprintf("would-be control shares a %d-token window with target %q", OverlapTokens, title(t))}, "control overlaps a target")
			continue
		}
		tab.setCode(c, codeControl)
		n++
	}
	// Only now: a control overlapping an earlier control is no leak.
	all := slices.Clone(pool[:cfg.Targets])
	for _, c := range pool[cfg.Targets:next] {
		if tab.code(c) == codeControl {
			all = append(all, c)
		}
	}
	members = nil // the targets' index, before the larger one is made
	members = newWindowIndex(all, tab.size, tab.tokens)
	rest := order[next:]
	if nPool < len(order) {
		// With data.target_sources, validation and background come from
		// the other sources first, then what the targets and controls
		// left of theirs: the pool's leftovers went first, and
		// exp/catastrophic.toml's 300 "Moby-Dick" pretraining chunks and
		// its validation were all Opticks, the targets' own book.
		rest = append(slices.Clone(order[nPool:]), order[next:nPool]...)
	}
	if len(rest) < cfg.Validation {
		return reps, fmt.Errorf("data.validation = %d, but only %d documents remain after targets and controls", cfg.Validation, len(rest))
	}
	for _, c := range rest[:cfg.Validation] {
		tab.setCode(c, codeValidation)
	}
	rest = rest[cfg.Validation:]
	nb := cfg.Background
	if nb > len(rest) {
		return reps, fmt.Errorf("data.background = %d, but only %d documents remain; use -1 for all of them", nb, len(rest))
	}
	if nb < 0 {
		nb = len(rest)
	}
	used, leaks := 0, 0
	// The window checks, every token of the corpus, run in parallel ahead
	// of this loop, which takes their answers in order: the outcome is the
	// one-at-a-time loop's. With data.background = -1 every remaining
	// document is checked, so they are checked in row order, the spool's,
	// which reads it front to back where the shuffled order reads a record
	// here and there (a disk read each once the spool outgrows the page
	// cache: 20 GB for 10 GB of JSONL); only the hits are kept. Otherwise a
	// batch at a time, in the loop's order, as far as the loop goes.
	var hits []int32
	var hitOf map[int32]int32
	if cfg.Background < 0 {
		hitOf = members.sharedInRowOrder(rest, tab.len(), tab.tokens)
	}
	for k, c := range rest {
		if used == nb {
			break
		}
		used++
		m := int32(-1)
		if hitOf != nil {
			if h, ok := hitOf[c]; ok {
				m = h
			}
		} else {
			if k%sharedBatch == 0 {
				hits = members.sharedAll(rest[k:min(k+sharedBatch, len(rest))], tab.tokens)
			}
			m = hits[k%sharedBatch]
		}
		if m >= 0 {
			tab.setCode(c, codeRejected)
			leaks++
			ms := tab.split(m)
			reject(Rejected{Source: tab.source(c), Title: title(c), Reason: fmt.Sprintf("would-be background shares a %d-token window with %s %q", OverlapTokens, ms, title(m))},
				"background overlaps a "+ms)
			if cfg.Background >= 0 {
				nb++ // draw a clean one in its place
			}
			continue
		}
		tab.setCode(c, codeBackground)
	}
	if cfg.Background >= 0 && used < nb {
		return reps, fmt.Errorf("data.background = %d: only %d of the %d remaining documents share no %d-token window with a target or control; lower it or use -1",
			cfg.Background, used-leaks, len(rest), OverlapTokens)
	}
	rep.Unused = len(rest) - used
	return reps, nil
}

// splitReps is each document's repetitions: a target's from its draw, a
// background document's data.background_passes, none for the others.
type splitReps struct {
	target     map[int32]int // by row
	background int
}

func (r splitReps) of(tab *docTable, i int32) int {
	switch tab.code(i) {
	case codeTarget:
		return r.target[i]
	case codeBackground:
		return r.background
	}
	return 0
}

// nearTarget returns a target cut from the same source document as row c
// and at most gap chunks away from it (any distance when gap < 0) and
// their distance in chunks, or -1.
func nearTarget(tab *docTable, c int32, targets map[int32][]int32, gap int) (int32, int) {
	if gap == 0 {
		return -1, 0
	}
	p, cc := tab.parentChunk(c)
	for _, t := range targets[p] {
		_, tc := tab.parentChunk(t)
		if d := tc - cc; gap < 0 || (d <= gap && -d <= gap) {
			return t, max(d, -d)
		}
	}
	return -1, 0
}

func nearReason(dist int, target string, gap int) string {
	if gap < 0 {
		return fmt.Sprintf("would-be control comes from the source document of target %q (data.control_gap = -1)", target)
	}
	return fmt.Sprintf("would-be control is %d chunks from target %q of the same source document (data.control_gap = %d)", dist, target, gap)
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
	members []int32 // the members' keys (a build's rows)
}

// newWindowIndex hashes the members' windows twice (a count, then a
// placement) rather than holding them all in a second array. size gives a
// member's number of ids, tokens its ids.
func newWindowIndex(members []int32, size func(int32) int, tokens func(int32) []int32) *windowIndex {
	n := 0
	for _, c := range members {
		n += max(size(c)-OverlapTokens+1, 0)
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

// shared returns the member sharing a window with ids, or -1: for the
// first such window, the last member (in the order added) whose entry
// matches its hash and whose tokens (read through tokens) hold it. Since a
// hit is confirmed, the answer is exact: the hash only decides what is
// compared.
func (x *windowIndex) shared(ids []int32, tokens func(int32) []int32) int32 {
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
func (x *windowIndex) sharedWith(ids []int32, tokens func(int32) []int32, s *scratch) int32 {
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
	return -1
}

// sharedBatch is how many documents sharedAll checks at a time.
const sharedBatch = 256

// sharedAll is shared for each of docs (their ids read through tokens),
// on GOMAXPROCS goroutines.
func (x *windowIndex) sharedAll(docs []int32, tokens func(int32) []int32) []int32 {
	out := make([]int32, len(docs))
	parallel.For(len(docs), func() func(int) {
		var s scratch
		return func(k int) { out[k] = x.sharedWith(tokens(docs[k]), tokens, &s) }
	})
	return out
}

// sharedInRowOrder is shared for each of docs (rows below nRows), checked
// in increasing row order a batch at a time: the member found for each
// document that shares a window with one.
func (x *windowIndex) sharedInRowOrder(docs []int32, nRows int, tokens func(int32) []int32) map[int32]int32 {
	in := make([]uint64, (nRows+63)/64) // a bit a row: 1.2 MB for 10 million
	for _, c := range docs {
		in[c/64] |= 1 << (c % 64)
	}
	hitOf := map[int32]int32{}
	batch := make([]int32, 0, sharedBatch)
	flush := func() {
		for k, m := range x.sharedAll(batch, tokens) {
			if m >= 0 {
				hitOf[batch[k]] = m
			}
		}
		batch = batch[:0]
	}
	for c := int32(0); int(c) < nRows; c++ {
		if in[c/64]&(1<<(c%64)) != 0 {
			if batch = append(batch, c); len(batch) == sharedBatch {
				flush()
			}
		}
	}
	flush()
	return hitOf
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
	return mix64(uint64(uint32(id)) + splitmix.Golden)
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

// dedupWords keeps, in order, each row that shares no passage of n words
// with an earlier kept one; the others go to dup with the kept row they
// share one with. It filters rows in place. The passages of the kept rows
// are held in a passageSet of at most maxSlots entries (a power of two):
// exact (every shared passage found) until the kept rows hold maxSlots/2
// distinct passages, a deterministic sample of them after that. It
// returns the set's final sampling, 1 in 2^k passages (k = 0: exact).
func dedupWords(rows []int32, n, maxSlots int, text func(int32) string, textLen func(int32) int, dup func(c, with int32)) ([]int32, int) {
	maxRow := int32(0)
	for _, c := range rows {
		maxRow = max(maxRow, c)
	}
	seen := newPassageSet(maxSlots, maxRow)
	// holds tells whether row w has passage h, for the set's
	// confirmations; the last row asked about is remembered (a duplicate
	// usually repeats several passages of one document).
	var lastRow int32 = -1
	var lastHashes []uint64
	holds := func(w int32, h uint64) bool {
		if w != lastRow {
			lastRow, lastHashes = w, wordWindows(text(w), n)
		}
		return slices.Contains(lastHashes, h)
	}
	kept := rows[:0] // (written behind the reads: len(kept) <= k)
	// The documents' passages are read and hashed on every core a batch
	// ahead of the loop, which takes them in order: the outcome is the
	// one-at-a-time loop's. A batch holds at most dedupBatchBytes of text.
	var hashes [][]uint64
	passages := 0 // of the kept rows, with repeats
	for from := 0; from < len(rows); {
		end, bytes := from, 0
		for end < len(rows) && (end == from || bytes+textLen(rows[end]) <= dedupBatchBytes) {
			bytes += textLen(rows[end])
			end++
		}
		hashes = slices.Grow(hashes[:0], end-from)[:end-from]
		parallel.For(end-from, func() func(int) {
			return func(k int) { hashes[k] = wordWindows(text(rows[from+k]), n) }
		})
		for k := from; k < end; k++ {
			c, hs := rows[k], hashes[k-from]
			hashes[k-from] = nil
			with := int32(-1)
			for _, h := range hs {
				if with = seen.find(h, holds); with >= 0 {
					break
				}
			}
			if with >= 0 {
				dup(c, with)
				continue
			}
			for _, h := range hs {
				seen.add(h, c)
			}
			passages += len(hs)
			kept = append(kept, c)
		}
		from = end
	}
	slog.Info("data: word dedup", "kept", len(kept), "rejected", len(rows)-len(kept), "kept_passages", passages,
		"set_entries", seen.n, "set_slots", len(seen.slots), "checked_one_in", 1<<seen.sample)
	return kept, seen.sample
}

// dedupBatchBytes bounds the text whose passages dedupWords hashes at a
// time (the hashes take about 1.3 times the text).
const dedupBatchBytes = 16 << 20

// dedupSlots is the size of data.dedup_words's passage set: 2^24 slots of
// 8 bytes, 128 MiB at most, holding up to 8.4 million passages exactly
// (the shipped standard setting keeps 2.9 million).
const dedupSlots = 1 << 24

// passageSet is a fixed-capacity set of passage hashes, each with the row
// it came from, in one open-addressing table of uint64 entries: a
// fingerprint of the (remixed) hash above the row + 1 (0 is an empty slot).
// It doubles from a small size up to its capacity; when it is full at
// that capacity it keeps from then on only the passages whose fingerprint
// has its low sample+1 bits zero (half of those kept so far, dropping the
// others), so its memory is bounded whatever the corpus. A passage shared
// over m+1 consecutive windows is then still found with probability
// 1-(1-2^-sample)^(m+1). A fingerprint match is confirmed against the
// row's own passages (find's holds), so a duplicate it reports is one the
// exact set would report too.
type passageSet struct {
	slots    []uint64
	n        int  // entries
	maxSlots int  // capacity
	idBits   uint // an entry's low idBits bits are its row + 1
	sample   int  // only fingerprints with their low sample bits zero are kept
}

func newPassageSet(maxSlots int, maxRow int32) *passageSet {
	s := &passageSet{slots: make([]uint64, min(1<<16, maxSlots)), maxSlots: maxSlots}
	for 1<<s.idBits <= int(maxRow)+1 {
		s.idBits++
	}
	return s
}

// fp is h's fingerprint: the top bits of a bijective mix of h (FNV's low
// bits are weakly mixed), so that equal fingerprints of unequal hashes
// are as rare as the fingerprint is long.
func (s *passageSet) fp(h uint64) uint64 { return mix64(h) >> s.idBits }

// home is a fingerprint's first slot: its top bits.
func (s *passageSet) home(fp uint64) int {
	return int(fp >> (64 - s.idBits - uint(bits.Len(uint(len(s.slots)-1)))))
}

func (s *passageSet) sampled(fp uint64) bool { return fp&(1<<s.sample-1) == 0 }

// find returns the row of a kept passage equal to h (holds(row, h) says
// whether the row has it), or -1.
func (s *passageSet) find(h uint64, holds func(row int32, h uint64) bool) int32 {
	fp := s.fp(h)
	if !s.sampled(fp) {
		return -1
	}
	mask := len(s.slots) - 1
	for i := s.home(fp); s.slots[i] != 0; i = (i + 1) & mask {
		if e := s.slots[i]; e>>s.idBits == fp {
			if row := int32(e&(1<<s.idBits-1)) - 1; holds(row, h) {
				return row
			}
		}
	}
	return -1
}

// add records passage h of row.
func (s *passageSet) add(h uint64, row int32) {
	fp := s.fp(h)
	if !s.sampled(fp) {
		return
	}
	e := fp<<s.idBits | uint64(row+1)
	mask := len(s.slots) - 1
	i := s.home(fp)
	for ; s.slots[i] != 0; i = (i + 1) & mask {
		if s.slots[i] == e {
			return // the row repeats its own passage
		}
	}
	s.slots[i] = e
	s.n++
	if 2*s.n <= len(s.slots) {
		return
	}
	// Over half full: twice the slots, or at capacity half the passages
	// (sampled on the fingerprint's bits below the home slot's).
	grow := len(s.slots) < s.maxSlots
	if !grow && 64-int(s.idBits)-bits.Len(uint(len(s.slots)-1)) <= s.sample {
		// No bits left to sample on: a full set takes no more passages.
		s.n--
		s.slots[i] = 0
		return
	}
	keep := make([]uint64, 0, s.n)
	for _, e := range s.slots {
		if e != 0 {
			keep = append(keep, e)
		}
	}
	if grow {
		s.slots = make([]uint64, 2*len(s.slots))
	} else {
		s.sample++
		clear(s.slots)
	}
	s.n = 0
	mask = len(s.slots) - 1
	for _, e := range keep {
		fp := e >> s.idBits
		if !s.sampled(fp) {
			continue
		}
		i := s.home(fp)
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = e
		s.n++
	}
}

// mix64 is SplitMix64's finalizer, a bijection of the 64-bit values.
func mix64(z uint64) uint64 { return splitmix.Mix(z) }

// wordWindows hashes every window of n whitespace-separated words,
// lowercased and stripped of surrounding punctuation so that the same
// passage matches across line breaks and capitalisation. Each word is
// hashed once (FNV-1a, remixed) and the windows are a polynomial rolled
// over the words' hashes, as windowHashes rolls over token ids: equal
// passages hash equal, in time proportional to the words rather than n
// times them.
func wordWindows(text string, n int) []uint64 {
	var words []uint64
	for _, w := range strings.Fields(text) {
		w = strings.ToLower(strings.Trim(w, ".,;:!?\"'()[]-"))
		if w != "" {
			words = append(words, mix64(fnv1a(w)))
		}
	}
	if n < 1 || len(words) < n {
		return nil
	}
	const base = 0x9e3779b97f4a7c15 // odd
	top := uint64(1)                // base^(n-1)
	var h uint64
	for k, w := range words[:n] {
		if k > 0 {
			top *= base
		}
		h = h*base + w
	}
	out := make([]uint64, 1, len(words)-n+1)
	out[0] = h
	for i := n; i < len(words); i++ {
		h = (h-words[i-n]*top)*base + words[i]
		out = append(out, h)
	}
	return out
}

// fnv1a is the 64-bit FNV-1a hash of s.
func fnv1a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}
