// Package runfiles defines the Arrow and Parquet files of a run directory
// once. Each file memo reads back is a row type whose tagged struct fields
// are its columns (metrics.arrow's Metric, completions.arrow's Completion,
// guesses.arrow's Guess; eval declares scores.parquet's, guess_scores'
// and memorization's), written and read by one generic codec, Table;
// data/docs.arrow and data/tokens.arrow are schemas the data package
// writes and streams column by column. The stages that produce a file
// (data, train, extract, eval) and those that read it (eval, plots,
// tests) use these types, so docs/ARCHITECTURE.md's run-directory
// contract is this code, not a copy of it. The package is pure Go: eval
// and plots read the files without linking libtorch.
package runfiles
