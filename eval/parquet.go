package eval

import (
	"io"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/memo-research/memo/internal/runfiles"
)

// writeScores writes the rows as one Parquet file (Snappy, row groups of
// 64k rows). any_exact_match and best_rougeL are over the document's
// guesses (extract.samples; with one guess, exact_match and rougeL), and
// n_guesses counts them (0 for a document not attacked).
func writeScores(w io.Writer, rows []Score) error {
	b := array.NewRecordBuilder(memory.DefaultAllocator, runfiles.ScoresSchema)
	defer b.Release()
	for _, s := range rows {
		b.Field(0).(*array.Int64Builder).Append(s.DocID)
		b.Field(1).(*array.StringBuilder).Append(s.Split)
		b.Field(2).(*array.StringBuilder).Append(s.Title)
		b.Field(3).(*array.StringBuilder).Append(s.Status)
		b.Field(4).(*array.Int32Builder).Append(int32(s.Repetitions))
		b.Field(5).(*array.Int32Builder).Append(int32(s.NTokens))
		b.Field(6).(*array.Int32Builder).Append(int32(s.PrefixLen))
		b.Field(7).(*array.Int32Builder).Append(int32(s.SuffixLen))
		b.Field(8).(*array.BooleanBuilder).Append(s.Exact)
		b.Field(9).(*array.Float64Builder).Append(s.TokenAccuracy)
		b.Field(10).(*array.Int32Builder).Append(int32(s.FirstDivergence))
		for k, v := range []float64{s.RougeL, s.RougeLPrecision, s.RougeLRecall, s.Rouge1, s.Rouge2, s.Loss} {
			b.Field(11 + k).(*array.Float64Builder).Append(v)
		}
		b.Field(17).(*array.Int32Builder).Append(int32(s.ZlibLen))
		for k, v := range []float64{s.ZlibRatio, s.MinK, s.RefLoss, s.RefDiff, s.MinKPP, s.PExtract, s.ReCaLL, s.GradNorm} {
			b.Field(18 + k).(*array.Float64Builder).Append(v)
		}
		b.Field(26).(*array.BooleanBuilder).Append(s.AnyExact)
		b.Field(27).(*array.Float64Builder).Append(s.BestRougeL)
		b.Field(28).(*array.Int32Builder).Append(int32(s.NGuesses))
	}
	rec := b.NewRecord()
	defer rec.Release()
	return runfiles.WriteParquet(w, runfiles.ScoresSchema, rec)
}
