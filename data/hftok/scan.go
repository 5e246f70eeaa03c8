package hftok

import (
	"unicode"
	"unicode/utf8"
)

// Hand-written scanners for the pre-tokenizer regexes of GPT-2 (and
// GPT-NeoX, through ByteLevel), Llama 3 and Qwen2. Each tries the
// pattern's alternatives in order at a position, with the backtracking the
// regex engine would do, so the matches are Oniguruma's: the library
// goldens check that, and TestScannersMatchRegexp2 compares them with
// regexp2 on the golden texts, the Opticks and random strings. They run
// several times faster than regexp2 and fold case as Oniguruma does (ſ is
// s in (?i:'s), which regexp2 misses).

// llama3Pattern is the Split regex of Llama 3's tokenizer.json.
const llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// qwen2Pattern is Llama 3's with single digits (Qwen2's tokenizer.json).
const qwen2Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

func init() {
	knownPatterns[gpt2Pattern] = scanner{gpt2Match}
	knownPatterns[llama3Pattern] = scanner{func(s string, i int) int { return llama3Match(s, i, 3) }}
	knownPatterns[qwen2Pattern] = scanner{func(s string, i int) int { return llama3Match(s, i, 1) }}
}

// scanner applies a match function at successive positions; a position
// where nothing matches is skipped by one character, as a regex search does.
type scanner struct {
	at func(s string, i int) int // end of the match at i, or -1
}

func (sc scanner) find(s string, fn func(start, end int)) {
	for i := 0; i < len(s); {
		if end := sc.at(s, i); end >= 0 {
			fn(i, end)
			if end > i {
				i = end
				continue
			}
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		i += n
	}
}

func isL(r rune) bool    { return unicode.IsLetter(r) }
func isN(r rune) bool    { return unicode.IsNumber(r) }
func isS(r rune) bool    { return unicode.IsSpace(r) }
func isCRLF(r rune) bool { return r == '\r' || r == '\n' }
func isSym(r rune) bool  { return !isS(r) && !isL(r) && !isN(r) } // [^\s\p{L}\p{N}]
func runeAt(s string, i int) (rune, int) {
	if i >= len(s) {
		return -1, 0
	}
	if s[i] < utf8.RuneSelf {
		return rune(s[i]), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// run is the end of the run of characters in class starting at i.
func run(s string, i int, class func(rune) bool) int {
	for i < len(s) {
		r, n := runeAt(s, i)
		if !class(r) {
			break
		}
		i += n
	}
	return i
}

// runMax is run limited to max characters.
func runMax(s string, i int, class func(rune) bool, max int) int {
	for k := 0; k < max && i < len(s); k++ {
		r, n := runeAt(s, i)
		if !class(r) {
			break
		}
		i += n
	}
	return i
}

// contraction matches 's 't 're 've 'm 'll 'd after the apostrophe at i;
// fold makes the letters case-insensitive (Unicode simple folding, so ſ
// counts as s, as in Oniguruma's (?i)).
func contraction(s string, i int, fold bool) int {
	if i >= len(s) || s[i] != '\'' {
		return -1
	}
	eq := func(j int, c rune) (int, bool) {
		r, n := runeAt(s, j)
		if r == c {
			return j + n, true
		}
		if !fold || r < 0 {
			return j, false
		}
		for f := unicode.SimpleFold(c); f != c; f = unicode.SimpleFold(f) {
			if r == f {
				return j + n, true
			}
		}
		return j, false
	}
	for _, alt := range [...]string{"s", "t", "re", "ve", "m", "ll", "d"} {
		j, ok := i+1, true
		for _, c := range alt {
			if j, ok = eq(j, c); !ok {
				break
			}
		}
		if ok {
			return j
		}
	}
	return -1
}

// spaceTail is \s+(?!\S) then \s+ at i: the white-space run, less its last
// character when a non-space follows and the run has more than one.
func spaceTail(s string, i int) int {
	j := run(s, i, isS)
	if j == i {
		return -1
	}
	if j == len(s) {
		return j
	}
	_, n := utf8.DecodeLastRuneInString(s[i:j])
	if j-n > i {
		return j - n
	}
	return j
}

// SplitGPT2 calls emit with the pieces GPT-2's regex (the ByteLevel
// pre-tokenizer's) cuts s into, in order; together they are s. A byte
// that is not part of a UTF-8 character counts as a symbol.
func SplitGPT2(s string, emit func(piece string)) {
	scanner{gpt2Match}.find(s, func(start, end int) { emit(s[start:end]) })
}

// gpt2Match: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func gpt2Match(s string, i int) int {
	if j := contraction(s, i, false); j >= 0 {
		return j
	}
	k := i
	if s[i] == ' ' {
		k++
	}
	if r, _ := runeAt(s, k); r >= 0 {
		for _, class := range [...]func(rune) bool{isL, isN, isSym} {
			if class(r) {
				return run(s, k, class)
			}
		}
	}
	return spaceTail(s, i)
}

// llama3Match: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,digits}|
// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func llama3Match(s string, i, digits int) int {
	if j := contraction(s, i, true); j >= 0 {
		return j
	}
	r, n := runeAt(s, i)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if isL(r) {
		return run(s, i, isL)
	}
	if !isCRLF(r) && !isN(r) {
		if r2, _ := runeAt(s, i+n); r2 >= 0 && isL(r2) {
			return run(s, i+n, isL)
		}
	}
	// \p{N}{1,digits}
	if isN(r) {
		return runMax(s, i, isN, digits)
	}
	// ?[^\s\p{L}\p{N}]+[\r\n]*
	k := i
	if r == ' ' {
		k++
	}
	if r2, _ := runeAt(s, k); r2 >= 0 && isSym(r2) {
		return run(s, run(s, k, isSym), isCRLF)
	}
	if !isS(r) {
		return -1
	}
	// \s*[\r\n]+: up to the last CR or LF of the white-space run.
	j := run(s, i, isS)
	for p := j; p > i; {
		c, m := utf8.DecodeLastRuneInString(s[i:p])
		if isCRLF(c) {
			return p
		}
		p -= m
	}
	return spaceTail(s, i)
}
