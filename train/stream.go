package train

import "fmt"

// stream is the endless training stream: epoch e is
// src.TrainRows(block, seed+e), so any global row index maps to a row
// without state beyond the index (which is what makes resume exact).
type stream struct {
	src      Source
	block    int
	seed     int64
	perEpoch int
	epoch    int64
	rows     [][]int32
}

func newStream(src Source, block int, seed int64) (*stream, error) {
	s := &stream{src: src, block: block, seed: seed, epoch: -1}
	if err := s.load(0); err != nil {
		return nil, err
	}
	if len(s.rows) == 0 {
		return nil, fmt.Errorf("training stream is empty: the data stage produced no training rows")
	}
	s.perEpoch = len(s.rows)
	return s, nil
}

func (s *stream) load(epoch int64) error {
	if epoch == s.epoch {
		return nil
	}
	rows, err := s.src.TrainRows(s.block, s.seed+epoch)
	if err != nil {
		return fmt.Errorf("training rows, epoch %d: %w", epoch, err)
	}
	if s.perEpoch != 0 && len(rows) != s.perEpoch {
		return fmt.Errorf("training rows, epoch %d: %d rows, epoch 0 had %d", epoch, len(rows), s.perEpoch)
	}
	for i, r := range rows {
		if len(r) != s.block+1 {
			return fmt.Errorf("training row %d of epoch %d has %d ids, want block+1 = %d", i, epoch, len(r), s.block+1)
		}
	}
	s.epoch, s.rows = epoch, rows
	return nil
}

// take returns n rows starting at global index pos.
func (s *stream) take(pos int64, n int) ([][]int32, error) {
	out := make([][]int32, 0, n)
	for i := int64(0); i < int64(n); i++ {
		g := pos + i
		if err := s.load(g / int64(s.perEpoch)); err != nil {
			return nil, err
		}
		out = append(out, s.rows[g%int64(s.perEpoch)])
	}
	return out, nil
}
