package plots

import (
	"strconv"
	"strings"
)

// csvFloat writes a fraction, a rate or a loss for a CSV table: the fewest
// digits that read back as the same float64 (the file agrees with
// summary.json to the last bit), always with a decimal point or an
// exponent, so that a column whose values happen to be whole (an AUC of
// 1) is still read as floating point by duckdb, pandas and polars, which
// would otherwise type it integer.
func csvFloat(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEIN") { // Inf, NaN
		s += ".0"
	}
	return s
}
