// Package tokindex is a suffix array over the token stream of a corpus:
// how many times any window of token ids occurs in it, and where, in a
// few binary searches over a memory-mapped file (the counts of Carlini et
// al. 2023 and infini-gram, Liu et al. 2024, on memo's own corpora).
//
// The stream holds every document once, each followed by a separator id
// that no tokenizer emits, so no window spans two documents. A document
// trained on r times (a target's repetitions) counts r times: documents
// are grouped by r, each group's suffixes sorted on their own, and a count
// is the sum over groups of r times the group's occurrences. Suffixes are
// ordered on their first MaxWindow tokens (then by position), which bounds
// the sort's cost on long duplicated documents; longer queries are refused.
//
// The file: a 4096-byte prefix (magic, version, where the JSON header is
// and its CRC), then the body (the stream, the document table, the suffix
// array), then the JSON header (identity, sizes, groups, CRC-32C of the
// body). Opening checks all of it, so a truncated or altered index, or one
// of another tokenizer or another build of the corpus, is bad input and
// never a wrong count.
package tokindex

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sort"
	"syscall"
	"unsafe"

	"github.com/memo-research/memo/data/sufsort"
	"github.com/memo-research/memo/internal/badinput"
)

// Format constants.
const (
	magic   = "MEMOTIDX"
	version = 1
	// bodyOff is where the body starts: a page boundary, so the stream
	// and the arrays after it can be mapped and read in place.
	bodyOff = 4096
	// prefixLen: magic, version (u32), header offset (u64), header length
	// (u32), header CRC-32C (u32).
	prefixLen = 8 + 4 + 8 + 4 + 4
	// docFields: each document is start in the stream, doc_id, repetitions.
	docFields = 3
	// DefaultMaxWindow is the longest window an index answers by default.
	DefaultMaxWindow = 2048
	// maxStream: positions are uint32.
	maxStream = 1<<32 - 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Identity is what an index was built from: a query against another
// tokenizer's ids or another build of the corpus would count wrongly.
type Identity struct {
	Tokenizer string `json:"tokenizer"`
	Digest    string `json:"digest"`
}

// Group is the documents trained on Reps times: their suffixes are
// SA[Start:End].
type Group struct {
	Reps  int32 `json:"reps"`
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// Header is the index's JSON header.
type Header struct {
	Identity
	Vocab     int `json:"vocab"`
	Width     int `json:"width"` // bytes a token in the stream: 2 or 4
	MaxWindow int `json:"max_window"`
	// Stream is the stream's length, separators included; Tokens the
	// corpus's tokens (suffixes), Docs its documents.
	Stream int64   `json:"stream"`
	Tokens int64   `json:"tokens"`
	Docs   int64   `json:"docs"`
	Groups []Group `json:"groups"`
	// Weighted is the sum over documents of tokens × repetitions.
	Weighted int64  `json:"weighted_tokens"`
	BodyCRC  uint32 `json:"body_crc32c"`
}

// sections are the body's byte offsets.
func (h *Header) sections() (docs, sa, end int64) {
	docs = align8(bodyOff + h.Stream*int64(h.Width))
	sa = docs + h.Docs*docFields*8
	end = sa + h.Tokens*4
	return docs, sa, end
}

func align8(n int64) int64 { return (n + 7) &^ 7 }

// sep is the separator id of a stream of width w.
func sep(width int) uint32 { return sufsort.Sep(width) }

// Index is an opened, memory-mapped index.
type Index struct {
	path string
	h    Header
	mem  []byte
	s16  []uint16
	s32  []uint32
	docs []int64 // docFields per document
	sa   []uint32
}

// Header returns the index's header.
func (ix *Index) Header() Header { return ix.h }

// Open maps the index at path and checks it whole: its prefix, header and
// body checksum, and that it was built from want (empty fields are not
// checked). Every problem with the file's content is bad input.
func Open(path string, want Identity) (*Index, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, badinput.Errorf("index %s: %w (build it with `memo index build`)", path, err)
		}
		return nil, fmt.Errorf("index: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	size := fi.Size()
	bad := func(format string, a ...any) error {
		return badinput.Errorf("index %s: "+format+"; rebuild it with `memo index build`", append([]any{path}, a...)...)
	}
	if fi.IsDir() {
		return nil, badinput.Errorf("index %s: is a directory, not an index file: remove it, then `memo index build`", path)
	}
	if size < bodyOff {
		return nil, bad("%d bytes, shorter than its header (truncated?)", size)
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		return nil, fmt.Errorf("index: this machine is big-endian; the index is little-endian")
	}
	pre := make([]byte, prefixLen)
	if _, err := f.ReadAt(pre, 0); err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	if string(pre[:8]) != magic {
		return nil, bad("not a memo token index (magic %q)", pre[:8])
	}
	if v := binary.LittleEndian.Uint32(pre[8:]); v != version {
		return nil, bad("format version %d, this memo reads %d", v, version)
	}
	hOff := int64(binary.LittleEndian.Uint64(pre[12:]))
	hLen := int64(binary.LittleEndian.Uint32(pre[20:]))
	hCRC := binary.LittleEndian.Uint32(pre[24:])
	if hOff < bodyOff || hLen > 1<<24 || hOff+hLen != size {
		return nil, bad("%d bytes where the header says %d (truncated?)", size, hOff+hLen)
	}
	raw := make([]byte, hLen)
	if _, err := f.ReadAt(raw, hOff); err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	if crc32.Checksum(raw, castagnoli) != hCRC {
		return nil, bad("header checksum mismatch (corrupt)")
	}
	var h Header
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return nil, bad("header: %v", err)
	}
	if err := h.check(hOff); err != nil {
		return nil, bad("%v", err)
	}
	if want.Tokenizer != "" && want.Tokenizer != h.Tokenizer {
		return nil, badinput.Errorf("index %s was built with tokenizer %s, the corpus's is %s; rebuild it with `memo index build`", path, h.Tokenizer, want.Tokenizer)
	}
	if want.Digest != "" && want.Digest != h.Digest {
		return nil, badinput.Errorf("index %s is of another build of the corpus (digest %.12s…, the dataset's is %.12s…); rebuild it with `memo index build`", path, h.Digest, want.Digest)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(hOff), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("index: mmap %s: %w", path, err)
	}
	ix := &Index{path: path, h: h, mem: mem}
	if crc32.Checksum(mem[bodyOff:], castagnoli) != h.BodyCRC {
		ix.Close()
		return nil, bad("body checksum mismatch (corrupt)")
	}
	ix.slice()
	if err := ix.checkDocs(); err != nil {
		ix.Close()
		return nil, bad("%v", err)
	}
	return ix, nil
}

// check holds the header's numbers to each other and to the file.
func (h *Header) check(hOff int64) error {
	if h.Width != 2 && h.Width != 4 {
		return fmt.Errorf("token width %d", h.Width)
	}
	if h.Vocab < 1 || uint64(h.Vocab) > uint64(sep(h.Width)) {
		return fmt.Errorf("vocabulary %d for width %d", h.Vocab, h.Width)
	}
	if h.Docs < 0 || h.Tokens < 0 || h.Stream != h.Tokens+h.Docs || h.Stream > maxStream || h.MaxWindow < 1 {
		return fmt.Errorf("inconsistent sizes: stream %d, tokens %d, docs %d", h.Stream, h.Tokens, h.Docs)
	}
	var at int64
	for i, g := range h.Groups {
		if g.Reps < 1 || g.Start != at || g.End < g.Start || (i > 0 && g.Reps <= h.Groups[i-1].Reps) {
			return fmt.Errorf("group %d (reps %d, [%d, %d)) out of order", i, g.Reps, g.Start, g.End)
		}
		at = g.End
	}
	if at != h.Tokens {
		return fmt.Errorf("groups hold %d suffixes, not %d", at, h.Tokens)
	}
	if _, _, end := h.sections(); end != hOff {
		return fmt.Errorf("body ends at %d, header at %d (truncated?)", end, hOff)
	}
	return nil
}

// slice points the typed views into the mapping (offsets are 8-aligned
// from a page-aligned base).
func (ix *Index) slice() {
	h := &ix.h
	docsOff, saOff, end := h.sections()
	base := unsafe.Pointer(unsafe.SliceData(ix.mem))
	if h.Width == 2 {
		ix.s16 = unsafe.Slice((*uint16)(unsafe.Add(base, bodyOff)), h.Stream)
	} else {
		ix.s32 = unsafe.Slice((*uint32)(unsafe.Add(base, bodyOff)), h.Stream)
	}
	ix.docs = unsafe.Slice((*int64)(unsafe.Add(base, docsOff)), h.Docs*docFields)
	ix.sa = unsafe.Slice((*uint32)(unsafe.Add(base, saOff)), (end-saOff)/4)
}

// checkDocs checks the document table against the stream: starts rising,
// each document ending at a separator where the next begins, inside the
// stream; and the suffix array's entries, that each is a stream position.
func (ix *Index) checkDocs() error {
	var at int64
	s := sep(ix.h.Width)
	for k := int64(0); k < ix.h.Docs; k++ {
		start := ix.docs[k*docFields]
		if start != at {
			return fmt.Errorf("document %d starts at %d, want %d", k, start, at)
		}
		end := ix.h.Stream
		if k+1 < ix.h.Docs {
			end = ix.docs[(k+1)*docFields]
		}
		if end <= start || end > ix.h.Stream || ix.tok(end-1) != s {
			return fmt.Errorf("document %d does not end at a separator", k)
		}
		at = end
	}
	if at != ix.h.Stream {
		return fmt.Errorf("documents cover %d of %d stream tokens", at, ix.h.Stream)
	}
	// The suffix array's entries index the stream wherever a count looks;
	// one past it would be read out of the mapping. One pass, as the
	// checksum's.
	for i, p := range ix.sa {
		if int64(p) >= ix.h.Stream {
			return fmt.Errorf("suffix array entry %d is %d, past the %d-token stream", i, p, ix.h.Stream)
		}
	}
	return nil
}

func (ix *Index) tok(p int64) uint32 {
	if ix.s16 != nil {
		return uint32(ix.s16[p])
	}
	return ix.s32[p]
}

// Close unmaps the index.
func (ix *Index) Close() error {
	if ix.mem == nil {
		return nil
	}
	err := syscall.Munmap(ix.mem)
	ix.mem, ix.s16, ix.s32, ix.docs, ix.sa = nil, nil, nil, nil, nil
	return err
}

// Count is a window's count.
type Count struct {
	// Count is how many times the window is in the training stream, each
	// document counted its repetitions; Occurrences counts each document
	// once (positions in the stream).
	Count       int64 `json:"count"`
	Occurrences int64 `json:"occurrences"`
}

// checkQuery refuses a window the index cannot count.
func (ix *Index) checkQuery(q []int32) error {
	if len(q) == 0 {
		return badinput.Errorf("index: an empty window")
	}
	if int64(len(q)) > ix.h.Tokens {
		return badinput.Errorf("index: a window of %d tokens is longer than the corpus (%d tokens)", len(q), ix.h.Tokens)
	}
	if len(q) > ix.h.MaxWindow {
		return badinput.Errorf("index: a window of %d tokens is longer than the index's max_window %d", len(q), ix.h.MaxWindow)
	}
	for i, id := range q {
		if id < 0 || int(id) >= ix.h.Vocab {
			return badinput.Errorf("index: token %d is id %d, outside the vocabulary of %d ids", i, id, ix.h.Vocab)
		}
	}
	return nil
}

// Count counts q's occurrences.
func (ix *Index) Count(q []int32) (Count, error) {
	var c Count
	if err := ix.checkQuery(q); err != nil {
		return c, err
	}
	for _, g := range ix.h.Groups {
		lo, hi := ix.span(q, g)
		c.Occurrences += hi - lo
		c.Count += (hi - lo) * int64(g.Reps)
	}
	return c, nil
}

// CountWindow is Count's Count for scoring many documents: -1 (unknown)
// for a window longer than the index answers, where Count refuses it, and
// 0 for one longer than the whole corpus, which cannot be in it.
func (ix *Index) CountWindow(q []int32) (int64, error) {
	if len(q) > ix.h.MaxWindow {
		return -1, nil
	}
	if int64(len(q)) > ix.h.Tokens {
		return 0, nil
	}
	c, err := ix.Count(q)
	return c.Count, err
}

// span is the range of g's suffixes that start with q.
func (ix *Index) span(q []int32, g Group) (lo, hi int64) {
	n := int(g.End - g.Start)
	base := int(g.Start)
	if ix.s16 != nil {
		lo = int64(sort.Search(n, func(i int) bool { return cmpQuery(ix.s16, ix.sa[base+i], q) >= 0 }))
		hi = lo + int64(sort.Search(n-int(lo), func(i int) bool { return cmpQuery(ix.s16, ix.sa[base+int(lo)+i], q) > 0 }))
	} else {
		lo = int64(sort.Search(n, func(i int) bool { return cmpQuery(ix.s32, ix.sa[base+i], q) >= 0 }))
		hi = lo + int64(sort.Search(n-int(lo), func(i int) bool { return cmpQuery(ix.s32, ix.sa[base+int(lo)+i], q) > 0 }))
	}
	return lo + g.Start, hi + g.Start
}

// cmpQuery compares the first len(q) tokens of the suffix at p with q. A
// separator is larger than any id, so a suffix whose document ends within
// len(q) tokens differs from q there and never reads past its separator.
func cmpQuery[T uint16 | uint32](s []T, p uint32, q []int32) int {
	for k, want := range q {
		t := uint32(s[int(p)+k])
		if t != uint32(want) {
			if t < uint32(want) {
				return -1
			}
			return 1
		}
	}
	return 0
}

// Occurrence is where a window occurs: a document and the offset of the
// window's first token in it.
type Occurrence struct {
	DocID  int64 `json:"doc_id"`
	Offset int64 `json:"offset"`
	Reps   int32 `json:"repetitions"`
}

// Locate lists up to limit (all when limit <= 0) of q's occurrences, by
// doc_id and offset, and the count.
func (ix *Index) Locate(q []int32, limit int) ([]Occurrence, Count, error) {
	var c Count
	if err := ix.checkQuery(q); err != nil {
		return nil, c, err
	}
	var occ []Occurrence
	for _, g := range ix.h.Groups {
		lo, hi := ix.span(q, g)
		c.Occurrences += hi - lo
		c.Count += (hi - lo) * int64(g.Reps)
		for i := lo; i < hi; i++ {
			occ = append(occ, ix.at(int64(ix.sa[i])))
		}
	}
	sort.Slice(occ, func(i, j int) bool {
		if occ[i].DocID != occ[j].DocID {
			return occ[i].DocID < occ[j].DocID
		}
		return occ[i].Offset < occ[j].Offset
	})
	if limit > 0 && len(occ) > limit {
		occ = occ[:limit]
	}
	return occ, c, nil
}

// at is the document and offset of stream position p.
func (ix *Index) at(p int64) Occurrence {
	n := int(ix.h.Docs)
	k := sort.Search(n, func(i int) bool { return ix.docs[i*docFields] > p }) - 1
	d := ix.docs[k*docFields : (k+1)*docFields]
	return Occurrence{DocID: d[1], Offset: p - d[0], Reps: int32(d[2])}
}

// Window returns n tokens of the stream at position p, shorter where its
// document ends (for drawing random windows of the corpus).
func (ix *Index) Window(p int64, n int) []int32 {
	s := sep(ix.h.Width)
	var w []int32
	for k := int64(0); k < int64(n) && p+k < ix.h.Stream; k++ {
		t := ix.tok(p + k)
		if t == s {
			break
		}
		w = append(w, int32(t))
	}
	return w
}
