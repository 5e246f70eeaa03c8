package hftok

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// preTokenizer cuts a text piece further and emits the sub-pieces in
// order. The library applies each pre-tokenizer of a Sequence to all
// pieces before the next; since each maps one piece to its sub-pieces on
// its own, running the chain depth-first per piece gives the same pieces,
// without holding them all.
type preTokenizer interface {
	apply(p piece, emit func(piece))
}

// behavior is a Split's SplitDelimiterBehavior.
type behavior int

const (
	removed behavior = iota
	isolated
	mergedWithPrevious
	mergedWithNext
	contiguous
)

var behaviors = map[string]behavior{
	"Removed": removed, "Isolated": isolated, "MergedWithPrevious": mergedWithPrevious,
	"MergedWithNext": mergedWithNext, "Contiguous": contiguous,
}

// gpt2Pattern is the regex of the ByteLevel pre-tokenizer (use_regex).
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

func parsePreTokenizer(raw json.RawMessage, where string) (preTokenizer, error) {
	return parseComponent(raw, where, "pretokenizers", parsePreTokenizer, func(l []preTokenizer) preTokenizer { return seqPre(l) }, preTokenizerOf)
}

// preTokenizerOf reads a pre-tokenizer of type t other than Sequence from o.
func preTokenizerOf(o *obj, where, t string) (preTokenizer, error) {
	var (
		p   preTokenizer
		err error
	)
	switch t {
	case "Split":
		s := splitPre{}
		if s.m, _, err = o.pattern("pattern"); err != nil {
			return nil, err
		}
		name, err := o.str("behavior", "")
		if err != nil {
			return nil, err
		}
		b, ok := behaviors[name]
		if !ok {
			return nil, o.errorf("behavior %q is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous", name)
		}
		s.b = b
		if s.invert, err = o.boolean("invert", false); err != nil {
			return nil, err
		}
		p = s
	case "ByteLevel":
		b := &byteLevelPre{}
		if b.addPrefixSpace, err = o.boolean("add_prefix_space", true); err != nil {
			return nil, err
		}
		if b.useRegex, err = o.boolean("use_regex", true); err != nil {
			return nil, err
		}
		o.ignore("trim_offsets") // offsets only
		if b.useRegex {
			if b.re, err = compileRegex(gpt2Pattern); err != nil {
				return nil, err
			}
		}
		p = b
	case "Metaspace":
		m, err := parseMetaspace(o)
		if err != nil {
			return nil, err
		}
		p = m
	case "Digits":
		ind, err := o.boolean("individual_digits", false)
		if err != nil {
			return nil, err
		}
		p = digitsPre{individual: ind}
	case "Punctuation":
		name, err := o.str("behavior", "Isolated")
		if err != nil {
			return nil, err
		}
		b, ok := behaviors[name]
		if !ok {
			return nil, o.errorf("behavior %q is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous", name)
		}
		p = punctuationPre{b}
	case "CharDelimiterSplit":
		d, err := o.str("delimiter", "")
		if err != nil {
			return nil, err
		}
		if utf8.RuneCountInString(d) != 1 {
			return nil, o.errorf("delimiter %q: want one character", d)
		}
		r, _ := utf8.DecodeRuneInString(d)
		p = charDelimiterPre{r}
	case "Whitespace":
		p = whitespacePre{}
	case "WhitespaceSplit":
		p = whitespaceSplitPre{}
	default:
		return nil, unsupported(where, t, "Split", "ByteLevel", "Metaspace", "Digits", "Punctuation", "CharDelimiterSplit", "Whitespace", "WhitespaceSplit", "Sequence")
	}
	return p, nil
}

type seqPre []preTokenizer

func (s seqPre) apply(p piece, emit func(piece)) { s.from(0, p, emit) }

func (s seqPre) from(k int, p piece, emit func(piece)) {
	switch {
	case k == len(s):
		emit(p)
	case k == len(s)-1:
		s[k].apply(p, emit) // no wrapper for the last stage, which sees every piece
	default:
		s[k].apply(p, func(q piece) { s.from(k+1, q, emit) })
	}
}

// span is a stretch of a piece's text and whether the pattern matched it.
type span struct {
	start, end int
	match      bool
}

// regexSpans covers s with the matches of m and the gaps between them.
func regexSpans(m matcher, s string, invert bool, out []span) []span {
	if s == "" {
		return append(out, span{0, 0, invert})
	}
	prev := 0
	m.find(s, func(start, end int) {
		if prev != start {
			out = append(out, span{prev, start, invert})
		}
		out = append(out, span{start, end, !invert})
		prev = end
	})
	if prev != len(s) {
		out = append(out, span{prev, len(s), invert})
	}
	return out
}

// charSpans covers s with single characters for which pred holds and the
// runs between them.
func charSpans(s string, pred func(rune) bool, out []span) []span {
	if s == "" {
		return append(out, span{0, 0, false})
	}
	last := 0
	for i, r := range s {
		if pred(r) {
			n := utf8.RuneLen(r)
			if r == utf8.RuneError {
				n = 1 // the pipeline only sees valid UTF-8; keep offsets sane anyway
			}
			if last < i {
				out = append(out, span{last, i, false})
			}
			out = append(out, span{i, i + n, true})
			last = i + n
		}
	}
	if last < len(s) {
		out = append(out, span{last, len(s), false})
	}
	return out
}

// cut applies a behavior to spans and emits the resulting sub-pieces of p
// (empty ones dropped, as the library drops them).
func cut(p piece, spans []span, b behavior, emit func(piece)) {
	type part struct {
		start, end int
		remove     bool
	}
	parts := make([]part, 0, len(spans))
	prev := false
	switch b {
	case isolated:
		for _, s := range spans {
			parts = append(parts, part{s.start, s.end, false})
		}
	case removed:
		for _, s := range spans {
			parts = append(parts, part{s.start, s.end, s.match})
		}
	case contiguous:
		for _, s := range spans {
			if s.match == prev && len(parts) > 0 {
				parts[len(parts)-1].end = s.end
			} else {
				parts = append(parts, part{s.start, s.end, false})
			}
			prev = s.match
		}
	case mergedWithPrevious:
		for _, s := range spans {
			if s.match && !prev && len(parts) > 0 {
				parts[len(parts)-1].end = s.end
			} else {
				parts = append(parts, part{s.start, s.end, false})
			}
			prev = s.match
		}
	case mergedWithNext:
		for i := len(spans) - 1; i >= 0; i-- {
			s := spans[i]
			if s.match && !prev && len(parts) > 0 {
				parts[len(parts)-1].start = s.start
			} else {
				parts = append(parts, part{s.start, s.end, false})
			}
			prev = s.match
		}
		for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
			parts[i], parts[j] = parts[j], parts[i]
		}
	}
	for _, q := range parts {
		if q.remove || q.start == q.end {
			continue
		}
		emit(sub(p, q.start, q.end))
	}
}

// isolate emits the matches of m in p and the gaps between them: Split's
// Isolated behavior without invert, the common case, without a span list.
func isolate(p piece, m matcher, emit func(piece)) {
	prev := 0
	m.find(p.text, func(start, end int) {
		if prev < start {
			emit(sub(p, prev, start))
		}
		if start < end {
			emit(sub(p, start, end))
		}
		prev = end
	})
	if prev < len(p.text) {
		emit(sub(p, prev, len(p.text)))
	}
}

// sub is p's text from start to end, with its position in the input.
func sub(p piece, start, end int) piece {
	return piece{text: p.text[start:end], orig: p.orig + max(0, start-p.ins), ins: max(0, min(p.ins, end)-start), byteLevel: p.byteLevel}
}

type splitPre struct {
	m      matcher
	b      behavior
	invert bool
}

func (s splitPre) apply(p piece, emit func(piece)) {
	if s.b == isolated && !s.invert {
		isolate(p, s.m, emit)
		return
	}
	cut(p, regexSpans(s.m, p.text, s.invert, nil), s.b, emit)
}

// byteLevelPre is GPT-2's scheme: optionally a space in front of each piece,
// the GPT-2 regex, then every byte written as its printable stand-in.
type byteLevelPre struct {
	addPrefixSpace, useRegex bool
	re                       matcher
	// last: no pre-tokenizer follows, so the mapping to the alphabet is
	// left to the model step (piece.byteLevel).
	last bool
}

func (b *byteLevelPre) apply(p piece, emit func(piece)) {
	if b.addPrefixSpace && !strings.HasPrefix(p.text, " ") {
		p.text = " " + p.text
		p.ins++
	}
	out := emit
	if b.last {
		p.byteLevel = true
	} else {
		out = func(q piece) {
			q.text = byteLevelString(q.text)
			emit(q)
		}
	}
	if !b.useRegex {
		out(p)
		return
	}
	isolate(p, b.re, out)
}

// markLast tells a trailing ByteLevel pre-tokenizer that it is last.
func markLast(p preTokenizer) {
	switch v := p.(type) {
	case *byteLevelPre:
		v.last = true
	case seqPre:
		if len(v) > 0 {
			markLast(v[len(v)-1])
		}
	}
}

// metaspacePre is SentencePiece's convention: spaces become the
// replacement character (▁), which may be prepended, and pieces start at it.
type metaspacePre struct {
	repl    rune
	scheme  string // "always", "first", "never"
	split   bool
	replStr string
}

func parseMetaspace(o *obj) (metaspacePre, error) {
	m := metaspacePre{}
	r, err := o.str("replacement", "")
	if err != nil {
		return m, err
	}
	if utf8.RuneCountInString(r) != 1 {
		return m, o.errorf("replacement %q: want one character", r)
	}
	m.repl, _ = utf8.DecodeRuneInString(r)
	m.replStr = r
	if m.scheme, err = o.str("prepend_scheme", "always"); err != nil {
		return m, err
	}
	if m.scheme != "always" && m.scheme != "first" && m.scheme != "never" {
		return m, o.errorf("prepend_scheme %q is not one of always, first, never", m.scheme)
	}
	// The legacy add_prefix_space: false means "never", and contradicts
	// any other declared scheme.
	if o.m["add_prefix_space"] != nil {
		aps, err := o.boolean("add_prefix_space", true)
		if err != nil {
			return m, err
		}
		if !aps {
			// prepend_scheme defaults to "always", so the library refuses
			// add_prefix_space false without an explicit "never".
			if m.scheme != "never" {
				return m, o.errorf("add_prefix_space false does not match prepend_scheme %q", m.scheme)
			}
			m.scheme = "never"
		}
	}
	if m.split, err = o.boolean("split", true); err != nil {
		return m, err
	}
	o.ignore("str_rep") // derived from replacement
	return m, nil
}

func (m metaspacePre) apply(p piece, emit func(piece)) {
	p.text = strings.ReplaceAll(p.text, " ", m.replStr)
	if !strings.HasPrefix(p.text, m.replStr) &&
		(m.scheme == "always" || (m.scheme == "first" && p.orig == 0)) {
		p.text = m.replStr + p.text
		p.ins += len(m.replStr)
	}
	if !m.split {
		emit(p)
		return
	}
	cut(p, charSpans(p.text, func(r rune) bool { return r == m.repl }, nil), mergedWithNext, emit)
}

// digitsPre isolates digits: each one, or each run.
type digitsPre struct{ individual bool }

func (d digitsPre) apply(p piece, emit func(piece)) {
	b := contiguous
	if d.individual {
		b = isolated
	}
	cut(p, charSpans(p.text, unicode.IsNumber, nil), b, emit)
}

// whitespacePre keeps the runs of \w+ and of [^\w\s]+ (Rust's Unicode
// classes) and drops the rest.
type whitespacePre struct{}

type wordOrPunct struct{}

func (wordOrPunct) find(s string, fn func(start, end int)) {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			i += n
			continue
		}
		word := isWordChar(r)
		start := i
		for i < len(s) {
			r, n := utf8.DecodeRuneInString(s[i:])
			if unicode.IsSpace(r) || isWordChar(r) != word {
				break
			}
			i += n
		}
		fn(start, i)
	}
}

func (whitespacePre) apply(p piece, emit func(piece)) {
	cut(p, regexSpans(wordOrPunct{}, p.text, true, nil), removed, emit)
}

// whitespaceSplitPre splits on white space, dropping it.
type whitespaceSplitPre struct{}

func (whitespaceSplitPre) apply(p piece, emit func(piece)) {
	cut(p, charSpans(p.text, unicode.IsSpace, nil), removed, emit)
}

// punctuationPre splits at punctuation: ASCII punctuation (which includes
// symbols such as $ + < = > ^ ` | ~) or any Unicode P* character.
type punctuationPre struct{ b behavior }

func isPunct(r rune) bool {
	if r < utf8.RuneSelf {
		lower := r | 0x20
		return r > ' ' && r < 0x7f && !('0' <= r && r <= '9') && !('a' <= lower && lower <= 'z')
	}
	return unicode.IsPunct(r)
}

func (pp punctuationPre) apply(p piece, emit func(piece)) {
	cut(p, charSpans(p.text, isPunct, nil), pp.b, emit)
}

// charDelimiterPre splits on one character, dropping it.
type charDelimiterPre struct{ d rune }

func (c charDelimiterPre) apply(p piece, emit func(piece)) {
	cut(p, charSpans(p.text, func(r rune) bool { return r == c.d }, nil), removed, emit)
}
