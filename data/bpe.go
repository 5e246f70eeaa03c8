package data

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
)

// bpeModel is a byte-level BPE (GPT-2's scheme): text is cut by splitWords,
// each piece's bytes start as single-byte tokens and are merged pair by pair
// in rank order. Decoding concatenates each token's bytes, so any id
// sequence decodes to exactly the bytes it encodes.
type bpeModel struct {
	tokens  []string // id -> token in byte-level characters (or special text)
	ids     map[string]int32
	merges  map[[2]int32]merge
	order   [][2]int32 // merges by rank, for saving
	byteID  [256]int32
	bytes   [][]byte // id -> raw bytes
	special map[int32]bool
	eos     int32

	cache     sync.Map // piece -> []int32
	cacheSize atomic.Int64
}

type merge struct{ rank, id int32 }

const maxCachedPieces = 1 << 20

// newBPEModel checks that all 256 byte tokens exist and that every merge's
// result is in the vocabulary.
func newBPEModel(tokens []string, merges [][2]string, specials []string, eos string) (*bpeModel, error) {
	m := &bpeModel{tokens: tokens, ids: make(map[string]int32, len(tokens)), merges: make(map[[2]int32]merge, len(merges)),
		special: map[int32]bool{}, eos: -1}
	for i, t := range tokens {
		if _, dup := m.ids[t]; dup {
			return nil, fmt.Errorf("token %q appears twice in the vocabulary", t)
		}
		m.ids[t] = int32(i)
	}
	for b := 0; b < 256; b++ {
		id, ok := m.ids[string(byteToRune[b])]
		if !ok {
			return nil, fmt.Errorf("vocabulary lacks the byte token for 0x%02x: not a byte-level BPE", b)
		}
		m.byteID[b] = id
	}
	for _, s := range specials {
		if id, ok := m.ids[s]; ok {
			m.special[id] = true
		}
	}
	if id, ok := m.ids[eos]; ok && eos != "" {
		m.eos = id
	}
	for r, mg := range merges {
		a, okA := m.ids[mg[0]]
		b, okB := m.ids[mg[1]]
		c, okC := m.ids[mg[0]+mg[1]]
		if !okA || !okB || !okC {
			return nil, fmt.Errorf("merge %d %q+%q: token missing from the vocabulary", r, mg[0], mg[1])
		}
		if _, dup := m.merges[[2]int32{a, b}]; !dup {
			m.merges[[2]int32{a, b}] = merge{rank: int32(r), id: c}
		}
		m.order = append(m.order, [2]int32{a, b})
	}
	m.bytes = make([][]byte, len(tokens))
	for i, t := range tokens {
		if m.special[int32(i)] {
			m.bytes[i] = []byte(t)
			continue
		}
		bs := make([]byte, 0, len(t))
		for _, r := range t {
			b, ok := runeToByte[r]
			if !ok {
				return nil, fmt.Errorf("token %d %q has a character outside the byte-level alphabet", i, t)
			}
			bs = append(bs, b)
		}
		m.bytes[i] = bs
	}
	return m, nil
}

func (m *bpeModel) encode(text string, out []int32) []int32 {
	splitWords(text, func(piece string) { out = append(out, m.piece(piece)...) })
	return out
}

// piece encodes one pre-token, through the cache.
func (m *bpeModel) piece(p string) []int32 {
	if v, ok := m.cache.Load(p); ok {
		return v.([]int32)
	}
	ids := m.encodePiece(p)
	if m.cacheSize.Add(1) < maxCachedPieces {
		// A copy of the key: p points into the document's text, which the
		// cache would otherwise keep alive for the life of the process.
		m.cache.Store(strings.Clone(p), ids)
	}
	return ids
}

func (m *bpeModel) pieceTokens(p string) int { return len(m.piece(p)) }

// encodePiece merges the lowest-ranked adjacent pair, all its occurrences
// left to right, until no pair has a merge.
func (m *bpeModel) encodePiece(piece string) []int32 {
	syms := make([]int32, len(piece))
	for i := 0; i < len(piece); i++ {
		syms[i] = m.byteID[piece[i]]
	}
	for len(syms) > 1 {
		best := merge{rank: -1}
		var pair [2]int32
		for i := 0; i+1 < len(syms); i++ {
			p := [2]int32{syms[i], syms[i+1]}
			if mg, ok := m.merges[p]; ok && (best.rank < 0 || mg.rank < best.rank) {
				best, pair = mg, p
			}
		}
		if best.rank < 0 {
			break
		}
		w := 0
		for i := 0; i < len(syms); i++ {
			if i+1 < len(syms) && syms[i] == pair[0] && syms[i+1] == pair[1] {
				syms[w] = best.id
				i++
			} else {
				syms[w] = syms[i]
			}
			w++
		}
		syms = syms[:w]
	}
	return syms
}

func (m *bpeModel) decode(ids []int32) string {
	n := 0
	for _, id := range ids {
		if id >= 0 && int(id) < len(m.bytes) {
			n += len(m.bytes[id])
		}
	}
	out := make([]byte, 0, n)
	for _, id := range ids {
		if id >= 0 && int(id) < len(m.bytes) {
			out = append(out, m.bytes[id]...)
		}
	}
	return string(out)
}
