package hftok

import (
	"encoding/json"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// piece is one split of the text on its way through the pipeline (the
// library's Split of a PreTokenizedString).
type piece struct {
	text string
	// orig is where the piece starts in the input text, and ins how many
	// bytes at its start a normalizer inserted (they align with orig). Only
	// Metaspace's prepend_scheme "first" looks at them: it prepends only to
	// the piece that starts the input. The library keeps a full alignment;
	// we keep what that decision needs, exact unless a normalizer changes
	// lengths before a pre-tokenizer splits (then orig is approximate, but
	// stays 0 only for the piece at the start).
	orig, ins int
	tok       *addedToken // an added token found in the text: no further processing
	// byteLevel marks a piece whose bytes the last pre-tokenizer (ByteLevel)
	// left for the model step to map to the byte-level alphabet, so that the
	// ids can be cached by the raw piece (see Tokenizer.Encode).
	byteLevel bool
}

type normalizer interface {
	normalize(p piece) piece
}

func parseNormalizer(raw json.RawMessage, where string) (normalizer, error) {
	return parseComponent(raw, where, "normalizers", parseNormalizer, func(l []normalizer) normalizer { return seqNormalizer(l) }, normalizerOf)
}

// normalizerOf reads a normalizer of type t other than Sequence from o.
func normalizerOf(o *obj, where, t string) (normalizer, error) {
	var (
		n   normalizer
		err error
	)
	switch t {
	case "Prepend":
		s, err := o.str("prepend", "")
		if err != nil {
			return nil, err
		}
		n = prepend(s)
	case "Replace":
		m, content, err := o.replacement()
		if err != nil {
			return nil, err
		}
		n = replaceNorm{m, content}
	case "Lowercase":
		n = lowercase{}
	case "NFC":
		n = unicodeNorm{norm.NFC}
	case "NFD":
		n = unicodeNorm{norm.NFD}
	case "NFKC":
		n = unicodeNorm{norm.NFKC}
	case "NFKD":
		n = unicodeNorm{norm.NFKD}
	case "Strip":
		var s strip
		if s.left, err = o.boolean("strip_left", false); err != nil {
			return nil, err
		}
		if s.right, err = o.boolean("strip_right", false); err != nil {
			return nil, err
		}
		n = s
	default:
		return nil, unsupported(where, t, "Prepend", "Replace", "Lowercase", "NFC", "NFD", "NFKC", "NFKD", "Strip", "Sequence")
	}
	return n, nil
}

type seqNormalizer []normalizer

func (s seqNormalizer) normalize(p piece) piece {
	for _, n := range s {
		p = n.normalize(p)
	}
	return p
}

// prepend adds its text in front of a non-empty piece.
type prepend string

func (s prepend) normalize(p piece) piece {
	if p.text != "" {
		p.text = string(s) + p.text
		p.ins += len(s)
	}
	return p
}

// replaceNorm replaces every match of a pattern.
type replaceNorm struct {
	m       matcher
	content string
}

func (r replaceNorm) normalize(p piece) piece {
	p.text = replaceAll(r.m, p.text, r.content)
	return p
}

func replaceAll(m matcher, s, content string) string {
	if l, ok := m.(literal); ok {
		return strings.ReplaceAll(s, string(l), content)
	}
	var b strings.Builder
	last := 0
	m.find(s, func(start, end int) {
		b.WriteString(s[last:start])
		b.WriteString(content)
		last = end
	})
	if last == 0 && b.Len() == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// lowercase maps each character on its own, as Rust's char::to_lowercase:
// Go's simple mapping except U+0130, whose full lowercase is i + U+0307.
type lowercase struct{}

func (lowercase) normalize(p piece) piece {
	p.text = strings.Map(unicode.ToLower, strings.ReplaceAll(p.text, "\u0130", "i\u0307"))
	return p
}

type unicodeNorm struct{ f norm.Form }

func (u unicodeNorm) normalize(p piece) piece {
	p.text = u.f.String(p.text)
	return p
}

// strip removes Unicode white space at either end.
type strip struct{ left, right bool }

func (s strip) normalize(p piece) piece {
	if s.left {
		t := strings.TrimLeftFunc(p.text, unicode.IsSpace)
		cut := len(p.text) - len(t)
		p.orig += max(0, cut-p.ins)
		p.ins = max(0, p.ins-cut)
		p.text = t
	}
	if s.right {
		p.text = strings.TrimRightFunc(p.text, unicode.IsSpace)
	}
	return p
}
