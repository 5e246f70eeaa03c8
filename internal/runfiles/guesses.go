package runfiles

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/memo-research/memo/internal/arrowsafe"
)

// guesses.arrow holds an attack's many guesses per prompt
// (extract.samples > 1): extract writes it beside completions.arrow, eval
// reads it.

// GuessesSchema is the schema of guesses.arrow: one row per guess. rank orders a document's
// guesses by seq_logprob, highest first (0 is the guess completions.arrow
// holds as generated_ids); sample is the draw (or beam) it came from, the
// index of its random stream. seq_logprob is the sum over the generated
// tokens of the model's own log-probability of each, under its
// untruncated distribution at temperature 1 (not the temperature, top-k
// and top-p distribution it was drawn from), natural log.
var GuessesSchema = arrow.NewSchema([]arrow.Field{
	{Name: "doc_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "split", Type: arrow.BinaryTypes.String},
	{Name: "rank", Type: arrow.PrimitiveTypes.Int32},
	{Name: "sample", Type: arrow.PrimitiveTypes.Int32},
	{Name: "generated_ids", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
	{Name: "generated_text", Type: arrow.BinaryTypes.String},
	{Name: "seq_logprob", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// Guess is one row of guesses.arrow.
type Guess struct {
	DocID         int64
	Split         string
	Rank, Sample  int
	Generated     []int32
	GeneratedText string
	SeqLogProb    float64
}

// GuessesPath names the guesses of a completions file: completions.arrow gives
// guesses.arrow, NAME.completions.arrow gives NAME.guesses.arrow.
func GuessesPath(completions string) string {
	dir, base := filepath.Split(completions)
	stem := strings.TrimSuffix(base, ".arrow")
	stem = strings.TrimSuffix(strings.TrimSuffix(stem, "completions"), ".")
	if stem != "" {
		stem += "."
	}
	return filepath.Join(dir, stem+"guesses.arrow")
}

// guessBatchRows is the number of guesses per record batch.
const guessBatchRows = 4096

// WriteGuesses writes rows to path atomically (temporary name, rename).
func WriteGuesses(path string, rows []Guess) error {
	return arrowsafe.WriteFile(path, GuessesSchema, len(rows), guessBatchRows, func(b *array.RecordBuilder, i int) {
		r := rows[i]
		b.Field(0).(*array.Int64Builder).Append(r.DocID)
		b.Field(1).(*array.StringBuilder).Append(r.Split)
		b.Field(2).(*array.Int32Builder).Append(int32(r.Rank))
		b.Field(3).(*array.Int32Builder).Append(int32(r.Sample))
		lb := b.Field(4).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Int32Builder).AppendValues(r.Generated, nil)
		b.Field(5).(*array.StringBuilder).Append(r.GeneratedText)
		b.Field(6).(*array.Float64Builder).Append(r.SeqLogProb)
	})
}

// ReadGuesses reads every row of a guesses file; every batch is validated before
// a value is read, so a corrupt file is an error naming it.
func ReadGuesses(path string) ([]Guess, error) {
	var out []Guess
	err := arrowsafe.ReadFile(path, GuessesSchema, func(rec arrow.Record) error {
		ids, ok := rec.Column(4).(*array.List).ListValues().(*array.Int32)
		if !ok {
			return fmt.Errorf("generated_ids: not a list of int32")
		}
		docID := rec.Column(0).(*array.Int64)
		split := rec.Column(1).(*array.String)
		rank, sample := rec.Column(2).(*array.Int32), rec.Column(3).(*array.Int32)
		gen := rec.Column(4).(*array.List)
		text := rec.Column(5).(*array.String)
		lp := rec.Column(6).(*array.Float64)
		for i := 0; i < int(rec.NumRows()); i++ {
			lo, hi := gen.ValueOffsets(i)
			out = append(out, Guess{
				DocID: docID.Value(i), Split: split.Value(i), Rank: int(rank.Value(i)), Sample: int(sample.Value(i)),
				Generated: append([]int32{}, ids.Int32Values()[lo:hi]...), GeneratedText: text.Value(i), SeqLogProb: lp.Value(i),
			})
		}
		return nil
	})
	return out, err
}
