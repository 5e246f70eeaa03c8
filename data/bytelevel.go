package data

import (
	"unicode"
	"unicode/utf8"
)

// byteToRune is GPT-2's byte-level alphabet: printable bytes stand for
// themselves, the 68 others are shifted to U+0100 onwards, so every byte
// sequence becomes a printable string and back.
var byteToRune, runeToByte = func() ([256]rune, map[rune]byte) {
	var b2r [256]rune
	r2b := make(map[rune]byte, 256)
	next := rune(256)
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if printable {
			b2r[b] = rune(b)
		} else {
			b2r[b] = next
			next++
		}
		r2b[b2r[b]] = byte(b)
	}
	return b2r, r2b
}()

// byteLevelString maps raw bytes to their byte-level characters.
func byteLevelString(s string) string {
	out := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = byteToRune[s[i]]
	}
	return string(out)
}

// isSpace follows Python's str.isspace, which GPT-2's regex \s uses; Go's
// unicode.IsSpace misses the four ASCII separators 0x1C-0x1F.
func isSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1C && r <= 0x1F) }

func isOther(r rune) bool { return !isSpace(r) && !unicode.IsLetter(r) && !unicode.IsNumber(r) }

// splitWords cuts text into GPT-2's pre-tokens, the pieces matched by
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// written by hand because Go's regexp has no look-ahead. Invalid UTF-8 bytes
// count as "other" so that every byte lands in some piece.
func splitWords(s string, emit func(piece string)) {
	// An invalid byte decodes as (U+FFFD, 1), a symbol, so it joins "other" runs.
	i := 0
	for i < len(s) {
		r, _ := utf8.DecodeRuneInString(s[i:])
		if r == '\'' {
			if l := contraction(s[i+1:]); l > 0 {
				emit(s[i : i+1+l])
				i += 1 + l
				continue
			}
		}
		start := i
		if r == ' ' && i+1 < len(s) {
			if nr, _ := utf8.DecodeRuneInString(s[i+1:]); !isSpace(nr) {
				r = nr
				i++ // the optional leading space of the next three classes
			}
		}
		switch {
		case unicode.IsLetter(r):
			i = scan(s, i, unicode.IsLetter)
		case unicode.IsNumber(r):
			i = scan(s, i, unicode.IsNumber)
		case !isSpace(r):
			i = scan(s, i, isOther)
		default:
			end := scan(s, i, isSpace)
			if end < len(s) {
				// \s+(?!\S): leave the last space to start the next piece.
				if _, ln := utf8.DecodeLastRuneInString(s[i:end]); end-ln > i {
					end -= ln
				}
			}
			i = end
		}
		emit(s[start:i])
	}
}

// scan advances over the runes for which ok holds.
func scan(s string, i int, ok func(rune) bool) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !ok(r) {
			return i
		}
		i += n
	}
	return i
}

func contraction(s string) int {
	for _, c := range [...]string{"re", "ve", "ll", "s", "t", "m", "d"} {
		if len(s) >= len(c) && s[:len(c)] == c {
			return len(c)
		}
	}
	return 0
}
