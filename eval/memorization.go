package eval

import (
	"fmt"
	"io"
	"sort"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/runfiles"
)

// WriteMemorization writes memorization.parquet at path (atomically) from
// the summaries of one run's checkpoints, in step order. Each summary must
// record its step (extract writes it into the completions).
func WriteMemorization(path string, sums []*Summary) error {
	sorted := append([]*Summary(nil), sums...)
	for _, s := range sorted {
		if s.Step == nil {
			return fmt.Errorf("memorization: summary of %s records no step", s.Completions)
		}
	}
	sort.SliceStable(sorted, func(i, j int) bool { return *sorted[i].Step < *sorted[j].Step })
	for i := 1; i < len(sorted); i++ {
		if *sorted[i].Step == *sorted[i-1].Step {
			return fmt.Errorf("memorization: step %d twice (%s and %s)", *sorted[i].Step, sorted[i-1].Completions, sorted[i].Completions)
		}
	}
	err := atomicfile.Write(path, func(w io.Writer) error {
		recs := make([]arrow.Record, len(sorted))
		for i, s := range sorted {
			recs[i] = memorizationRecord(s)
			defer recs[i].Release()
		}
		return runfiles.WriteParquet(w, runfiles.MemorizationSchema, recs...)
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// memorizationRecord is one step's rows: members, then controls.
func memorizationRecord(s *Summary) arrow.Record {
	b := array.NewRecordBuilder(memory.DefaultAllocator, runfiles.MemorizationSchema)
	defer b.Release()
	for _, sp := range []struct {
		name string
		sum  SplitSummary
		any  GuessSplit
	}{{splitTarget, s.Members, guessSplit(s, true)}, {splitControl, s.Controls, guessSplit(s, false)}} {
		b.Field(0).(*array.Int64Builder).Append(int64(*s.Step))
		b.Field(1).(*array.StringBuilder).Append(sp.name)
		b.Field(2).(*array.StringBuilder).Append(s.Checkpoint)
		b.Field(3).(*array.Int32Builder).Append(int32(sp.sum.N))
		m := sp.sum
		for k, v := range []Num{m.ExactMatch, m.ExactMatchCI[0], m.ExactMatchCI[1], m.TokenAccuracy, m.TokenAccuracyCI[0], m.TokenAccuracyCI[1],
			m.RougeL, m.RougeLCI[0], m.RougeLCI[1], m.Loss, sp.any.AnyExact, sp.any.AnyExactCI[0], sp.any.AnyExactCI[1],
			s.MIA.Loss.AUC, s.MIA.Loss.AUCCI[0], s.MIA.Loss.AUCCI[1], s.MIA.Zlib.AUC, s.MIA.MinK.AUC} {
			b.Field(4 + k).(*array.Float64Builder).Append(float64(v))
		}
	}
	return b.NewRecord()
}

// guessSplit is the summary's any-of-N rates of members or controls, NaN
// without guesses.
func guessSplit(s *Summary, members bool) GuessSplit {
	if s.Guesses == nil {
		n := Num(nan())
		return GuessSplit{AnyExact: n, AnyExactCI: [2]Num{n, n}}
	}
	if members {
		return s.Guesses.Members
	}
	return s.Guesses.Controls
}
