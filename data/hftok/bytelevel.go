package hftok

import (
	"unicode/utf8"
	"unsafe"
)

// unsafeString turns a buffer nobody else holds into a string without a copy.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// GPT-2's byte-level alphabet: the bytes that print as Latin-1 characters
// ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) stand for themselves; the 68 others
// (controls, space, 0x7F..0xA0, 0xAD) take U+0100, U+0101, ... in byte order.
var byteRune [256]rune

// runeByte inverts byteRune; runes beyond U+0143 are not in the alphabet.
var runeByte = map[rune]byte{}

func init() {
	shifted := rune(0x100)
	for b := 0; b < 256; b++ {
		switch {
		case b >= '!' && b <= '~', b >= 0xA1 && b <= 0xAC, b >= 0xAE:
			byteRune[b] = rune(b)
		default:
			byteRune[b] = shifted
			shifted++
		}
		runeByte[byteRune[b]] = byte(b)
	}
}

// ByteLevelString spells the bytes of s in GPT-2's byte-level alphabet,
// as byte-level vocabularies spell their tokens ("Ġworld" for " world").
func ByteLevelString(s string) string { return byteLevelString(s) }

// byteLevelString writes each byte of s as its alphabet character.
func byteLevelString(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		n += byteRuneLen[s[i]]
	}
	buf := make([]byte, 0, n)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= '!' && c <= '~' {
			buf = append(buf, c) // printable ASCII stands for itself
		} else {
			buf = utf8.AppendRune(buf, byteRune[c])
		}
	}
	return unsafeString(buf)
}

// byteRuneLen is the UTF-8 length of each byte's alphabet character.
var byteRuneLen [256]int

func init() {
	for b, r := range byteRune {
		byteRuneLen[b] = utf8.RuneLen(r)
	}
}

// lossyUTF8 turns bytes into a string as Rust's String::from_utf8_lossy
// does: each maximal ill-formed subsequence becomes one U+FFFD (Unicode's
// "substitution of maximal subparts"; Go's decoder would give one per byte).
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || n > 1 {
			out = append(out, b[i:i+n]...)
			i += n
			continue
		}
		i += maximalSubpart(b[i:])
		out = utf8.AppendRune(out, utf8.RuneError)
	}
	return string(out)
}

// maximalSubpart is the length of the ill-formed sequence at the start of
// b: its lead byte and the continuation bytes that a well-formed sequence
// with that lead could have (Unicode Table 3-7), at least 1.
func maximalSubpart(b []byte) int {
	lead := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF) // allowed range of the second byte
	switch {
	case lead >= 0xC2 && lead <= 0xDF:
		need = 1
	case lead == 0xE0:
		need, lo = 2, 0xA0
	case lead >= 0xE1 && lead <= 0xEF:
		need = 2
		if lead == 0xED {
			hi = 0x9F
		}
	case lead == 0xF0:
		need, lo = 3, 0x90
	case lead >= 0xF1 && lead <= 0xF3:
		need = 3
	case lead == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for k := 1; k <= need && k < len(b); k++ {
		c := b[k]
		if k == 1 && (c < lo || c > hi) || k > 1 && (c < 0x80 || c > 0xBF) {
			break
		}
		n++
	}
	return n
}

// validUTF8 makes the input text valid UTF-8 the way a caller of the
// library (JavaScript, Python) would have had to: lossily.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return lossyUTF8([]byte(s))
}
