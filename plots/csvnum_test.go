package plots

import (
	"math"
	"strconv"
	"testing"
)

// TestCSVFloat: every finite number reads back as the same float64 and
// carries a decimal point or an exponent; NaN and ±Inf are empty cells.
func TestCSVFloat(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{1, "1.0"},
		{0, "0.0"},
		{math.Nextafter(0.3, 1), "0.30000000000000004"},
		{1e21, "1e+21"},
		{-2, "-2.0"},
		{5e-324, "5e-324"},
		{math.NaN(), ""},
		{math.Inf(1), ""},
		{math.Inf(-1), ""},
	} {
		got := csvFloat(tc.in)
		if got != tc.want {
			t.Errorf("csvFloat(%v) = %q, want %q", tc.in, got, tc.want)
		}
		if got == "" {
			continue
		}
		if back, err := strconv.ParseFloat(got, 64); err != nil || back != tc.in {
			t.Errorf("csvFloat(%v) = %q reads back as %v (%v)", tc.in, got, back, err)
		}
	}
}
