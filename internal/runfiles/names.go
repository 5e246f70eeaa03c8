package runfiles

import (
	"path/filepath"
	"strings"
)

// The files of a run directory, named once: the stages that write them,
// the commands that find them and the codecs (NewTable) that read them.
const (
	ConfigFile       = "config.toml" // the resolved spec, the run's identity
	CompletionsFile  = "completions.arrow"
	GuessesFile      = "guesses.arrow"
	ScoresFile       = "scores.parquet"
	GuessScoresFile  = "guess_scores.parquet"
	CorpusCountsFile = "corpus_counts.parquet"
	MemorizationFile = "memorization.parquet"
	SummaryFile      = "summary.json"
	MetricsFile      = "metrics.arrow"
	MIASignalsFile   = "mia_signals.parquet"
)

// Beside names file among the results of a completions file:
// completions.arrow gives file itself, and NAME.completions.arrow (or
// NAME.arrow) gives NAME.file, so attacks kept side by side keep their
// own guesses, scores and summaries.
func Beside(completions, file string) string {
	dir, base := filepath.Split(completions)
	stem := strings.TrimSuffix(base, ".arrow")
	stem = strings.TrimSuffix(strings.TrimSuffix(stem, "completions"), ".")
	if stem != "" {
		stem += "."
	}
	return filepath.Join(dir, stem+file)
}

// BesideScores names file among the results of a scores file:
// scores.parquet gives file itself, NAME.scores.parquet NAME.file.
func BesideScores(scores, file string) string {
	return strings.TrimSuffix(scores, ScoresFile) + file
}
