package data

import (
	"fmt"

	"github.com/memo-research/memo/internal/splitmix"
)

// TrainRows returns the full training stream: each target repeated its
// count and each background document its passes, shuffled with seed, laid
// out as report.json's layout says. With data.pretrain_passes the stream
// opens with that many passes over the background, shuffled on their own. Every row has block+1 ids (inputs =
// row[:block], targets = row[1:]); PadID fills the rest.
//
// Padded: one document per row; a document longer than block+1 continues
// in the next row, which starts at its last target, so every token is a
// target once. Packed: documents joined by EOS, cut every block tokens.
func (d *Dataset) TrainRows(block int, seed int64) ([][]int32, error) {
	if block < 1 {
		return nil, fmt.Errorf("train rows: block = %d: must be >= 1", block)
	}
	docs, err := d.trainDocs()
	if err != nil {
		return nil, err
	}
	var pretrain, units [][]int32
	for _, doc := range docs {
		for r := 0; r < doc.Repetitions; r++ {
			units = append(units, doc.IDs)
		}
		if doc.Split == SplitBackground {
			for r := 0; r < d.report.Config.PretrainPasses; r++ {
				pretrain = append(pretrain, doc.IDs)
			}
		}
	}
	rng := newSplitMix(uint64(seed) ^ 0x7261696e726f7773)
	shuffle(rng, len(units), func(i, j int) { units[i], units[j] = units[j], units[i] })
	if len(pretrain) > 0 {
		// A generator of its own, so that the mixed part is the same stream
		// with or without the pretraining head.
		prng := newSplitMix(uint64(seed) ^ 0x7072657472616e21)
		shuffle(prng, len(pretrain), func(i, j int) { pretrain[i], pretrain[j] = pretrain[j], pretrain[i] })
		units = append(pretrain, units...)
	}
	return d.layout(units, block)
}

// ValRows returns the validation documents (by doc_id) in the same layout.
func (d *Dataset) ValRows(block int) ([][]int32, error) {
	if block < 1 {
		return nil, fmt.Errorf("val rows: block = %d: must be >= 1", block)
	}
	docs, err := d.Docs(SplitValidation)
	if err != nil {
		return nil, err
	}
	units := make([][]int32, len(docs))
	for i, doc := range docs {
		units[i] = doc.IDs
	}
	return d.layout(units, block)
}

func (d *Dataset) trainDocs() ([]Doc, error) {
	all, err := d.Docs("")
	if err != nil {
		return nil, err
	}
	var docs []Doc
	for _, doc := range all {
		if ok, reps := d.trainedAs(doc.ID, doc.Split, int32(doc.Repetitions)); ok {
			doc.Repetitions = int(reps)
			docs = append(docs, doc)
		}
	}
	return docs, nil
}

func (d *Dataset) layout(units [][]int32, block int) ([][]int32, error) {
	if d.report.Layout == LayoutPacked {
		if d.report.EOS < 0 {
			return nil, fmt.Errorf("layout packed needs an EOS token; tokenizer %s has none", d.report.Tokenizer)
		}
		return packRows(units, block, d.report.EOS), nil
	}
	return padRows(units, block), nil
}

func padRows(units [][]int32, block int) [][]int32 {
	var rows [][]int32
	for _, ids := range units {
		for start := 0; start == 0 || start+1 < len(ids); start += block {
			rows = append(rows, padded(ids[start:min(start+block+1, len(ids))], block+1))
			if start+block+1 >= len(ids) {
				break
			}
		}
	}
	return rows
}

func packRows(units [][]int32, block int, eos int32) [][]int32 {
	var stream []int32
	for _, ids := range units {
		stream = append(stream, ids...)
		stream = append(stream, eos)
	}
	var rows [][]int32
	for start := 0; start+1 < len(stream); start += block {
		rows = append(rows, padded(stream[start:min(start+block+1, len(stream))], block+1))
	}
	return rows
}

func padded(ids []int32, n int) []int32 {
	row := make([]int32, n)
	copy(row, ids)
	for i := len(ids); i < n; i++ {
		row[i] = PadID
	}
	return row
}

// splitMix is SplitMix64 (internal/splitmix): a tiny generator whose
// sequence never changes with the Go version, so splits and shuffles stay
// reproducible.
type splitMix struct{ splitmix.Stream }

func newSplitMix(seed uint64) *splitMix { return &splitMix{splitmix.New(seed)} }

func (r *splitMix) next() uint64 { return r.Next() }

// below returns a uniform integer in [0, n) by rejection.
func (r *splitMix) below(n uint64) uint64 {
	limit := -n % n // 2^64 mod n
	for {
		if v := r.next(); v >= limit {
			return v % n
		}
	}
}

// shuffle is Fisher-Yates with r.
func shuffle(r *splitMix, n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, int(r.below(uint64(i+1))))
	}
}
