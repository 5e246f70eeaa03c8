package train

import "fmt"

// EpochSource is a Source whose epochs can also be read a row at a time
// (experiments adapts data.Dataset.Stream to it): the trainer then holds
// an epoch's index and the documents' tokens once, never the epoch's rows.
// Epoch(block, seed) must hold the rows of TrainRows(block, seed).
type EpochSource interface {
	Source
	Epoch(block int, seed int64) (Epoch, error)
}

// Epoch is one epoch of the training stream: Row(i, dst) writes row i
// (block+1 ids) into dst.
type Epoch interface {
	Len() int
	Row(i int, dst []int32) error
}

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
	lazy     Epoch // instead of rows, when src is an EpochSource
}

func newStream(src Source, block int, seed int64) (*stream, error) {
	s := &stream{src: src, block: block, seed: seed, epoch: -1}
	if err := s.load(0); err != nil {
		return nil, err
	}
	n := len(s.rows)
	if s.lazy != nil {
		n = s.lazy.Len()
	}
	if n == 0 {
		return nil, fmt.Errorf("training stream is empty: the data stage produced no training rows")
	}
	s.perEpoch = n
	return s, nil
}

func (s *stream) load(epoch int64) error {
	if epoch == s.epoch {
		return nil
	}
	if es, ok := s.src.(EpochSource); ok {
		ep, err := es.Epoch(s.block, s.seed+epoch)
		if err != nil {
			return fmt.Errorf("training rows, epoch %d: %w", epoch, err)
		}
		if s.perEpoch != 0 && ep.Len() != s.perEpoch {
			return fmt.Errorf("training rows, epoch %d: %d rows, epoch 0 had %d", epoch, ep.Len(), s.perEpoch)
		}
		s.epoch, s.lazy = epoch, ep
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
		idx := int(g % int64(s.perEpoch))
		if s.lazy == nil {
			out = append(out, s.rows[idx])
			continue
		}
		row := make([]int32, s.block+1)
		if err := s.lazy.Row(idx, row); err != nil {
			return nil, fmt.Errorf("epoch %d: %w", s.epoch, err)
		}
		out = append(out, row)
	}
	return out, nil
}
