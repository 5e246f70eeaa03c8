package hftok

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// model turns one pre-token into ids.
type model interface {
	tokenize(s string, out []int32) []int32
	tokenToID(s string) (int32, bool)
	idToToken(id int32) (string, bool)
	size() int // number of vocabulary entries
	maxID() int32
}

// vocab is a model's token <-> id table.
type vocab struct {
	ids    map[string]int32
	tokens map[int32]string
}

func parseVocab(o *obj) (vocab, error) {
	var m map[string]int32
	ok, err := o.get("vocab", &m)
	if err != nil {
		return vocab{}, err
	}
	if !ok {
		return vocab{}, o.errorf("vocab is missing")
	}
	v := vocab{ids: m, tokens: make(map[int32]string, len(m))}
	for t, id := range m {
		if id < 0 {
			return vocab{}, o.errorf("vocab[%q] = %d: ids must be >= 0", t, id)
		}
		if prev, dup := v.tokens[id]; dup {
			return vocab{}, o.errorf("vocab: id %d belongs to both %q and %q", id, prev, t)
		}
		v.tokens[id] = t
	}
	return v, nil
}

func (v vocab) tokenToID(s string) (int32, bool)  { id, ok := v.ids[s]; return id, ok }
func (v vocab) idToToken(id int32) (string, bool) { t, ok := v.tokens[id]; return t, ok }
func (v vocab) size() int                         { return len(v.ids) }

// maxID is the largest id, or -1 for an empty vocabulary.
func (v vocab) maxID() int32 {
	m := int32(-1)
	for id := range v.tokens {
		m = max(m, id)
	}
	return m
}

func parseModel(raw json.RawMessage) (model, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("tokenizer.json: model is missing")
	}
	o, err := parseObj(raw, "model")
	if err != nil {
		return nil, err
	}
	var m model
	t := o.typ()
	if t == "" && o.m["merges"] != nil {
		t = "BPE" // the library guesses the model from its fields
	}
	switch t {
	case "BPE":
		m, err = parseBPE(o)
	case "WordLevel":
		m, err = parseWordLevel(o)
	default:
		return nil, unsupported("model", t, "BPE", "WordLevel")
	}
	if err != nil {
		return nil, err
	}
	return m, o.done()
}

// bpe is the library's BPE model.
type bpe struct {
	vocab
	merges       map[[2]int32]mergeTo
	unk          int32 // -1: none
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
	prefix       string // continuing_subword_prefix
	suffix       string // end_of_word_suffix
	byteIDs      [256]int32
	cutAtMeta    bool // see tokenizeSegments

	cache pieceCache
}

type mergeTo struct{ rank, id int32 }

// maxCached bounds the piece cache; the library keeps 10,000 pieces, we
// keep more because long documents repeat their words.
const maxCached = 1 << 20

// maxCachedLen keeps whole documents (one piece when there is no
// pre-tokenizer, as in Llama 2) out of the cache, as the library does.
const maxCachedLen = 256

func parseBPE(o *obj) (*bpe, error) {
	v, err := parseVocab(o)
	if err != nil {
		return nil, err
	}
	b := &bpe{vocab: v, unk: -1}
	var dropout *float64
	if _, err := o.get("dropout", &dropout); err != nil {
		return nil, err
	}
	if dropout != nil && *dropout != 0 {
		return nil, o.errorf("dropout = %v: random merges are not supported (want null)", *dropout)
	}
	unk, err := o.str("unk_token", "")
	if err != nil {
		return nil, err
	}
	if unk != "" {
		id, ok := v.ids[unk]
		if !ok {
			return nil, o.errorf("unk_token %q is not in the vocabulary", unk)
		}
		b.unk = id
	}
	for _, f := range []struct {
		key string
		dst *bool
	}{{"fuse_unk", &b.fuseUnk}, {"byte_fallback", &b.byteFallback}, {"ignore_merges", &b.ignoreMerges}} {
		if *f.dst, err = o.boolean(f.key, false); err != nil {
			return nil, err
		}
	}
	if b.prefix, err = o.str("continuing_subword_prefix", ""); err != nil {
		return nil, err
	}
	if b.suffix, err = o.str("end_of_word_suffix", ""); err != nil {
		return nil, err
	}
	for i := range b.byteIDs {
		b.byteIDs[i] = -1
		if id, ok := v.ids[fmt.Sprintf("<0x%02X>", i)]; ok {
			b.byteIDs[i] = id
		}
	}
	pairs, err := parseMerges(o)
	if err != nil {
		return nil, err
	}
	b.merges = make(map[[2]int32]mergeTo, len(pairs))
	for r, p := range pairs {
		a, okA := v.ids[p[0]]
		c, okB := v.ids[p[1]]
		if !okA || !okB {
			return nil, o.errorf("merges[%d] %q %q: token not in the vocabulary", r, p[0], p[1])
		}
		// The library drops the prefix's length in bytes from the right
		// half, whether or not it starts with the prefix.
		right := p[1]
		if len(b.prefix) <= len(right) {
			right = right[len(b.prefix):]
		} else {
			return nil, o.errorf("merges[%d] %q %q: right token shorter than continuing_subword_prefix", r, p[0], p[1])
		}
		id, ok := v.ids[p[0]+right]
		if !ok {
			return nil, o.errorf("merges[%d] %q %q: merged token %q not in the vocabulary", r, p[0], p[1], p[0]+right)
		}
		// A repeated pair keeps its last rank, as the library's map does.
		b.merges[[2]int32{a, c}] = mergeTo{int32(r), id}
	}
	b.cutAtMeta = b.metaBoundarySafe(pairs)
	return b, nil
}

// parseMerges accepts ["a b", ...] and [["a", "b"], ...].
func parseMerges(o *obj) ([][2]string, error) {
	raw := o.raw("merges")
	if raw == nil {
		return nil, o.errorf("merges is missing")
	}
	var pairs [][2]string
	// Decode once, in the spelling the first element has.
	if first := bytes.TrimLeft(bytes.TrimLeft(raw, " \t\r\n")[1:], " \t\r\n"); len(first) > 0 && first[0] == '[' {
		if err := json.Unmarshal(raw, &pairs); err != nil {
			return nil, o.errorf("merges: want [[\"a\", \"b\"], ...]: %v", err)
		}
		return pairs, nil
	}
	var lines []string
	if err := json.Unmarshal(raw, &lines); err != nil {
		return nil, o.errorf("merges: want [\"a b\", ...] or [[\"a\", \"b\"], ...]: %v", err)
	}
	pairs = make([][2]string, len(lines))
	for i, l := range lines {
		parts := strings.Split(l, " ")
		if len(parts) != 2 {
			return nil, o.errorf("merges[%d] = %q: want two tokens separated by one space", i, l)
		}
		pairs[i] = [2]string{parts[0], parts[1]}
	}
	return pairs, nil
}

func (b *bpe) tokenize(s string, out []int32) []int32 {
	if s == "" {
		return out
	}
	if ids, ok := b.cache.get(s); ok {
		return append(out, ids...)
	}
	if b.ignoreMerges {
		if id, ok := b.ids[s]; ok {
			ids := []int32{id}
			b.cache.put(s, ids)
			return append(out, ids...)
		}
	}
	if len(s) >= maxCachedLen && b.cutAtMeta {
		return b.tokenizeSegments(s, out)
	}
	return append(out, b.cached(s)...)
}

// merged is what tokenize gives for s, without the piece cache.
func (b *bpe) merged(s string) []int32 {
	if b.ignoreMerges {
		if id, ok := b.ids[s]; ok {
			return []int32{id}
		}
	}
	return b.mergeWord(s)
}

// cached is mergeWord through the piece cache. (With ignore_merges the
// cache also holds whole pieces found in the vocabulary; tokenizeSegments
// never looks those up, because a segment of a piece is merged even when
// the library's whole-piece check would not apply to it.)
func (b *bpe) cached(s string) []int32 {
	if ids, ok := b.cache.get(s); ok && !b.ignoreMerges {
		return ids
	}
	ids := b.mergeWord(s)
	b.cache.put(s, ids)
	return ids
}

// tokenizeSegments encodes a long piece (a whole document when there is no
// pre-tokenizer, as in Llama 2) as the segments that start at a "▁" after
// another character. No merge joins a symbol that ends in another
// character to one that starts with "▁" (cutAtMeta checks the merge list),
// so no merge crosses such a boundary, the segments merge independently,
// and the result is the ids of the whole piece, from cached segments.
func (b *bpe) tokenizeSegments(s string, out []int32) []int32 {
	start := 0
	prevMeta := true
	for i, r := range s {
		isMeta := r == metaspace
		if isMeta && !prevMeta && i > start {
			out = append(out, b.cached(s[start:i])...)
			start = i
		}
		prevMeta = isMeta
	}
	return append(out, b.cached(s[start:])...)
}

// metaspace is SentencePiece's visible space, U+2581.
const metaspace = '▁'

// metaBoundarySafe reports whether no merge has a left side ending in a
// character other than "▁" and a right side starting with "▁", and "▁" is a
// token, so a piece can be cut before such a "▁" without changing its ids.
func (b *bpe) metaBoundarySafe(pairs [][2]string) bool {
	if _, ok := b.ids[string(metaspace)]; !ok || b.prefix != "" || b.suffix != "" {
		return false
	}
	for _, p := range pairs {
		last, _ := utf8.DecodeLastRuneInString(p[0])
		first, _ := utf8.DecodeRuneInString(p[1])
		if last != metaspace && first == metaspace {
			return false
		}
	}
	return true
}

// mergeWord starts from one symbol per character (byte tokens or unk for
// characters outside the vocabulary) and merges pairs by rank.
func (b *bpe) mergeWord(w string) []int32 {
	syms := make([]int32, 0, len(w))
	unk, unkPending := int32(-1), false
	flushUnk := func() {
		if unkPending {
			syms = append(syms, unk)
			unkPending = false
		}
	}
	for i := 0; i < len(w); {
		_, n := utf8.DecodeRuneInString(w[i:])
		ch := w[i : i+n]
		first, last := i == 0, i+n == len(w)
		i += n
		if !first && b.prefix != "" {
			ch = b.prefix + ch
		}
		if last && b.suffix != "" {
			ch += b.suffix
		}
		if id, ok := b.ids[ch]; ok {
			flushUnk()
			syms = append(syms, id)
			continue
		}
		if b.byteFallback {
			ok := true
			for k := 0; k < len(ch); k++ {
				ok = ok && b.byteIDs[ch[k]] >= 0
			}
			if ok {
				// A pending unk stays pending: the library adds it only
				// before the next known character, or at the end.
				for k := 0; k < len(ch); k++ {
					syms = append(syms, b.byteIDs[ch[k]])
				}
				continue
			}
		}
		if b.unk < 0 {
			continue // no unk token: the character is dropped
		}
		if unkPending && !b.fuseUnk {
			flushUnk()
		}
		unk, unkPending = b.unk, true
	}
	flushUnk()
	return mergeAll(syms, b.merges)
}

// mergeAll applies merges lowest rank first, and at equal rank leftmost
// first, through a priority queue with stale entries checked on the way
// out, as the library's Word::merge_all.
func mergeAll(ids []int32, merges map[[2]int32]mergeTo) []int32 {
	if len(ids) < 2 {
		return ids
	}
	n := len(ids)
	prev := make([]int, n)
	next := make([]int, n)
	alive := make([]bool, n)
	for i := range ids {
		prev[i], next[i], alive[i] = i-1, i+1, true
	}
	next[n-1] = -1
	var h mergeHeap
	for i := 0; i+1 < n; i++ {
		if m, ok := merges[[2]int32{ids[i], ids[i+1]}]; ok {
			h.push(mergeAt{m.rank, int32(i), m.id})
		}
	}
	for len(h) > 0 {
		top := h.pop()
		p := int(top.pos)
		if !alive[p] || next[p] < 0 {
			continue
		}
		r := next[p]
		if m, ok := merges[[2]int32{ids[p], ids[r]}]; !ok || m.id != top.id {
			continue // the pair at p changed since this entry was queued
		}
		ids[p] = top.id
		alive[r] = false
		next[p] = next[r]
		if next[r] >= 0 {
			prev[next[r]] = p
		}
		if q := prev[p]; q >= 0 {
			if m, ok := merges[[2]int32{ids[q], ids[p]}]; ok {
				h.push(mergeAt{m.rank, int32(q), m.id})
			}
		}
		if q := next[p]; q >= 0 {
			if m, ok := merges[[2]int32{ids[p], ids[q]}]; ok {
				h.push(mergeAt{m.rank, int32(p), m.id})
			}
		}
	}
	out := ids[:0]
	for i := 0; i >= 0 && i < n; i = next[i] {
		out = append(out, ids[i])
	}
	return out
}

type mergeAt struct{ rank, pos, id int32 }

func (a mergeAt) less(b mergeAt) bool {
	return a.rank < b.rank || a.rank == b.rank && a.pos < b.pos
}

// mergeHeap is a binary min-heap on (rank, pos).
type mergeHeap []mergeAt

func (h *mergeHeap) push(m mergeAt) {
	*h = append(*h, m)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[i].less(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *mergeHeap) pop() mergeAt {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && s[l].less(s[m]) {
			m = l
		}
		if r < len(s) && s[r].less(s[m]) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// wordLevel maps each pre-token to its id, or to unk.
type wordLevel struct {
	vocab
	unk int32
}

func parseWordLevel(o *obj) (*wordLevel, error) {
	v, err := parseVocab(o)
	if err != nil {
		return nil, err
	}
	w := &wordLevel{vocab: v, unk: -1}
	unk, err := o.str("unk_token", "<unk>")
	if err != nil {
		return nil, err
	}
	id, ok := v.ids[unk]
	if !ok {
		// The library fails on the first unknown word; we fail up front.
		return nil, o.errorf("unk_token %q is not in the vocabulary", unk)
	}
	w.unk = id
	return w, nil
}

func (w *wordLevel) tokenize(s string, out []int32) []int32 {
	if id, ok := w.ids[s]; ok {
		return append(out, id)
	}
	return append(out, w.unk)
}
