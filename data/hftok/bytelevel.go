package hftok

import (
	"unicode/utf8"
	"unsafe"

	"github.com/memo-research/memo/internal/lossyutf8"
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

// validUTF8 makes the input text valid UTF-8 the way a caller of the
// library (JavaScript, Python) would have had to: lossily.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return lossyutf8.String([]byte(s))
}
