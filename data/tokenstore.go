package data

import (
	"encoding/binary"
	"fmt"
	"os"
)

// tokenStore holds a flat array of token ids: put writes ids at position
// at, get reads len(dst) ids from position at.
type tokenStore interface {
	put(at int64, ids []int32) error
	get(dst []int32, at int64) error
}

// newTokenStore holds n ids in memory (uint16 unless wide) when they take
// at most streamMemBytes, else in an unlinked temporary file.
func newTokenStore(n int64, wide bool) (tokenStore, error) {
	width := int64(2)
	if wide {
		width = 4
	}
	if n*width <= streamMemBytes {
		if wide {
			return memStore32(make([]int32, n)), nil
		}
		return memStore16(make([]uint16, n)), nil
	}
	f, err := os.CreateTemp("", "memo-stream-*.tokens")
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	// Unlinked at once: the file lives while the store is open, and no
	// leftover outlives the process.
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("token store: %w", err)
	}
	return &fileStore{f: f, width: width}, nil
}

type memStore16 []uint16

func (m memStore16) put(at int64, ids []int32) error {
	dst := m[at : at+int64(len(ids))]
	for i, v := range ids {
		dst[i] = uint16(v) // ScanTokens checked 0 <= v < vocab <= 65,536
	}
	return nil
}

func (m memStore16) get(dst []int32, at int64) error {
	for i, v := range m[at : at+int64(len(dst))] {
		dst[i] = int32(v)
	}
	return nil
}

type memStore32 []int32

func (m memStore32) put(at int64, ids []int32) error { copy(m[at:], ids); return nil }

func (m memStore32) get(dst []int32, at int64) error { copy(dst, m[at:at+int64(len(dst))]); return nil }

// fileStore keeps ids little-endian, width bytes each, in a file.
type fileStore struct {
	f     *os.File
	width int64
}

func (s *fileStore) put(at int64, ids []int32) error {
	buf := make([]byte, int64(len(ids))*s.width)
	for i, v := range ids {
		if s.width == 2 {
			binary.LittleEndian.PutUint16(buf[2*i:], uint16(v))
		} else {
			binary.LittleEndian.PutUint32(buf[4*i:], uint32(v))
		}
	}
	if _, err := s.f.WriteAt(buf, at*s.width); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	return nil
}

func (s *fileStore) get(dst []int32, at int64) error {
	buf := make([]byte, int64(len(dst))*s.width)
	if _, err := s.f.ReadAt(buf, at*s.width); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	for i := range dst {
		if s.width == 2 {
			dst[i] = int32(binary.LittleEndian.Uint16(buf[2*i:]))
		} else {
			dst[i] = int32(binary.LittleEndian.Uint32(buf[4*i:]))
		}
	}
	return nil
}
