// Package runfiles defines the Arrow and Parquet files of a run directory
// once: the schema of each (data/docs.arrow, data/tokens.arrow,
// metrics.arrow, completions.arrow, guesses.arrow, scores.parquet,
// guess_scores.parquet, memorization.parquet) and the helpers that write
// and read them. The stages that produce a file (data, train, extract,
// eval) and those that read it (eval, plots, tests) import the schema from
// here, so docs/ARCHITECTURE.md's run-directory contract is this code, not
// a copy of it. The package is pure Go: eval and plots read the files
// without linking libtorch.
package runfiles
