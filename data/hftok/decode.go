package hftok

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/memo-research/memo/internal/lossyutf8"
)

// decoder rewrites the list of token strings; the result is joined.
type decoder interface {
	decodeChain(toks []string) []string
}

func parseDecoder(raw json.RawMessage, where string) (decoder, error) {
	return parseComponent(raw, where, "decoders", parseDecoder, func(l []decoder) decoder { return seqDecoder(l) }, decoderOf)
}

// decoderOf reads a decoder of type t other than Sequence from o.
func decoderOf(o *obj, where, t string) (decoder, error) {
	var d decoder
	switch t {
	case "ByteLevel":
		o.ignore("add_prefix_space", "trim_offsets", "use_regex") // encoding options
		d = byteLevelDecoder{}
	case "Replace":
		m, content, err := o.replacement()
		if err != nil {
			return nil, err
		}
		d = replaceDecoder{m, content}
	case "ByteFallback":
		d = byteFallbackDecoder{}
	case "Fuse":
		d = fuseDecoder{}
	case "Strip":
		s := stripDecoder{}
		c, err := o.str("content", "")
		if err != nil {
			return nil, err
		}
		if utf8.RuneCountInString(c) != 1 {
			return nil, o.errorf("content %q: want one character", c)
		}
		s.content, _ = utf8.DecodeRuneInString(c)
		if s.start, err = o.integer("start", 0); err != nil {
			return nil, err
		}
		if s.stop, err = o.integer("stop", 0); err != nil {
			return nil, err
		}
		d = s
	case "Metaspace":
		m, err := parseMetaspace(o)
		if err != nil {
			return nil, err
		}
		d = metaspaceDecoder{m}
	case "BPEDecoder":
		s, err := o.str("suffix", "</w>")
		if err != nil {
			return nil, err
		}
		d = bpeSuffixDecoder(s)
	default:
		return nil, unsupported(where, t, "ByteLevel", "Replace", "ByteFallback", "Fuse", "Strip", "Metaspace", "BPEDecoder", "Sequence")
	}
	return d, nil
}

type seqDecoder []decoder

func (s seqDecoder) decodeChain(toks []string) []string {
	for _, d := range s {
		toks = d.decodeChain(toks)
	}
	return toks
}

// byteLevelDecoder maps alphabet characters back to bytes; a token with any
// other character contributes its UTF-8 as is. Invalid UTF-8 in the result
// becomes U+FFFD.
type byteLevelDecoder struct{}

func (byteLevelDecoder) decodeChain(toks []string) []string {
	return []string{lossyutf8.String(byteLevelBytes(toks))}
}

// byteLevelBytes is the byte-level decoder before the library's last step,
// which makes the bytes a (valid UTF-8) string.
func byteLevelBytes(toks []string) []byte {
	n := 0
	for _, t := range toks {
		n += len(t)
	}
	buf := make([]byte, 0, n)
	for _, t := range toks {
		mark := len(buf)
		ok := true
		for _, r := range t {
			b, in := runeByte[r]
			if !in {
				ok = false
				break
			}
			buf = append(buf, b)
		}
		if !ok {
			buf = append(buf[:mark], t...)
		}
	}
	return buf
}

type replaceDecoder struct {
	m       matcher
	content string
}

// decodeChain leaves a token whose regex match times out as it is:
// Decode has no error to return (an Encode with the same regex would
// fail instead), and the timeout bounds the time it takes.
func (r replaceDecoder) decodeChain(toks []string) []string {
	for i, t := range toks {
		func() {
			var err error
			defer catchRegex(&err)
			toks[i] = replaceAll(r.m, t, r.content)
		}()
	}
	return toks
}

// byteFallbackDecoder turns runs of <0xXX> tokens into their bytes: the
// string when the run is valid UTF-8, else one U+FFFD per byte.
type byteFallbackDecoder struct{}

func byteToken(t string) (byte, bool) {
	if len(t) != 6 || !strings.HasPrefix(t, "<0x") || t[5] != '>' {
		return 0, false
	}
	// Rust's u8::from_str_radix, which also takes a leading '+'.
	v, err := strconv.ParseUint(strings.TrimPrefix(t[3:5], "+"), 16, 8)
	return byte(v), err == nil
}

func (byteFallbackDecoder) decodeChain(toks []string) []string {
	out := make([]string, 0, len(toks))
	var run []byte
	flush := func() {
		if len(run) == 0 {
			return
		}
		if utf8.Valid(run) {
			out = append(out, string(run))
		} else {
			for range run {
				out = append(out, "\uFFFD")
			}
		}
		run = run[:0]
	}
	for _, t := range toks {
		if b, ok := byteToken(t); ok {
			run = append(run, b)
			continue
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out
}

type fuseDecoder struct{}

func (fuseDecoder) decodeChain(toks []string) []string { return []string{strings.Join(toks, "")} }

// stripDecoder removes up to start leading and stop trailing content
// characters from each token.
type stripDecoder struct {
	content     rune
	start, stop int
}

func (s stripDecoder) decodeChain(toks []string) []string {
	for i, t := range toks {
		rs := []rune(t)
		lo := 0
		for lo < s.start && lo < len(rs) && rs[lo] == s.content {
			lo++
		}
		hi := len(rs)
		for k := 0; k < s.stop && hi > lo && rs[hi-1] == s.content; k++ {
			hi--
		}
		toks[i] = string(rs[lo:hi])
	}
	return toks
}

// metaspaceDecoder turns the replacement character back into spaces,
// dropping it at the start of the first token unless nothing was prepended.
type metaspaceDecoder struct{ m metaspacePre }

func (d metaspaceDecoder) decodeChain(toks []string) []string {
	for i, t := range toks {
		var b strings.Builder
		for _, r := range t {
			switch {
			case r != d.m.repl:
				b.WriteRune(r)
			case i == 0 && d.m.scheme != "never":
			default:
				b.WriteByte(' ')
			}
		}
		toks[i] = b.String()
	}
	return toks
}

// bpeSuffixDecoder replaces the end-of-word suffix by a space (by nothing
// in the last token).
type bpeSuffixDecoder string

func (s bpeSuffixDecoder) decodeChain(toks []string) []string {
	for i, t := range toks {
		rep := " "
		if i == len(toks)-1 {
			rep = ""
		}
		toks[i] = strings.ReplaceAll(t, string(s), rep)
	}
	return toks
}
