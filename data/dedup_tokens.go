package data

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"syscall"
	"unicode/utf8"

	"github.com/memo-research/memo/data/sufsort"
)

// Exact-substring deduplication (data.dedup_tokens = L; Lee et al. 2022,
// "Deduplicating Training Data Makes Language Models Better", arXiv
// 2107.06499): every window of L tokens that occurs earlier in the corpus
// (in input order, within one document: no window spans two) is removed,
// so every repeated span of L or more tokens is kept at its first
// occurrence only. Lee et al. find the repeats with a suffix array over
// the token stream; so does this, a partition of first tokens at a time
// (data/sufsort, as data/tokindex builds its index): the suffixes of one
// partition are sorted on their first L tokens, then by position, so the
// equal windows are adjacent and the first of a run is the first
// occurrence.

// span is a run [from, to) of a document's tokens.
type span struct{ from, to int }

// dedupPartition bounds the suffixes a pass sorts at once: 4 bytes each
// (plus the sorting cores' 16-byte keys of the bucket they sort).
const dedupPartition = 32 << 20

// repeatedSpans runs one pass of the dedup over the n documents ids
// gives (in stream order; ids(k) is not kept after it returns, and is
// called twice per document) and calls cut, in document order, with each
// document that holds a window of L tokens seen earlier and the merged
// spans those windows cover. The stream is written to a temporary file in
// dir and mapped: memory is that page cache, 8 bytes a document, a bit a
// token, a histogram of the vocabulary and one partition of at most
// max(partition, the largest first-token bucket) positions.
func repeatedSpans(dir string, n, vocab, L, partition int, ids func(k int) ([]int32, error), cut func(k int, spans []span) error) error {
	if L < 1 {
		return fmt.Errorf("data: dedup window %d", L)
	}
	width := sufsort.Width(vocab)
	f, err := os.CreateTemp(dir, spoolPrefix+"dedup-*")
	if err != nil {
		return fmt.Errorf("data: dedup stream: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	// starts[k]: document k's first position; starts[n]: the stream's end.
	starts := make([]int64, n+1)
	hist := make([]uint32, vocab)
	w := bufio.NewWriterSize(f, 1<<20)
	var pos int64
	var buf [4]byte
	put := func(t uint32) error {
		var err error
		if width == 2 {
			binary.LittleEndian.PutUint16(buf[:], uint16(t))
			_, err = w.Write(buf[:2])
		} else {
			binary.LittleEndian.PutUint32(buf[:], t)
			_, err = w.Write(buf[:4])
		}
		pos++
		return err
	}
	for k := 0; k < n; k++ {
		starts[k] = pos
		doc, err := ids(k)
		if err != nil {
			return err
		}
		if pos+int64(len(doc))+1 > 1<<32-1 {
			return fmt.Errorf("data: data.dedup_tokens: more than 2^32 tokens")
		}
		for i, t := range doc {
			if t < 0 || int(t) >= vocab {
				return fmt.Errorf("data: dedup: document %d token %d is id %d, outside the vocabulary of %d", k, i, t, vocab)
			}
			// Only positions whose window fits in the document are suffixes.
			if i+L <= len(doc) {
				hist[t]++
			}
			if err := put(uint32(t)); err != nil {
				return fmt.Errorf("data: dedup stream: %w", err)
			}
		}
		if err := put(sufsort.Sep(width)); err != nil {
			return fmt.Errorf("data: dedup stream: %w", err)
		}
	}
	starts[n] = pos
	if err := w.Flush(); err != nil {
		return fmt.Errorf("data: dedup stream: %w", err)
	}
	if pos == 0 {
		return nil
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(pos)*width, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("data: dedup: map the stream: %w", err)
	}
	defer syscall.Munmap(mem)
	marks := make([]uint64, (pos+63)/64)
	if width == 2 {
		markRepeats(sufsort.View[uint16](mem, pos), starts, hist, L, partition, uint16(sufsort.Sep(2)), marks)
	} else {
		markRepeats(sufsort.View[uint32](mem, pos), starts, hist, L, partition, sufsort.Sep(4), marks)
	}
	return cutMarked(starts, L, marks, cut)
}

// markRepeats sets in marks the start of every window of L tokens that
// equals one starting earlier.
func markRepeats[T sufsort.Token](s []T, starts []int64, hist []uint32, L, partition int, sepID T, marks []uint64) {
	var buf []uint32
	for lo := 0; lo < len(hist); {
		hi, size := lo, 0
		for hi < len(hist) && (hi == lo || size+int(hist[hi]) <= partition) {
			size += int(hist[hi])
			hi++
		}
		bounds := sufsort.Starts(hist, lo, hi)
		next := slices.Clone(bounds)
		buf = slices.Grow(buf[:0], size)[:size]
		for k := 0; k+1 < len(starts); k++ {
			end := starts[k+1] - 1 // the separator
			if end-starts[k] >= int64(L) {
				sufsort.Collect(s, buf, next, lo, hi, starts[k], end-int64(L)+1)
			}
		}
		sufsort.SortBuckets(s, buf, bounds, L, sepID)
		for b := 0; b+1 < len(bounds); b++ {
			for i := bounds[b] + 1; i < bounds[b+1]; i++ {
				if sameWindow(s, buf[i-1], buf[i], L) {
					marks[buf[i]/64] |= 1 << (buf[i] % 64)
				}
			}
		}
		lo = hi
	}
}

// sameWindow says whether the windows of L tokens at a and b (both within
// their documents, first tokens equal) are equal.
func sameWindow[T sufsort.Token](s []T, a, b uint32, L int) bool {
	for k := 1; k < L; k++ {
		if s[int(a)+k] != s[int(b)+k] {
			return false
		}
	}
	return true
}

// cutMarked turns the marked window starts into each document's merged
// spans, in document order.
func cutMarked(starts []int64, L int, marks []uint64, cut func(k int, spans []span) error) error {
	var spans []span
	for k := 0; k+1 < len(starts); k++ {
		spans = spans[:0]
		from, end := starts[k], starts[k+1]-1
		for p := from; p < end; p++ {
			if marks[p/64]&(1<<(p%64)) == 0 {
				continue
			}
			o := int(p - from)
			if n := len(spans); n > 0 && o <= spans[n-1].to {
				spans[n-1].to = max(spans[n-1].to, o+L)
			} else {
				spans = append(spans, span{o, o + L})
			}
		}
		if len(spans) == 0 {
			continue
		}
		if err := cut(k, spans); err != nil {
			return err
		}
	}
	return nil
}

// keepOutside returns ids without the spans (sorted, disjoint).
func keepOutside(ids []int32, spans []span) []int32 {
	out := make([]int32, 0, len(ids))
	at := 0
	for _, sp := range spans {
		out = append(out, ids[at:sp.from]...)
		at = sp.to
	}
	return append(out, ids[at:]...)
}

// wideToChars widens spans (sorted, disjoint) so that every piece kept
// between them decodes to whole UTF-8 characters: a byte-level tokenizer
// may split a character over two ids, and a cut between them would leave
// half of it. valid says whether ids decode to text that starts at a
// character and is whole UTF-8; the document as a whole decodes to
// valid UTF-8, so a piece can be broken only at its ends.
func wideToChars(ids []int32, spans []span, valid func(ids []int32) (startOK, allOK bool)) []span {
	if len(spans) == 0 {
		return spans
	}
	// The kept pieces, widened inward, then the spans as their complement.
	var pieces []span
	at := 0
	for _, sp := range spans {
		pieces = append(pieces, span{at, sp.from})
		at = sp.to
	}
	pieces = append(pieces, span{at, len(ids)})
	for i := range pieces {
		p := &pieces[i]
		for p.from < p.to {
			if ok, _ := valid(ids[p.from:p.to]); ok || p.from == 0 {
				break
			}
			p.from++
		}
		for p.from < p.to {
			if _, ok := valid(ids[p.from:p.to]); ok || p.to == len(ids) {
				break
			}
			p.to--
		}
	}
	var out []span
	at = 0
	for _, p := range pieces {
		if p.from >= p.to {
			continue
		}
		if p.from > at {
			out = append(out, span{at, p.from})
		}
		at = p.to
	}
	if at < len(ids) {
		out = append(out, span{at, len(ids)})
	}
	return out
}

// DedupTokensReport is what data.dedup_tokens removed, in report.json.
type DedupTokensReport struct {
	Window int `json:"window"` // L
	// Spans and Tokens are the spans cut and the tokens they held, over
	// all passes (a cut joins the tokens either side of it, which can make
	// a window that repeats an earlier one: the next pass cuts it).
	Spans  int64 `json:"spans"`
	Tokens int64 `json:"tokens"`
	// Widened is the part of Tokens cut only to keep whole characters
	// (wideToChars), not repeated.
	Widened   int64 `json:"widened_tokens"`
	Before    int64 `json:"tokens_before"`
	Documents int   `json:"documents_cut"`
	Passes    int   `json:"passes"`
}

// dedupTokens cuts every repeated window of L tokens out of the kept rows
// beyond its first occurrence, pass after pass until none repeats, and
// rewrites the rows it cut (their text is the decoded ids).
func dedupTokens(dir string, tab *docTable, kept []int32, tok *Tokenizer, L, partition int) (*DedupTokensReport, error) {
	rep := &DedupTokensReport{Window: L}
	for _, i := range kept {
		rep.Before += int64(tab.size(i))
	}
	valid := func(ids []int32) (bool, bool) {
		text := tok.Decode(ids)
		return text == "" || utf8.RuneStart(text[0]), utf8.ValidString(text)
	}
	cutRows := map[int32]bool{}
	for {
		rep.Passes++
		cuts := 0
		err := repeatedSpans(dir, len(kept), tok.VocabSize(), L, partition, func(k int) ([]int32, error) {
			ids := tab.tokens(kept[k])
			return ids, tab.sp.err()
		}, func(k int, spans []span) error {
			i := kept[k]
			ids := tab.tokens(i)
			repeated := spanTokens(spans)
			spans = wideToChars(ids, spans, valid)
			out := keepOutside(ids, spans)
			rep.Tokens += spanTokens(spans)
			rep.Widened += spanTokens(spans) - repeated
			rep.Spans += int64(len(spans))
			cuts++
			cutRows[i] = true
			return tab.replace(i, tok.Decode(out), out)
		})
		if err != nil {
			return nil, err
		}
		if err := tab.sp.flush(); err != nil {
			return nil, err
		}
		slog.Info("data: token dedup pass", "pass", rep.Passes, "documents_cut", cuts, "tokens_removed", rep.Tokens)
		if cuts == 0 {
			break
		}
	}
	rep.Documents = len(cutRows)
	return rep, nil
}

// spanTokens is the tokens the spans hold.
func spanTokens(spans []span) int64 {
	var n int64
	for _, sp := range spans {
		n += int64(sp.to - sp.from)
	}
	return n
}

// dedupKept runs data.dedup_tokens over the kept rows, records what it
// removed in rep and returns the rows still long enough for
// data.min_tokens (the others rejected by name).
func dedupKept(dir string, tab *docTable, kept []int32, tok *Tokenizer, cfg Config, rep *Report, reject func(Rejected, string)) ([]int32, error) {
	dr, err := dedupTokens(dir, tab, kept, tok, cfg.DedupTokens, dedupPartition)
	if err != nil {
		return nil, err
	}
	rep.DedupTokens = dr
	slog.Info("data: token dedup", "window", dr.Window, "passes", dr.Passes, "documents_cut", dr.Documents,
		"spans", dr.Spans, "tokens_removed", dr.Tokens, "of", dr.Before, "widened", dr.Widened)
	out := kept[:0]
	for _, i := range kept {
		if n := tab.size(i); n < cfg.MinTokens || n == 0 {
			reject(Rejected{Source: tab.source(i), Title: tab.title(i), Reason: fmt.Sprintf("too short after data.dedup_tokens: %d tokens < data.min_tokens = %d", n, cfg.MinTokens)}, "too short")
			continue
		}
		out = append(out, i)
	}
	return out, nil
}

// String is the report in a line, for data ls and data inspect.
func (r *DedupTokensReport) String() string {
	return fmt.Sprintf("data.dedup_tokens = %d removed %d of %d tokens (%.2f%%) in %d spans from %d documents, %d passes",
		r.Window, r.Tokens, r.Before, 100*float64(r.Tokens)/float64(max(r.Before, 1)), r.Spans, r.Documents, r.Passes)
}
