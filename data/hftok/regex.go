package hftok

import (
	"strings"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// matcher finds the successive non-overlapping leftmost matches of a
// pattern, as byte offsets, the way the library's Oniguruma regexes
// (SysRegex) and escaped literal strings do.
type matcher interface {
	find(s string, fn func(start, end int))
}

// literal matches a fixed string (a "String" pattern, which the library
// escapes into a regex).
type literal string

func (l literal) find(s string, fn func(start, end int)) {
	off := 0
	for {
		i := strings.Index(s[off:], string(l))
		if i < 0 {
			return
		}
		fn(off+i, off+i+len(l))
		off += i + len(l)
	}
}

// backtracking runs a pattern through regexp2, which has the look-ahead and
// backtracking semantics of Oniguruma that Go's regexp lacks (the GPT-2
// and Llama 3 patterns end in \s+(?!\S)).
type backtracking struct{ re *regexp2.Regexp }

func (b backtracking) find(s string, fn func(start, end int)) {
	// regexp2 reports rune offsets; walk a byte cursor alongside.
	runes := []rune(s)
	m, err := b.re.FindRunesMatch(runes)
	bytePos, runePos := 0, 0
	advance := func(to int) int {
		for runePos < to {
			bytePos += utf8.RuneLen(runes[runePos])
			runePos++
		}
		return bytePos
	}
	for err == nil && m != nil {
		start := advance(m.Index)
		end := advance(m.Index + m.Length)
		fn(start, end)
		m, err = b.re.FindNextMatch(m)
	}
	// err is only a match timeout, and none is set.
}

// compileRegex builds the matcher of a Split or Replace regex: one of the
// hand-written scanners when the pattern is one we know (proved equal to
// regexp2 in the tests, and several times faster), else regexp2.
func compileRegex(pattern string) (matcher, error) {
	if m, ok := knownPatterns[pattern]; ok {
		return m, nil
	}
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, err
	}
	return backtracking{re}, nil
}

// knownPatterns maps pattern text to a hand-written scanner (scan.go).
var knownPatterns = map[string]matcher{}
