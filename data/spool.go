package data

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sort"
	"sync"

	"github.com/memo-research/memo/internal/atomicfile"
)

// spool keeps the build's chunk titles, texts and token ids on disk between
// tokenizing and writing. Records are appended in input order and read
// back by offset. A read error is kept (sticky) and returned by err,
// checked after each phase, so that the split code keeps plain signatures.
type spool struct {
	path string
	f    *os.File
	mu   sync.Mutex
	w    *bufio.Writer
	size int64
	fail error
	buf  []byte // add's encoding of the ids, reused
	// forget drops the interrupt hook that removes the file.
	forget func()
}

// spoolPrefix begins the names of a build's spool files in the directory
// it builds (the dataset cache's temporary entry): a builder killed
// mid-build leaves them there, for data gc to remove with the entry.
const spoolPrefix = ".build-spool-"

func newSpool(dir string) (*spool, error) {
	f, err := os.CreateTemp(dir, spoolPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("data: create build spool in %s: %w", dir, err)
	}
	s := &spool{path: f.Name(), f: f, w: bufio.NewWriterSize(f, 1<<20)}
	// memo data build exits at once on an interrupt, past the deferred
	// close: with cache_datasets = false each Ctrl-C left a spool (twice
	// the corpus) in the run's data/.
	s.forget = atomicfile.AtInterrupt(func() { os.Remove(s.path) })
	return s, nil
}

// close removes the spool file.
func (s *spool) close() {
	s.forget()
	s.f.Close()
	os.Remove(s.path)
}

// flush ends the writing phase: reads may start.
func (s *spool) flush() error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("data: write build spool %s: %w", s.path, err)
	}
	return nil
}

// record appends a row's record: title, text, ids (4 bytes each,
// little-endian).
func (s *spool) record(title, text string, ids []int32) error {
	s.buf = append(append(s.buf[:0], title...), text...)
	for _, id := range ids {
		s.buf = binary.LittleEndian.AppendUint32(s.buf, uint32(id))
	}
	if _, err := s.w.Write(s.buf); err != nil {
		return fmt.Errorf("data: write build spool %s: %w", s.path, err)
	}
	s.size += int64(len(s.buf))
	return nil
}

func (s *spool) read(off int64, n int) []byte {
	buf := make([]byte, n)
	if n == 0 || s.err() != nil {
		return buf
	}
	if _, err := s.f.ReadAt(buf, off); err != nil {
		s.mu.Lock()
		if s.fail == nil {
			s.fail = fmt.Errorf("data: read build spool %s at %d: %w", s.path, off, err)
		}
		s.mu.Unlock()
	}
	return buf
}

// err is the first read error, if any.
func (s *spool) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fail
}

// Split codes of a docTable row (its flags' low bits), in the order of
// splitNames.
const (
	codeNone uint8 = iota
	codeTarget
	codeControl
	codeValidation
	codeBackground
	codeRejected // refused during the split; no split in the files

	codeMask   = 0x07
	flagFirst  = 0x80 // the row is its source document's first chunk
	flagFailed = 0x40 // the chunk did not round-trip: kept only to number its document's chunks
)

var splitNames = [...]string{codeNone: "", codeTarget: SplitTarget, codeControl: SplitControl,
	codeValidation: SplitValidation, codeBackground: SplitBackground, codeRejected: ""}

// docTable is the build's record of every chunk, in input order, as flat
// arrays: 17 bytes a chunk in memory (an offset, two lengths, a flags
// byte) where a struct with strings and slices took about 210 with its
// title, so that 10 million documents hold 170 MB, not 2 GB. The title,
// text and ids are in the spool; the source is known from the row (each
// source's chunks are contiguous), the document and chunk number from the
// rows' first-chunk flags (every chunk has a row, even one that did not
// round-trip). Rows are appended by one goroutine at a time, in order;
// after the spool is flushed they are only read, apart from the split.
type docTable struct {
	sp      *spool
	off     []int64 // row i is spool bytes [off[i], off[i+1]): title, text, ids (4 bytes each, little-endian)
	textLen []uint32
	nTokens []uint32
	flags   []uint8
	srcName []string // the sources' names, in the order their chunks came
	srcFrom []int    // srcName[k]'s rows start at srcFrom[k]
	// moved holds the spool bytes [start, end) of the rows that
	// data.dedup_tokens rewrote: their new record is appended to the spool
	// (a map, as few rows are), and off keeps the original layout.
	moved map[int32][2]int64
}

func newDocTable(sp *spool) *docTable { return &docTable{sp: sp, off: []int64{sp.size}} }

func (t *docTable) len() int { return len(t.textLen) }

// add appends chunk c (its title, text and ids) as the next row; first
// marks a source document's first chunk, failed one that did not
// round-trip (nothing of it but the title is spooled).
func (t *docTable) add(c *candidate, first, failed bool) error {
	if len(c.text) > math.MaxUint32 || len(c.ids) > math.MaxUint32 || t.len() >= math.MaxInt32 {
		return fmt.Errorf("data: %s %q: a chunk over 4 GiB or more than 2^31 chunks; use data.chunk_tokens", c.source, c.title)
	}
	if n := len(t.srcName); n == 0 || t.srcName[n-1] != c.source {
		t.srcName, t.srcFrom = append(t.srcName, c.source), append(t.srcFrom, t.len())
	}
	text, ids := c.text, c.ids
	if failed {
		text, ids = "", nil
	}
	s := t.sp
	if err := s.record(c.title, text, ids); err != nil {
		return err
	}
	var f uint8
	if first {
		f |= flagFirst
	}
	if failed {
		f |= flagFailed
	}
	t.off = append(t.off, s.size)
	t.textLen = append(t.textLen, uint32(len(text)))
	t.nTokens = append(t.nTokens, uint32(len(ids)))
	t.flags = append(t.flags, f)
	return nil
}

// span is where row i's record is in the spool: [start, end).
func (t *docTable) span(i int32) (start, end int64) {
	if m, ok := t.moved[i]; ok {
		return m[0], m[1]
	}
	return t.off[i], t.off[i+1]
}

// titleLen is the length of row i's title: what its record holds besides
// the text and ids.
func (t *docTable) titleLen(i int32) int64 {
	start, end := t.span(i)
	return end - start - int64(t.textLen[i]) - 4*int64(t.nTokens[i])
}

func (t *docTable) title(i int32) string {
	start, _ := t.span(i)
	return string(t.sp.read(start, int(t.titleLen(i))))
}

func (t *docTable) text(i int32) string {
	start, _ := t.span(i)
	return string(t.sp.read(start+t.titleLen(i), int(t.textLen[i])))
}

// titleText reads row i's title and text at once.
func (t *docTable) titleText(i int32) (title, text string) {
	n := t.titleLen(i)
	start, _ := t.span(i)
	b := string(t.sp.read(start, int(n)+int(t.textLen[i])))
	return b[:n], b[n:]
}

// replace gives row i a new text and ids (data.dedup_tokens cut spans out
// of it), appending its record to the spool; flush before reading it.
func (t *docTable) replace(i int32, text string, ids []int32) error {
	title := t.title(i)
	if err := t.sp.err(); err != nil {
		return err
	}
	s := t.sp
	start := s.size
	if err := s.record(title, text, ids); err != nil {
		return err
	}
	if t.moved == nil {
		t.moved = map[int32][2]int64{}
	}
	t.moved[i] = [2]int64{start, s.size}
	t.textLen[i] = uint32(len(text))
	t.nTokens[i] = uint32(len(ids))
	return nil
}

// textSize is row i's text length in bytes.
func (t *docTable) textSize(i int32) int { return int(t.textLen[i]) }

// size is row i's number of token ids.
func (t *docTable) size(i int32) int { return int(t.nTokens[i]) }

func (t *docTable) tokens(i int32) []int32 {
	n := int(t.nTokens[i])
	_, end := t.span(i)
	b := t.sp.read(end-4*int64(n), 4*n)
	ids := make([]int32, n)
	for k := range ids {
		ids[k] = int32(binary.LittleEndian.Uint32(b[4*k:]))
	}
	return ids
}

func (t *docTable) source(i int32) string {
	k := sort.Search(len(t.srcFrom), func(k int) bool { return t.srcFrom[k] > int(i) }) - 1
	return t.srcName[k]
}

func (t *docTable) failed(i int32) bool { return t.flags[i]&flagFailed != 0 }

func (t *docTable) code(i int32) uint8 { return t.flags[i] & codeMask }

func (t *docTable) split(i int32) string { return splitNames[t.code(i)] }

func (t *docTable) setCode(i int32, c uint8) { t.flags[i] = t.flags[i]&^codeMask | c }

// parentChunk returns the first row of row i's source document (which
// names the document) and i's position among the document's chunks.
func (t *docTable) parentChunk(i int32) (parent int32, chunk int) {
	p := i
	for p > 0 && t.flags[p]&flagFirst == 0 {
		p--
	}
	return p, int(i - p)
}
