package data

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/memo-research/memo/data/hftok"
)

// chunkText cuts text into pieces of at most max tokens whose concatenation
// is text itself: whole paragraphs when they fit, else sentences, else
// GPT-2 word pieces (only to reach min tokens or for a sentence longer than
// max), else characters. c counts tokens.
func chunkText(text string, max, min int, c *counter) []string {
	var chunks []string
	var cur strings.Builder
	var st countState
	flush := func() {
		if cur.Len() > 0 {
			chunks = append(chunks, cur.String())
			cur.Reset()
			st = countState{}
		}
	}
	appendSeg := func(seg string, next countState) {
		cur.WriteString(seg)
		st = next
	}
	// place adds seg, whose next finer cut is level (1 sentences, 2 word
	// pieces, 3 characters). A paragraph that does not fit the current chunk
	// is cut into sentences to fill it, so chunks come out close to max; a
	// sentence is cut further only when it alone exceeds max.
	var place func(seg string, level int)
	place = func(seg string, level int) {
		if n, next := c.extend(st, cur.String(), seg); n <= max {
			appendSeg(seg, next)
			return
		}
		// A paragraph is cut into sentences to fill the chunk; a sentence is
		// cut into word pieces only when the chunk would stay under min.
		if level == 1 || (level == 2 && cur.Len() > 0 && c.total(st, cur.String()) < min) {
			for _, p := range splitLevel(seg, level) {
				place(p, level+1)
			}
			return
		}
		flush()
		if n, next := c.extend(st, "", seg); n <= max || level > 3 {
			appendSeg(seg, next)
			return
		}
		for _, p := range splitLevel(seg, level) {
			place(p, level+1)
		}
	}
	for _, p := range splitLevel(text, 0) {
		place(p, 1)
	}
	flush()
	return chunks
}

// counter counts the tokens of a growing chunk. With piece set (byte-level
// BPE) it is incremental and exact: the boundary before the chunk's last
// pre-token stays a boundary whatever is appended (the GPT-2 pattern looks at
// most one character past a match), so only that last piece and the new
// text are encoded again. Otherwise whole counts the full text every time.
type counter struct {
	piece func(p string) int
	whole func(s string) int
}

// countState is the token count of a chunk up to its last piece, and that piece.
type countState struct {
	prefix int
	tail   string
}

// extend returns the token count of cur+seg and the state after appending.
func (c *counter) extend(st countState, cur, seg string) (int, countState) {
	if c.piece == nil {
		return c.whole(cur + seg), countState{}
	}
	var pieces []string
	hftok.SplitGPT2(st.tail+seg, func(p string) { pieces = append(pieces, p) })
	next := countState{prefix: st.prefix}
	if len(pieces) == 0 {
		return next.prefix, next
	}
	for _, p := range pieces[:len(pieces)-1] {
		next.prefix += c.piece(p)
	}
	next.tail = pieces[len(pieces)-1]
	return next.prefix + c.piece(next.tail), next
}

func (c *counter) total(st countState, cur string) int {
	if c.piece == nil {
		return c.whole(cur)
	}
	return st.prefix + c.piece(st.tail)
}

// splitLevel cuts s at level 0 into paragraphs, 1 sentences, 2 word pieces,
// 3 characters (a last resort for a single huge "word"). Separators stay
// attached to the end of the piece before them.
func splitLevel(s string, level int) []string {
	var out []string
	switch level {
	case 0:
		for len(s) > 0 {
			i := strings.Index(s, "\n\n")
			if i < 0 {
				out = append(out, s)
				break
			}
			j := i
			for j < len(s) && (s[j] == '\n' || s[j] == '\r' || s[j] == ' ' || s[j] == '\t') {
				j++
			}
			out = append(out, s[:j])
			s = s[j:]
		}
	case 1:
		start := 0
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			i += n
			if r != '.' && r != '!' && r != '?' && r != '\n' {
				continue
			}
			for i < len(s) && strings.IndexByte("\"')]", s[i]) >= 0 {
				i++
			}
			j := i
			for j < len(s) {
				r2, n2 := utf8.DecodeRuneInString(s[j:])
				if !unicode.IsSpace(r2) {
					break
				}
				j += n2
			}
			if j > i || r == '\n' {
				out = append(out, s[start:j])
				start, i = j, j
			}
		}
		if start < len(s) {
			out = append(out, s[start:])
		}
	case 2:
		hftok.SplitGPT2(s, func(p string) { out = append(out, p) })
	default:
		for _, r := range s {
			out = append(out, string(r))
		}
	}
	return out
}
