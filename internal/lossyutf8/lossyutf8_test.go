package lossyutf8

import "testing"

// TestString: one U+FFFD per maximal ill-formed subsequence (Unicode's
// "substitution of maximal subparts", Rust's from_utf8_lossy), which
// Hugging Face's decode writes for a token slice cut inside a character.
func TestString(t *testing.T) {
	const r = "\uFFFD"
	for _, tc := range []struct{ in, want string }{
		{"naïve", "naïve"},
		{"\xb8\xad文", r + r + "文"},          // 中 without its lead byte: two stray continuations
		{"中\xe6\x96", "中" + r},              // 文 cut after two of its three bytes
		{"ok \xff\xfe", "ok " + r + r},      // bytes that never start a character
		{"\xf0\x9f\x98", r},                 // an emoji cut short
		{"\xed\xa0\x80", r + r + r},         // a surrogate: ED allows only 80..9F next
		{"\xe0\x80\xaf", r + r + r},         // an overlong form
		{"a\xc3", "a" + r},                  // a lone lead byte at the end
		{"\xf4\x90\x80\x80", r + r + r + r}, // above U+10FFFF
		{"\xe2\x82\xac\xe2\x82", "€" + r},   // one whole, one cut
	} {
		if got := String([]byte(tc.in)); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
