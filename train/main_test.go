package train

import (
	"os"
	"testing"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/internal/torchx"
)

func TestMain(m *testing.M) {
	torchx.Init(1, 1)
	os.Exit(m.Run())
}

// textSource serves byte-level rows (vocabulary 256) of real text: the
// Opticks (embedded in package data), so the tests need no tokenizer.
type textSource struct {
	ids  []int32
	rows int // rows per epoch
}

func opticks(t testing.TB, n int) []int32 {
	t.Helper()
	b := data.Opticks()[2000:] // skip the Gutenberg header
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(b[i])
	}
	return out
}

// TrainRows cuts the text into rows of block+1 ids overlapping by one and
// rotates their order by the seed (deterministic, different per epoch).
func (s textSource) TrainRows(block int, seed int64) ([][]int32, error) {
	var rows [][]int32
	for i := 0; len(rows) < s.rows; i += block {
		r := make([]int32, block+1)
		for j := range r {
			if k := i + j; k < len(s.ids) {
				r[j] = s.ids[k]
			} else {
				r[j] = PadID
			}
		}
		rows = append(rows, r)
	}
	k := int(seed%int64(len(rows))+int64(len(rows))) % len(rows)
	return append(rows[k:len(rows):len(rows)], rows[:k]...), nil
}

func (s textSource) ValRows(block int) ([][]int32, error) {
	rows, _ := s.TrainRows(block, 0)
	return rows[:1], nil
}
