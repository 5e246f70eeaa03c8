package tokindex

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/memo-research/memo/data/sufsort"
	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/progress"
)

// Options configure a build.
type Options struct {
	Identity
	// Vocab bounds the ids: 0 <= id < Vocab.
	Vocab int
	// MaxWindow is the longest window the index answers (DefaultMaxWindow
	// when 0): suffixes are sorted on their first MaxWindow tokens.
	MaxWindow int
	// Partition is the most suffixes sorted in memory at once
	// (DefaultPartition when 0): 4 bytes each.
	Partition int
	// Progress, when set, gets the build's progress lines.
	Progress io.Writer
}

// DefaultPartition bounds the positions held at once: 32 Mi suffixes, 128
// MiB. A partition is a run of first tokens of one group; a single first
// token with more suffixes than this gets a partition of its own.
const DefaultPartition = 32 << 20

// Scan feeds a build the corpus's documents: emit for each document once,
// with how many times it is trained on. ids is not kept after emit.
type Scan func(emit func(docID int64, reps int32, ids []int32) error) error

// Stats say what a build made.
type Stats struct {
	Docs, Tokens, Weighted int64
	Partitions             int
	LargestPartition       int
	Seconds                float64
}

// Build writes the index of the documents scan gives to path (through a
// temporary file renamed into place).
//
// Memory: the stream is written to the file as it is read and then mapped
// (2 or 4 bytes a token, page cache the kernel may evict), plus 24 bytes a
// document, a histogram of vocab × groups counts, and one partition of at
// most max(Partition, the largest single-first-token bucket) positions of
// 4 bytes. The suffix array is written a partition at a time, in order:
// partitions are ranges of (group, first token), so no merge is needed.
func Build(path string, opt Options, scan Scan) (Stats, error) {
	start := time.Now()
	var st Stats
	if opt.Vocab < 1 {
		return st, fmt.Errorf("index build: vocabulary %d", opt.Vocab)
	}
	if opt.MaxWindow == 0 {
		opt.MaxWindow = DefaultMaxWindow
	}
	if opt.Partition == 0 {
		opt.Partition = DefaultPartition
	}
	width := sufsort.Width(opt.Vocab)
	b := &builder{opt: opt, scan: scan, width: width, hist: map[int32][]uint32{}}
	err := atomicfile.Create(path, func(f *os.File) error {
		return b.write(f)
	})
	if err != nil {
		return st, err
	}
	st = Stats{Docs: b.h.Docs, Tokens: b.h.Tokens, Weighted: b.h.Weighted, Partitions: b.partitions,
		LargestPartition: b.largest, Seconds: time.Since(start).Seconds()}
	return st, nil
}

type builder struct {
	opt   Options
	scan  Scan
	width int
	h     Header
	// docs: docFields int64s per document.
	docs []int64
	// hist[reps][t]: suffixes starting with t in documents trained reps times.
	hist map[int32][]uint32

	partitions, largest int
}

// countWriter is a buffered writer over the file that also sums the CRC.
type countWriter struct {
	w   *bufio.Writer
	crc hash.Hash32
	n   int64
	buf [8]byte
}

func (c *countWriter) Write(p []byte) (int, error) {
	c.crc.Write(p)
	c.n += int64(len(p))
	return c.w.Write(p)
}

func (c *countWriter) u16(v uint16) error {
	binary.LittleEndian.PutUint16(c.buf[:], v)
	_, err := c.Write(c.buf[:2])
	return err
}

func (c *countWriter) u32(v uint32) error {
	binary.LittleEndian.PutUint32(c.buf[:], v)
	_, err := c.Write(c.buf[:4])
	return err
}

func (c *countWriter) u64(v uint64) error {
	binary.LittleEndian.PutUint64(c.buf[:], v)
	_, err := c.Write(c.buf[:8])
	return err
}

func (b *builder) write(f *os.File) error {
	if _, err := f.Seek(bodyOff, io.SeekStart); err != nil {
		return fmt.Errorf("index build: %w", err)
	}
	cw := &countWriter{w: bufio.NewWriterSize(f, 1<<20), crc: crc32.New(castagnoli)}
	if err := b.writeStream(cw); err != nil {
		return err
	}
	h := &b.h
	if h.Tokens == 0 {
		return badinput.Errorf("index build: the corpus has no tokens")
	}
	// The document table, 8-aligned after the stream.
	for cw.n%8 != 0 {
		if _, err := cw.Write([]byte{0}); err != nil {
			return fmt.Errorf("index build: %w", err)
		}
	}
	for _, v := range b.docs {
		if err := cw.u64(uint64(v)); err != nil {
			return fmt.Errorf("index build: %w", err)
		}
	}
	if err := cw.w.Flush(); err != nil {
		return fmt.Errorf("index build: %w", err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), bodyOff, int(h.Stream)*b.width, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("index build: mmap the stream: %w", err)
	}
	defer syscall.Munmap(mem)
	if b.width == 2 {
		err = writeSA(b, cw, sufsort.View[uint16](mem, h.Stream))
	} else {
		err = writeSA(b, cw, sufsort.View[uint32](mem, h.Stream))
	}
	if err != nil {
		return err
	}
	if err := cw.w.Flush(); err != nil {
		return fmt.Errorf("index build: %w", err)
	}
	h.BodyCRC = cw.crc.Sum32()
	if _, _, end := h.sections(); end != bodyOff+cw.n {
		return fmt.Errorf("index build: wrote %d body bytes, want %d", cw.n, end-bodyOff)
	}
	raw, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("index build: %w", err)
	}
	hOff := bodyOff + cw.n
	if _, err := f.WriteAt(raw, hOff); err != nil {
		return fmt.Errorf("index build: %w", err)
	}
	pre := make([]byte, bodyOff)
	copy(pre, magic)
	binary.LittleEndian.PutUint32(pre[8:], version)
	binary.LittleEndian.PutUint64(pre[12:], uint64(hOff))
	binary.LittleEndian.PutUint32(pre[20:], uint32(len(raw)))
	binary.LittleEndian.PutUint32(pre[24:], crc32.Checksum(raw, castagnoli))
	if _, err := f.WriteAt(pre, 0); err != nil {
		return fmt.Errorf("index build: %w", err)
	}
	return nil
}

// writeStream writes each document's ids and a separator, and counts the
// first-token histogram of each group.
func (b *builder) writeStream(cw *countWriter) error {
	h := &b.h
	h.Identity, h.Vocab, h.Width, h.MaxWindow = b.opt.Identity, b.opt.Vocab, b.width, b.opt.MaxWindow
	s := sep(b.width)
	var bar *progress.Bar
	if b.opt.Progress != nil {
		bar = progress.NewTo(b.opt.Progress, false, "index: read documents", 0, 10*time.Second)
	}
	err := b.scan(func(id int64, reps int32, ids []int32) error {
		if reps < 1 {
			return badinput.Errorf("index build: doc_id %d has repetitions %d", id, reps)
		}
		if h.Stream+int64(len(ids))+1 > maxStream {
			return badinput.Errorf("index build: more than %d tokens; the index holds at most that many", int64(maxStream))
		}
		hist := b.hist[reps]
		if hist == nil {
			hist = make([]uint32, b.opt.Vocab)
			b.hist[reps] = hist
		}
		b.docs = append(b.docs, h.Stream, id, int64(reps))
		for k, t := range ids {
			if t < 0 || int(t) >= b.opt.Vocab {
				return badinput.Errorf("index build: doc_id %d: token %d is id %d, outside the vocabulary of %d ids", id, k, t, b.opt.Vocab)
			}
			hist[t]++
			var err error
			if b.width == 2 {
				err = cw.u16(uint16(t))
			} else {
				err = cw.u32(uint32(t))
			}
			if err != nil {
				return fmt.Errorf("index build: %w", err)
			}
		}
		var err error
		if b.width == 2 {
			err = cw.u16(uint16(s))
		} else {
			err = cw.u32(s)
		}
		if err != nil {
			return fmt.Errorf("index build: %w", err)
		}
		h.Docs++
		h.Tokens += int64(len(ids))
		h.Weighted += int64(len(ids)) * int64(reps)
		h.Stream += int64(len(ids)) + 1
		if bar != nil && h.Docs%4096 == 0 {
			bar.Update(int(h.Docs), fmt.Sprintf("%d tokens", h.Tokens))
		}
		return nil
	})
	if bar != nil {
		bar.Update(int(h.Docs), fmt.Sprintf("%d tokens", h.Tokens))
		bar.Done()
	}
	return err
}

// partition is the suffixes of group reps whose first token is in [lo, hi).
type partition struct {
	reps   int32
	lo, hi int
	n      int
}

// plan cuts each group's first tokens into partitions of at most max
// suffixes (or one token's, when that is more).
func (b *builder) plan() []partition {
	reps := make([]int32, 0, len(b.hist))
	for r := range b.hist {
		reps = append(reps, r)
	}
	slices.Sort(reps)
	var parts []partition
	var at int64
	for _, r := range reps {
		hist := b.hist[r]
		var n int64
		for t := range hist {
			n += int64(hist[t])
		}
		b.h.Groups = append(b.h.Groups, Group{Reps: r, Start: at, End: at + n})
		at += n
		p := partition{reps: r}
		for t, c := range hist {
			if p.n > 0 && p.n+int(c) > b.opt.Partition {
				p.hi = t
				parts = append(parts, p)
				p = partition{reps: r, lo: t}
			}
			p.n += int(c)
		}
		p.hi = len(hist)
		if p.n > 0 {
			parts = append(parts, p)
		}
	}
	return parts
}

// writeSA sorts and writes the suffix array a partition at a time.
func writeSA[T sufsort.Token](b *builder, cw *countWriter, s []T) error {
	parts := b.plan()
	b.partitions = len(parts)
	var bar *progress.Bar
	if b.opt.Progress != nil {
		bar = progress.NewTo(b.opt.Progress, false, "index: sort suffixes", int(b.h.Tokens), 10*time.Second)
	}
	var buf []uint32
	var done int
	for _, p := range parts {
		b.largest = max(b.largest, p.n)
		if cap(buf) < p.n {
			buf = make([]uint32, p.n)
		}
		buf = buf[:p.n]
		bounds := sufsort.Starts(b.hist[p.reps], p.lo, p.hi)
		next := slices.Clone(bounds)
		for k := 0; k < len(b.docs); k += docFields {
			if int32(b.docs[k+2]) != p.reps {
				continue
			}
			start := b.docs[k]
			end := b.h.Stream - 1
			if k+docFields < len(b.docs) {
				end = b.docs[k+docFields] - 1
			}
			sufsort.Collect(s, buf, next, p.lo, p.hi, start, end)
		}
		sufsort.SortBuckets(s, buf, bounds, b.opt.MaxWindow, T(sufsort.Sep(b.width)))
		for _, v := range buf {
			if err := cw.u32(v); err != nil {
				return fmt.Errorf("index build: %w", err)
			}
		}
		done += p.n
		if bar != nil {
			bar.Update(done, "")
		}
	}
	if bar != nil {
		bar.Done()
	}
	return nil
}
