package plots

import (
	"math"
	"strconv"
	"strings"
)

// csvFloat writes a fraction, a rate or a loss for a CSV table: the fewest
// digits that read back as the same float64 (the file agrees with
// summary.json to the last bit), always with a decimal point or an
// exponent, so that a column whose values happen to be whole (an AUC of
// 1) is still read as floating point by duckdb, pandas and polars, which
// would otherwise type it integer. NaN (no value: an attack without
// controls, a run without DP-SGD) and ±Inf (ε of σ = 0, which no DP
// bound holds) are an empty cell, as summary.json's null: every reader
// takes it for a missing number, where "NaN" propagates through averages
// and DuckDB types a column holding "inf" or "+Inf" as text. A row's
// dp_noise_multiplier of 0 tells the infinite ε from the missing one.
func csvFloat(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}
