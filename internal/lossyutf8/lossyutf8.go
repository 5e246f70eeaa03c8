// Package lossyutf8 makes bytes valid UTF-8 as Hugging Face's tokenizers
// do (Rust's String::from_utf8_lossy): one U+FFFD for each maximal
// ill-formed subsequence, where Go's strings.ToValidUTF8 writes one for a
// whole run of bad bytes and its decoder one per byte. Pure Go; the one
// place memo spells that rule, for decoding and for the text it stores.
package lossyutf8

import "unicode/utf8"

// String turns bytes into a string as Rust's String::from_utf8_lossy
// does: each maximal ill-formed subsequence becomes one U+FFFD (Unicode's
// "substitution of maximal subparts"; Go's decoder would give one per byte).
func String(b []byte) string {
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
