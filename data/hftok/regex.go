package hftok

import (
	"fmt"
	"strings"
	"time"
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
type backtracking struct {
	re      *regexp2.Regexp
	pattern string
}

// matchTimeout bounds one regexp2 match. A backtracking pattern can take
// time exponential in its input ((a+)+b on 24 a's took 7.5 s, on 40 it
// would not finish); Oniguruma, which the library runs, stops such a
// match at its retry limit. The patterns of real files match a piece in
// microseconds, so the bound is generous: it turns a hang into an error,
// and a slow or loaded machine never meets it on a real file. (A var for
// the test of a timeout, which would take 20 s at this value.)
var matchTimeout = 10 * time.Second

// spuriousRetries is how often a timeout that came too early is tried
// again (matchRetrying).
const spuriousRetries = 8

// RegexError is the error of an Encode whose tokenizer.json regex (a
// Split pre-tokenizer's or a Replace normalizer's) failed on the text:
// one match ran past matchTimeout.
type RegexError struct {
	Pattern string
	err     error
}

func (e *RegexError) Error() string {
	p := e.Pattern
	if len(p) > 60 {
		p = p[:57] + "..."
	}
	// regexp2's own message quotes the whole text.
	why := fmt.Sprintf("a match timed out after %v (the pattern backtracks too much on this text)", matchTimeout)
	if !strings.HasPrefix(e.err.Error(), "match timeout") {
		why = "regexp2: " + strings.SplitN(e.err.Error(), "\n", 2)[0] // an internal error, not seen
	}
	return fmt.Sprintf("tokenizer.json: Regex %q: %s", p, why)
}

// find panics with a *RegexError when a match times out: the
// matchers' callers (normalizers, pre-tokenizers, decoders) return no
// errors, so the panic carries it to the public entry points, which
// recover it (catchRegex) into Encode's error.
func (b backtracking) find(s string, fn func(start, end int)) {
	// regexp2 reports rune offsets; walk a byte cursor alongside.
	runes := []rune(s)
	m, err := matchRetrying(func() (*regexp2.Match, error) { return b.re.FindRunesMatch(runes) })
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
		prev := m
		m, err = matchRetrying(func() (*regexp2.Match, error) { return b.re.FindNextMatch(prev) })
	}
	if err != nil {
		panic(&RegexError{Pattern: b.pattern, err: err})
	}
}

// matchRetrying runs one regexp2 match, next, and tells a real timeout
// from a spurious one. regexp2 (v1.11.4) checks MatchTimeout against a
// shared clock that a goroutine advances: stale when that goroutine has
// stopped after an idle spell, lagging when it is starved on a loaded
// machine, it jumps forward and fails a match that has barely begun (CI
// saw "[aeiou]+" time out on a short line). A timeout reported before
// half the budget has passed on memo's own clock is such a one, and the
// match is run again; a real one comes after the budget.
func matchRetrying(next func() (*regexp2.Match, error)) (*regexp2.Match, error) {
	for try := 0; ; try++ {
		start := time.Now()
		m, err := next()
		if err == nil || try == spuriousRetries || time.Since(start) >= matchTimeout/2 {
			return m, err
		}
	}
}

// catchRegex recovers a *RegexError panic into *err; any other panic
// goes on. Deferred by the entry points that run matchers.
func catchRegex(err *error) {
	r := recover()
	if r == nil {
		return
	}
	if e, ok := r.(*RegexError); ok {
		*err = e
		return
	}
	panic(r)
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
	re.MatchTimeout = matchTimeout
	return backtracking{re, pattern}, nil
}

// knownPatterns maps pattern text to a hand-written scanner (scan.go).
var knownPatterns = map[string]matcher{}
