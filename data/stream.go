package data

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/memo-research/memo/internal/runfiles"
)

// Stream is one epoch of the training stream read a row at a time: Row(i)
// is TrainRows(block, seed)[i], the same rows in the same order, but the
// rows are never all made. It holds one int32 per stream unit (a
// document's repetition or pass) and reads tokens from the dataset's
// training documents (trainDocs: in memory as uint16 when the vocabulary
// fits, or in an unlinked temporary file when they exceed streamMemBytes),
// never repetitions × tokens padded to rows nor docs.arrow's texts. Row is
// a pure function of the index, so a run resumed at any row reads exactly
// the rows the uninterrupted run would have, and a rank can read only its
// own.
type Stream struct {
	block  int
	eos    int32
	packed bool
	docs   *trainDocs
	units  []int32 // document index of each unit, in stream order
	starts []int64 // padded: first row of each unit; packed: first stream token
	rows   int
}

// trainDocs are the target and background documents by doc_id: their
// repetitions and their tokens, one after another.
type trainDocs struct {
	background  []bool
	repetitions []int32
	off         []int64 // document k's tokens are [off[k], off[k+1])
	store       tokenStore
}

// streamMemBytes is the most token bytes trainDocs keeps in memory; more
// go to a temporary file read a row at a time (the page cache keeps what
// fits), so that the stream's memory stays bounded by its index.
var streamMemBytes int64 = 256 << 20

// Stream returns the epoch of the training stream TrainRows(block, seed)
// makes, read lazily.
func (d *Dataset) Stream(block int, seed int64) (*Stream, error) {
	if block < 1 {
		return nil, fmt.Errorf("train rows: block = %d: must be >= 1", block)
	}
	s := &Stream{block: block, eos: d.report.EOS, packed: d.report.Layout == LayoutPacked}
	if s.packed && s.eos < 0 {
		return nil, fmt.Errorf("layout packed needs an EOS token; tokenizer %s has none", d.report.Tokenizer)
	}
	d.trainOnce.Do(func() { d.train, d.trainErr = d.loadTrainDocs() })
	if d.trainErr != nil {
		return nil, d.trainErr
	}
	s.docs = d.train
	var pretrain []int32
	for k, reps := range s.docs.repetitions {
		for r := int32(0); r < reps; r++ {
			s.units = append(s.units, int32(k))
		}
		if s.docs.background[k] {
			for r := 0; r < d.report.Config.PretrainPasses; r++ {
				pretrain = append(pretrain, int32(k))
			}
		}
	}
	// The same generators and swaps as TrainRows, on document indices.
	rng := newSplitMix(uint64(seed) ^ 0x7261696e726f7773)
	shuffle(rng, len(s.units), func(i, j int) { s.units[i], s.units[j] = s.units[j], s.units[i] })
	if len(pretrain) > 0 {
		prng := newSplitMix(uint64(seed) ^ 0x7072657472616e21)
		shuffle(prng, len(pretrain), func(i, j int) { pretrain[i], pretrain[j] = pretrain[j], pretrain[i] })
		s.units = append(pretrain, s.units...)
	}
	s.index()
	return s, nil
}

// loadTrainDocs reads which documents are trained on (docs.arrow without
// its texts) and their tokens.
func (d *Dataset) loadTrainDocs() (*trainDocs, error) {
	type meta struct {
		id          int64
		background  bool
		repetitions int32
	}
	var train []meta
	err := scanArrow(filepath.Join(d.dir, "docs.arrow"), runfiles.DocsSchema, func(rec arrow.Record) error {
		ids := rec.Column(0).(*array.Int64)
		split := rec.Column(5).(*array.String)
		reps := rec.Column(6).(*array.Int32)
		for i := 0; i < int(rec.NumRows()); i++ {
			sp := split.Value(i)
			if ok, r := d.trainedAs(ids.Value(i), sp, reps.Value(i)); ok {
				train = append(train, meta{ids.Value(i), sp == SplitBackground, r})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// TrainRows walks documents by doc_id.
	sort.Slice(train, func(i, j int) bool { return train[i].id < train[j].id })
	td := &trainDocs{background: make([]bool, len(train)), repetitions: make([]int32, len(train))}
	index := make(map[int64]int, len(train))
	for k, m := range train {
		if _, dup := index[m.id]; dup {
			return nil, fmt.Errorf("read %s: doc_id %d appears twice; the file is corrupt, rebuild it with `memo data build`", d.dir, m.id)
		}
		index[m.id] = k
		td.background[k], td.repetitions[k] = m.background, m.repetitions
	}
	if err := td.loadTokens(d, index); err != nil {
		return nil, err
	}
	return td, nil
}

// loadTokens reads the training documents' tokens (index maps doc_id to
// position) into the token store.
func (td *trainDocs) loadTokens(d *Dataset, index map[int64]int) error {
	n := len(td.repetitions)
	lens := make([]int64, n)
	found := make([]bool, n)
	var total int64
	err := d.ScanTokens(func(id int64, ids []int32) error {
		if k, ok := index[id]; ok {
			lens[k], found[k] = int64(len(ids)), true
			total += int64(len(ids))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for k, f := range found {
		if !f {
			return fmt.Errorf("read %s: a training document (position %d by doc_id) has no row in tokens.arrow", d.dir, k)
		}
	}
	td.off = make([]int64, n+1)
	for k, l := range lens {
		td.off[k+1] = td.off[k] + l
	}
	wide := d.report.VocabSize <= 0 || d.report.VocabSize > 1<<16
	st, err := newTokenStore(total, wide)
	if err != nil {
		return fmt.Errorf("read %s: %w", d.dir, err)
	}
	td.store = st
	return d.ScanTokens(func(id int64, ids []int32) error {
		if k, ok := index[id]; ok {
			return st.put(td.off[k], ids)
		}
		return nil
	})
}

// index computes each unit's first row (padded) or first stream token
// (packed), and the row count.
func (s *Stream) index() {
	s.starts = make([]int64, len(s.units)+1)
	off := s.docs.off
	for u, k := range s.units {
		l := off[k+1] - off[k]
		if s.packed {
			s.starts[u+1] = s.starts[u] + l + 1 // the EOS after it
		} else {
			s.starts[u+1] = s.starts[u] + paddedRowCount(l, s.block)
		}
	}
	total := s.starts[len(s.units)]
	if !s.packed {
		s.rows = int(total)
		return
	}
	// packRows cuts every block tokens while a target remains.
	if total > 1 {
		s.rows = int((total - 1 + int64(s.block) - 1) / int64(s.block))
	}
}

// paddedRowCount is how many rows padRows makes of a document of l
// tokens: one, and one more for every block targets past the first row's.
func paddedRowCount(l int64, block int) int64 {
	if l <= int64(block)+1 {
		return 1
	}
	return (l - 1 + int64(block) - 1) / int64(block)
}

// Len is the number of rows in the epoch.
func (s *Stream) Len() int { return s.rows }

// Row writes row i (block+1 ids, PadID past the end of the data) into dst,
// which must hold block+1 ids.
func (s *Stream) Row(i int, dst []int32) error {
	if i < 0 || i >= s.rows {
		return fmt.Errorf("training row %d: the epoch has %d rows", i, s.rows)
	}
	if len(dst) != s.block+1 {
		return fmt.Errorf("training row %d: destination holds %d ids, want block+1 = %d", i, len(dst), s.block+1)
	}
	for j := range dst {
		dst[j] = PadID
	}
	if !s.packed {
		// The unit whose rows include i, and the row within it.
		u := sort.Search(len(s.units), func(u int) bool { return s.starts[u+1] > int64(i) })
		from := (int64(i) - s.starts[u]) * int64(s.block)
		k := s.units[u]
		l := s.docs.off[k+1] - s.docs.off[k]
		return s.copyTokens(dst, k, from, min(from+int64(s.block)+1, l))
	}
	pos := int64(i) * int64(s.block)
	end := min(pos+int64(s.block)+1, s.starts[len(s.units)])
	u := sort.Search(len(s.units), func(u int) bool { return s.starts[u+1] > pos })
	for out := 0; pos < end; u++ {
		k := s.units[u]
		l := s.docs.off[k+1] - s.docs.off[k]
		q := pos - s.starts[u]
		n := min(l-q, end-pos) // tokens of this unit in the row
		if n > 0 {
			if err := s.copyTokens(dst[out:], k, q, q+n); err != nil {
				return err
			}
			out += int(n)
			pos += n
		}
		if pos < end { // the unit's EOS
			dst[out] = s.eos
			out++
			pos++
		}
	}
	return nil
}

// copyTokens copies tokens [from, to) of document k to dst.
func (s *Stream) copyTokens(dst []int32, k int32, from, to int64) error {
	a := s.docs.off[k]
	return s.docs.store.get(dst[:to-from], a+from)
}
