package data

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
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
	// members: the windows of targets, then of controls too
	members := map[uint64]*candidate{}
	addWindows := func(c *candidate) {
		for _, h := range tokenWindows(c.ids, OverlapTokens) {
			members[h] = c
		}
	}
	for i, c := range pool[:cfg.Targets] {
		c.split, c.reps = SplitTarget, cfg.repetitionsFor(i, cfg.Targets)
		c.ids = tokens(c)
		rep.Repetitions[strconv.Itoa(c.reps)]++
		addWindows(c)
	}
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
		ids := tokens(c)
		if t := sharedWindow(ids, members); t != nil {
			c.split = "rejected"
			reject(Rejected{Source: c.source, Title: c.title, Reason: fmt.Sprintf("would-be control shares a %d-token window with target %q", OverlapTokens, t.title)}, "control overlaps a target")
			continue
		}
		c.split, c.ids = SplitControl, ids
		n++
	}
	// Only now: a control overlapping an earlier control is no leak.
	for _, c := range pool[cfg.Targets:next] {
		if c.split == SplitControl {
			addWindows(c)
		}
	}
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
	for _, c := range rest {
		if used == nb {
			break
		}
		used++
		if m := sharedWindow(tokens(c), members); m != nil {
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

// tokenWindows hashes every window of n consecutive ids: FNV-1a of the
// ids' little-endian bytes, computed inline rather than through hash/fnv
// (no buffer copy or interface call per window; Build hashes every window
// of every target, control and background document).
func tokenWindows(ids []int32, n int) []uint64 {
	if len(ids) < n {
		return nil
	}
	const offset64, prime64 = 14695981039346656037, 1099511628211
	out := make([]uint64, 0, len(ids)-n+1)
	for i := 0; i+n <= len(ids); i++ {
		h := uint64(offset64)
		for _, id := range ids[i : i+n] {
			u := uint32(id)
			h = (h ^ uint64(u&0xff)) * prime64
			h = (h ^ uint64(u>>8&0xff)) * prime64
			h = (h ^ uint64(u>>16&0xff)) * prime64
			h = (h ^ uint64(u>>24)) * prime64
		}
		out = append(out, h)
	}
	return out
}

// sharedWindow returns the target sharing a window with ids, if any; hash
// hits are confirmed by comparing the tokens.
func sharedWindow(ids []int32, targets map[uint64]*candidate) *candidate {
	for i, h := range tokenWindows(ids, OverlapTokens) {
		if t, ok := targets[h]; ok && containsRun(t.ids, ids[i:i+OverlapTokens]) {
			return t
		}
	}
	return nil
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
