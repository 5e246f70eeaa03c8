// Package hftok encodes and decodes text with a Hugging Face tokenizer.json
// the way Hugging Face's tokenizers library (Rust, v0.22) does, in pure Go:
// added tokens found in the raw text, normalizers, pre-tokenizers, the BPE
// (or WordLevel) model, the post-processor's special tokens, and decoders.
//
// Every component and option of the file is implemented or refused by
// name when the file is loaded; only options that touch nothing but
// offsets (trim_offsets) and a pair template are passed over. A top-level
// key the library does not know is refused, as the library refuses it. Split regexes run
// through github.com/dlclark/regexp2 (Go's regexp has no look-ahead),
// except the GPT-2, Llama 3 and Qwen2 patterns, which run through faster
// hand-written scanners (scan.go) that the tests check against it; a
// regexp2 match is limited to ten seconds (Encode's RegexError).
package hftok

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Tokenizer is a loaded tokenizer.json. It is safe for concurrent use.
type Tokenizer struct {
	norm     normalizer
	pre      preTokenizer
	model    model
	post     postProcessor
	dec      decoder
	added    *addedVocab
	maxID    int32
	bos      int32
	eos      int32
	rawCache pieceCache // raw piece -> ids, for byte-level pieces
	// byteLevel: GPT-2's byte-level scheme throughout (see ByteLevel).
	byteLevel bool
	// idBytes are, for a byteLevel tokenizer, the bytes each id decodes
	// to (nil: no such id), and special whether it is a special token:
	// DecodeBytes reads them instead of looking tokens up by id and their
	// characters up in the alphabet.
	idBytes [][]byte
	special []bool

	// Warnings are what the library would log while loading the file
	// (added tokens whose "id" is not the one they get).
	Warnings []string
}

// Load reads path, a tokenizer.json file or a directory holding one.
func Load(path string) (*Tokenizer, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Parse builds a Tokenizer from the contents of a tokenizer.json.
func Parse(raw []byte) (_ *Tokenizer, err error) {
	// Added tokens marked normalized go through the normalizer here,
	// whose Replace regex can time out on one (RegexError).
	defer catchRegex(&err)
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		if err == nil {
			err = fmt.Errorf("null")
		}
		return nil, fmt.Errorf("not a tokenizer.json: %w", err)
	}
	o := &obj{where: "top level", m: top, used: map[string]bool{}}
	t := &Tokenizer{}
	version, err := o.str("version", "1.0")
	if err != nil {
		return nil, err
	}
	if version != "1.0" {
		return nil, o.errorf("version %q: the library reads only \"1.0\"", version)
	}
	for _, k := range []string{"truncation", "padding"} {
		if o.has(k) {
			return nil, o.errorf("%s is set: truncation and padding are not supported (want null)", k)
		}
	}
	if t.norm, err = parseNormalizer(o.raw("normalizer"), "normalizer"); err != nil {
		return nil, err
	}
	if t.pre, err = parsePreTokenizer(o.raw("pre_tokenizer"), "pre_tokenizer"); err != nil {
		return nil, err
	}
	markLast(t.pre)
	if t.model, err = parseModel(o.raw("model")); err != nil {
		return nil, err
	}
	if t.post, err = parsePostProcessor(o.raw("post_processor"), "post_processor"); err != nil {
		return nil, err
	}
	if t.dec, err = parseDecoder(o.raw("decoder"), "decoder"); err != nil {
		return nil, err
	}
	if t.added, err = parseAdded(o.raw("added_tokens"), t.model, t.norm); err != nil {
		return nil, err
	}
	// The library's reader fails on a key it does not know ("expected `,`
	// or `}`"), so a file with one is no tokenizer.json to it.
	if err := o.done(); err != nil {
		return nil, err
	}
	t.Warnings = t.added.warnings
	t.maxID = t.model.maxID()
	for id := range t.added.byID {
		t.maxID = max(t.maxID, id)
	}
	t.bos, t.eos = -1, -1
	if t.post != nil {
		t.bos, t.eos = t.post.bosEOS()
	}
	for _, id := range []int32{t.bos, t.eos} {
		if _, ok := t.IDToToken(id); id >= 0 && !ok {
			return nil, fmt.Errorf("tokenizer.json: post_processor adds id %d, which is not in the vocabulary", id)
		}
	}
	if t.byteLevel = t.isByteLevel(); t.byteLevel {
		t.idBytes = make([][]byte, t.maxID+1)
		t.special = make([]bool, t.maxID+1)
		for id := range t.idBytes {
			if tok, ok := t.IDToToken(int32(id)); ok {
				t.idBytes[id] = byteLevelBytes([]string{tok}) // each token decodes on its own
				t.special[id] = t.added.isSpecial(tok)
			}
		}
	}
	return t, nil
}

// isByteLevel reports whether the file is GPT-2's byte-level BPE as a
// whole: no normalizer, the ByteLevel pre-tokenizer alone (GPT-2's regex,
// no prefix space), the ByteLevel decoder alone, and a BPE model that has
// a token for each of the 256 bytes and no affixes.
func (t *Tokenizer) isByteLevel() bool {
	pre, ok := t.pre.(*byteLevelPre)
	if !ok || t.norm != nil || pre.addPrefixSpace || !pre.useRegex {
		return false
	}
	if _, ok := t.dec.(byteLevelDecoder); !ok {
		return false
	}
	m, ok := t.model.(*bpe)
	if !ok || m.prefix != "" || m.suffix != "" {
		return false
	}
	for _, r := range byteRune {
		if _, ok := m.ids[string(r)]; !ok {
			return false
		}
	}
	return true
}

// ByteLevel reports whether t is GPT-2's byte-level BPE scheme throughout
// (memo writes its own tokenizers so): then ids stand for bytes. Encode
// takes text that is not valid UTF-8 as the bytes it is, DecodeBytes
// returns the bytes that ids spell, and a text without added tokens
// round-trips through the two byte for byte.
func (t *Tokenizer) ByteLevel() bool { return t.byteLevel }

// Encode tokenizes text; with addSpecial the post-processor's special
// tokens (BOS, EOS) are added. Text that is not valid UTF-8 is first made
// valid with U+FFFD, as a JavaScript or Python caller of the library would,
// unless t is ByteLevel: then a byte that is not part of a character is a
// symbol to GPT-2's regex (as U+FFFD would be) and is encoded as itself.
// The error is a *RegexError: a Split or Replace regex of the file that
// is not one of the known scanners' timed out on text (a ByteLevel
// tokenizer never fails).
func (t *Tokenizer) Encode(text string, addSpecial bool) (ids []int32, err error) {
	defer catchRegex(&err)
	return t.encode(text, addSpecial, t.byteLevelIDs), nil
}

// encode is Encode with the ids of a piece still to be mapped to the
// byte-level alphabet looked up by byteLevelIDs.
func (t *Tokenizer) encode(text string, addSpecial bool, byteLevelIDs func(raw string) []int32) []int32 {
	if !t.byteLevel {
		text = validUTF8(text)
	}
	ids := make([]int32, 0, len(text)/3+1)
	if t.byteLevel {
		// The pipeline reduced to what a ByteLevel file has: added tokens,
		// then GPT-2's pieces (the ByteLevel pre-tokenizer alone, without
		// a prefix space, is SplitGPT2), each mapped and merged.
		for _, p := range t.extract(text) {
			if p.tok != nil {
				ids = append(ids, p.tok.id)
				continue
			}
			SplitGPT2(p.text, func(piece string) { ids = append(ids, byteLevelIDs(piece)...) })
		}
		if t.post != nil {
			ids = t.post.process(ids, addSpecial)
		}
		return ids
	}
	model := func(p piece) {
		if p.byteLevel {
			ids = append(ids, byteLevelIDs(p.text)...)
			return
		}
		ids = t.model.tokenize(p.text, ids)
	}
	for _, p := range t.extract(text) {
		switch {
		case p.tok != nil:
			ids = append(ids, p.tok.id)
		case t.pre != nil:
			t.pre.apply(p, model)
		default:
			model(p)
		}
	}
	if t.post != nil {
		ids = t.post.process(ids, addSpecial)
	}
	return ids
}

// Encoder is Encode for one goroutine of a ByteLevel tokenizer (for
// others it is Encode): it keeps its own cache of the
// byte-level pieces it has encoded in a plain map, without the locks of
// the tokenizer's shared cache (which a profile of memo's data build put
// at about a third of the CPU). The ids are Encode's. Not safe for
// concurrent use; make one per goroutine.
type Encoder struct {
	t     *Tokenizer
	cache map[string][]int32
	max   int
}

// NewEncoder returns an Encoder that caches up to maxCached pieces.
func (t *Tokenizer) NewEncoder(maxCached int) *Encoder {
	return &Encoder{t: t, cache: make(map[string][]int32, min(maxCached, 1<<14)), max: maxCached}
}

// Encode is Tokenizer.Encode.
func (e *Encoder) Encode(text string, addSpecial bool) ([]int32, error) {
	if !e.t.byteLevel {
		return e.t.Encode(text, addSpecial)
	}
	return e.t.encode(text, addSpecial, e.pieceIDs), nil // no regex to fail
}

// PieceLen is Tokenizer.PieceLen.
func (e *Encoder) PieceLen(piece string) int {
	if !e.t.byteLevel {
		return e.t.PieceLen(piece)
	}
	return len(e.pieceIDs(piece))
}

func (e *Encoder) pieceIDs(raw string) []int32 {
	if ids, ok := e.cache[raw]; ok {
		return ids
	}
	// Merged here rather than through the shared caches, which would hold a
	// second copy of every piece the workers hold.
	ids := e.t.model.(*bpe).merged(byteLevelString(raw))
	if len(e.cache) < e.max && len(raw) < maxCachedLen {
		e.cache[strings.Clone(raw)] = ids // raw points into the caller's text
	}
	return ids
}

// byteLevelIDs encodes a piece that still has to be mapped to the
// byte-level alphabet, through a cache keyed by the raw piece: most pieces
// of a long text repeat, and this skips the mapping for them.
func (t *Tokenizer) byteLevelIDs(raw string) []int32 {
	if ids, ok := t.rawCache.get(raw); ok {
		return ids
	}
	ids := t.model.tokenize(byteLevelString(raw), nil)
	t.rawCache.put(raw, ids)
	return ids
}

// extract finds the added tokens that match the raw text, normalizes the
// text between them, then finds those that match normalized text.
func (t *Tokenizer) extract(text string) []piece {
	var out []piece
	t.added.raw.split(text, func(s string, off int, tok *addedToken) {
		if tok != nil {
			out = append(out, piece{text: s, orig: off, tok: tok})
			return
		}
		p := piece{text: s, orig: off}
		if t.norm != nil {
			p = t.norm.normalize(p)
		}
		t.added.norm.split(p.text, func(s string, k int, tok *addedToken) {
			q := sub(p, k, k+len(s))
			q.tok = tok
			out = append(out, q)
		})
	})
	return out
}

// Decode turns ids into text as the library does: ids it does not know are
// dropped, special tokens too when skipSpecial, and the rest go through
// the decoder (joined with spaces when there is none).
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) string {
	toks := t.tokens(ids, skipSpecial)
	if t.dec == nil {
		return strings.Join(toks, " ")
	}
	return strings.Join(t.dec.decodeChain(toks), "")
}

// DecodeBytes is Decode without the library's last step for a ByteLevel
// tokenizer: the bytes the ids spell, also where they do not form UTF-8
// (ids cut from the middle of a character), which Decode writes as U+FFFD.
// For any other tokenizer it is Decode.
func (t *Tokenizer) DecodeBytes(ids []int32, skipSpecial bool) string {
	if !t.byteLevel {
		return t.Decode(ids, skipSpecial)
	}
	keep := func(id int32) bool {
		return id >= 0 && int(id) < len(t.idBytes) && t.idBytes[id] != nil && !(skipSpecial && t.special[id])
	}
	n := 0
	for _, id := range ids {
		if keep(id) {
			n += len(t.idBytes[id])
		}
	}
	buf := make([]byte, 0, n)
	for _, id := range ids {
		if keep(id) {
			buf = append(buf, t.idBytes[id]...)
		}
	}
	return unsafeString(buf)
}

// DecodesTo reports whether DecodeBytes(ids, false) == text; for a
// ByteLevel tokenizer it compares each id's bytes in place instead of
// building the decoded copy.
func (t *Tokenizer) DecodesTo(ids []int32, text string) bool {
	if !t.byteLevel {
		return t.DecodeBytes(ids, false) == text
	}
	at := 0
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.idBytes) || t.idBytes[id] == nil {
			continue // DecodeBytes drops it
		}
		b := t.idBytes[id]
		if len(text)-at < len(b) || text[at:at+len(b)] != string(b) {
			return false
		}
		at += len(b)
	}
	return at == len(text)
}

// tokens are the strings of the ids Decode keeps.
func (t *Tokenizer) tokens(ids []int32, skipSpecial bool) []string {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		s, ok := t.IDToToken(id)
		if !ok || skipSpecial && t.added.isSpecial(s) {
			continue
		}
		toks = append(toks, s)
	}
	return toks
}

// HasAddedToken reports whether Encode finds an added token in text (true
// too when a Replace normalizer's regex times out: Encode will say so).
func (t *Tokenizer) HasAddedToken(text string) bool {
	found, err := t.hasAddedToken(text)
	return found || err != nil
}

func (t *Tokenizer) hasAddedToken(text string) (found bool, err error) {
	defer catchRegex(&err)
	for _, p := range t.extract(text) {
		if p.tok != nil {
			return true, nil
		}
	}
	return false, nil
}

// PieceLen is the number of ids of one piece SplitGPT2 cut, for a
// ByteLevel tokenizer: Encode of a text without added tokens gives the ids
// of its pieces one after the other, so a count can be kept piece by
// piece. (For other tokenizers the number means nothing.)
func (t *Tokenizer) PieceLen(piece string) int { return len(t.byteLevelIDs(piece)) }

// IDToToken is the token an id stands for: an added token, else the model's.
func (t *Tokenizer) IDToToken(id int32) (string, bool) {
	if a, ok := t.added.byID[id]; ok {
		return a.content, true
	}
	return t.model.idToToken(id)
}

// TokenToID is the id of a token: an added token, else the model's.
func (t *Tokenizer) TokenToID(s string) (int32, bool) {
	if id, ok := t.added.byContent[s]; ok {
		return id, true
	}
	return t.model.tokenToID(s)
}

// IsSpecial reports whether id is a special added token (skipped by
// Decode with skipSpecial).
func (t *Tokenizer) IsSpecial(id int32) bool {
	s, ok := t.IDToToken(id)
	return ok && t.added.isSpecial(s)
}

// VocabSize is the largest id plus one: the rows an embedding needs.
func (t *Tokenizer) VocabSize() int { return int(t.maxID) + 1 }

// BOS and EOS are the ids the post-processor puts before and after a text
// when special tokens are added, or -1.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS: see BOS.
func (t *Tokenizer) EOS() int32 { return t.eos }
