package extract

import (
	"math"
	"sort"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/memo-research/memo/internal/arrowsafe"
	"github.com/memo-research/memo/internal/runfiles"
)

// Row is one row of completions.arrow.
type Row struct {
	DocID                                       int64
	Split, Title, Status                        string
	Repetitions                                 int
	Prefix, Suffix, Generated                   []int32
	PrefixText, SuffixText, GeneratedText, Text string
	WindowText                                  string
	NTokens                                     int
	Loss, MinK, RefLoss                         float64
	TokenLosses                                 []float32
	MinKPP, PExtract, ReCaLL, GradNorm          float64
	// Approx holds the runfiles.CompletionsApproxFields of an approximate attack (nil: exact).
	Approx *ApproxMetrics
}

const batchRows = 256

// WriteCompletions writes rows to path atomically (temporary name, rename).
// meta goes into the schema's metadata (Run records the attack, the
// checkpoint and its training loss under the keys of internal/provenance).
func WriteCompletions(path string, rows []Row, meta map[string]string) error {
	schema := runfiles.CompletionsSchema
	withApprox := hasApprox(rows)
	fields := runfiles.CompletionsSchema.Fields()
	if withApprox {
		fields = append(fields, runfiles.CompletionsApproxFields...)
		schema = arrow.NewSchema(fields, nil)
	}
	if len(meta) > 0 {
		md := arrow.MetadataFrom(meta)
		schema = arrow.NewSchema(fields, &md)
	}
	return arrowsafe.WriteFile(path, schema, len(rows), batchRows, func(b *array.RecordBuilder, i int) {
		appendRow(b, rows[i])
		if withApprox {
			appendApprox(b, rows[i])
		}
	})
}

func appendRow(b *array.RecordBuilder, r Row) {
	str := func(i int, s string) { b.Field(i).(*array.StringBuilder).Append(s) }
	ids := func(i int, v []int32) {
		lb := b.Field(i).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Int32Builder).AppendValues(v, nil)
	}
	b.Field(0).(*array.Int64Builder).Append(r.DocID)
	str(1, r.Split)
	str(2, r.Title)
	str(3, r.Status)
	b.Field(4).(*array.Int32Builder).Append(int32(r.Repetitions))
	ids(5, r.Prefix)
	ids(6, r.Suffix)
	ids(7, r.Generated)
	str(8, r.PrefixText)
	str(9, r.SuffixText)
	str(10, r.GeneratedText)
	str(11, r.Text)
	b.Field(12).(*array.Int32Builder).Append(int32(r.NTokens))
	b.Field(13).(*array.Float64Builder).Append(r.Loss)
	b.Field(14).(*array.Float64Builder).Append(r.MinK)
	b.Field(15).(*array.Float64Builder).Append(r.RefLoss)
	lb := b.Field(16).(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.Float32Builder).AppendValues(r.TokenLosses, nil)
	str(17, r.WindowText)
	for k, v := range []float64{r.MinKPP, r.PExtract, r.ReCaLL, r.GradNorm} {
		b.Field(18 + k).(*array.Float64Builder).Append(v)
	}
}

// meanAndMinK summarizes per-token losses: their mean and the mean of the
// ceil(frac·n) largest (Min-K% Prob as a loss). NaN for no tokens.
func meanAndMinK(l []float32, frac float64) (mean, mink float64) {
	if len(l) == 0 {
		return math.NaN(), math.NaN()
	}
	s := append([]float32(nil), l...)
	var sum float64
	for _, x := range s {
		sum += float64(x)
	}
	sort.Slice(s, func(i, j int) bool { return s[i] > s[j] })
	k := max(1, min(len(s), int(math.Ceil(frac*float64(len(s))-1e-9))))
	var top float64
	for _, x := range s[:k] {
		top += float64(x)
	}
	return sum / float64(len(s)), top / float64(k)
}
