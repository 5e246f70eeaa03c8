package runfiles

import (
	"fmt"
	"os"
)

// guesses.arrow holds an attack's many guesses per prompt
// (extract.samples > 1): extract writes it beside completions.arrow, eval
// reads it.

// Guess is one row of guesses.arrow: one guess. Rank orders a document's
// guesses by SeqLogProb, highest first (0 is the guess completions.arrow
// holds as generated_ids); Sample is the draw (or beam) it came from, the
// index of its random stream. SeqLogProb is the sum over the generated
// tokens of the model's own log-probability of each, under its
// untruncated distribution at temperature 1 (not the temperature, top-k
// and top-p distribution it was drawn from), natural log.
type Guess struct {
	DocID         int64   `arrow:"doc_id,required"`
	Split         string  `arrow:"split,required"`
	Rank          int     `arrow:"rank,required"`
	Sample        int     `arrow:"sample,required"`
	Generated     []int32 `arrow:"generated_ids,required"`
	GeneratedText string  `arrow:"generated_text,required"`
	SeqLogProb    float64 `arrow:"seq_logprob,required"`
}

// Guesses is guesses.arrow's codec.
var Guesses = NewTable[Guess](GuessesFile)

// GuessesPath names the guesses of a completions file: completions.arrow gives
// guesses.arrow, NAME.completions.arrow gives NAME.guesses.arrow.
func GuessesPath(completions string) string { return Beside(completions, GuessesFile) }

// guessBatchRows is the number of guesses per record batch.
const guessBatchRows = 4096

// WriteGuesses writes rows to path atomically (temporary name, rename).
func WriteGuesses(path string, rows []Guess) error {
	return Guesses.WriteIPC(path, rows, guessBatchRows, nil)
}

// ReadGuesses reads every row of a guesses file; every batch is validated before
// a value is read, so a corrupt file is an error naming it.
func ReadGuesses(path string) ([]Guess, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	rows, _, err := Guesses.ReadIPC(path, f)
	return rows, err
}
