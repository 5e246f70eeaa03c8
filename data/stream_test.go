package data

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// TestStreamMatchesTrainRows: every row Stream reads is the row TrainRows
// makes at that index, for both layouts, blocks shorter and longer than the
// documents, repetition groups, background passes and a pretraining head,
// and two seeds; a position past the end is an error.
func TestStreamMatchesTrainRows(t *testing.T) {
	base := testConfig(t)
	base.Targets, base.Controls, base.Validation = 12, 6, 4
	base.Tokenizer = "bpe:600"
	base.RepetitionGroups = []int{1, 3}
	base.Background, base.BackgroundPasses = 30, 2
	for _, c := range []struct {
		layout   string
		pretrain int
		blocks   []int
	}{
		{LayoutPadded, 0, []int{7, 64, 200}},
		{LayoutPacked, 1, []int{7, 64, 200}},
		{LayoutPadded, 2, []int{31}},
	} {
		cfg := base
		cfg.Layout, cfg.PretrainPasses = c.layout, c.pretrain
		built := buildTest(t, cfg)
		for _, store := range []string{"memory", "file"} {
			// A fresh Dataset: the token store is made once per Dataset.
			ds, err := Open(filepath.Dir(built.Dir()))
			if err != nil {
				t.Fatal(err)
			}
			if store == "file" {
				old := streamMemBytes
				streamMemBytes = 0
				if _, err := ds.Stream(c.blocks[0], 1); err != nil {
					t.Fatal(err)
				}
				streamMemBytes = old
				if _, ok := ds.train.store.(*fileStore); !ok {
					t.Fatalf("store %T, want a file", ds.train.store)
				}
			}
			checkStream(t, ds, fmt.Sprintf("%s pretrain=%d store=%s", c.layout, c.pretrain, store), c.blocks)
		}
	}
}

// checkStream compares every row of Stream with TrainRows' at each block
// and two seeds.
func checkStream(t *testing.T, ds *Dataset, label string, blocks []int) {
	t.Helper()
	for _, block := range blocks {
		for _, seed := range []int64{1, 99} {
			name := fmt.Sprintf("%s block=%d seed=%d", label, block, seed)
			want, err := ds.TrainRows(block, seed)
			if err != nil {
				t.Fatal(err)
			}
			s, err := ds.Stream(block, seed)
			if err != nil {
				t.Fatal(err)
			}
			if s.Len() != len(want) {
				t.Fatalf("%s: %d rows, TrainRows has %d", name, s.Len(), len(want))
			}
			row := make([]int32, block+1)
			for i, w := range want {
				if err := s.Row(i, row); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(row, w) {
					t.Fatalf("%s: row %d is\n%v\nTrainRows has\n%v", name, i, row, w)
				}
			}
			if err := s.Row(len(want), row); err == nil {
				t.Errorf("%s: row %d past the end read without error", name, len(want))
			}
		}
	}
}

// TestPaddedRowCount: a document of l tokens gives padRows' count of rows
// of block+1 ids (block = 4: rows start at tokens 0, 4, 8, ... while a
// target remains past the row's first token).
func TestPaddedRowCount(t *testing.T) {
	for _, c := range []struct {
		l    int64
		want int64
	}{{0, 1}, {1, 1}, {5, 1}, {6, 2}, {9, 2}, {10, 3}, {13, 3}, {14, 4}} {
		if got := paddedRowCount(c.l, 4); got != c.want {
			t.Errorf("paddedRowCount(%d, 4) = %d, want %d", c.l, got, c.want)
		}
		ids := make([]int32, c.l)
		if got := len(padRows([][]int32{ids}, 4)); int64(got) != c.want {
			t.Errorf("padRows of %d tokens: %d rows, want %d", c.l, got, c.want)
		}
	}
}
