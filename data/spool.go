package data

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"sync"
)

// spool keeps the build's chunk texts and token ids on disk between
// tokenizing and writing, so that the build holds per document only its
// metadata (id, source, title, offsets, split): memory follows the number
// of documents, not the corpus size. Records are appended as the workers
// finish (any order) and read back by offset. A read error is kept
// (sticky) and returned by err, checked after each phase, so that the
// split code keeps its plain signatures.
type spool struct {
	path string
	f    *os.File
	mu   sync.Mutex
	w    *bufio.Writer
	size int64
	fail error
	buf  []byte // put's encoding of the ids, reused
}

func newSpool(dir string) (*spool, error) {
	f, err := os.CreateTemp(dir, ".build-spool-*")
	if err != nil {
		return nil, fmt.Errorf("data: create build spool in %s: %w", dir, err)
	}
	return &spool{path: f.Name(), f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

// close removes the spool file.
func (s *spool) close() {
	s.f.Close()
	os.Remove(s.path)
}

// put moves c's text and ids to the spool and drops them from memory.
func (s *spool) put(c *candidate) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.off, c.textLen, c.nTokens = s.size, len(c.text), len(c.ids)
	if _, err := s.w.WriteString(c.text); err != nil {
		return fmt.Errorf("data: write build spool %s: %w", s.path, err)
	}
	s.buf = s.buf[:0]
	for _, id := range c.ids {
		s.buf = binary.LittleEndian.AppendUint32(s.buf, uint32(id))
	}
	if _, err := s.w.Write(s.buf); err != nil {
		return fmt.Errorf("data: write build spool %s: %w", s.path, err)
	}
	s.size += int64(len(c.text)) + 4*int64(len(c.ids))
	c.text, c.ids = "", nil
	return nil
}

// flush ends the writing phase: reads may start.
func (s *spool) flush() error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("data: write build spool %s: %w", s.path, err)
	}
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

// text returns c's text: in memory if held, else from the spool.
func (s *spool) text(c *candidate) string {
	if c.text != "" || c.textLen == 0 {
		return c.text
	}
	return string(s.read(c.off, c.textLen))
}

// tokens returns c's ids: in memory if held, else from the spool.
func (s *spool) tokens(c *candidate) []int32 {
	if c.ids != nil || c.nTokens == 0 {
		return c.ids
	}
	b := s.read(c.off+int64(c.textLen), 4*c.nTokens)
	ids := make([]int32, c.nTokens)
	for i := range ids {
		ids[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return ids
}

// err is the first read error, if any.
func (s *spool) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fail
}
