package eval

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// Min-K% follows Shi et al.'s code: the k = int(n·ratio) least likely
// tokens (values from their rule in Python, testdata/mink-published.json);
// where their k is 0 (NaN there) memo averages one token.
func TestMinKMatchesPublished(t *testing.T) {
	raw, err := os.ReadFile("testdata/mink-published.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Cases []struct {
			Losses []float32 `json:"losses"`
			Ratio  float64   `json:"ratio"`
			K      int       `json:"k"`
			MinK   *float64  `json:"mink"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	for _, c := range golden.Cases {
		if got := MinKCount(len(c.Losses), c.Ratio); c.K > 0 && got != c.K || c.K == 0 && got != 1 {
			t.Errorf("n=%d ratio %g: MinKCount %d, published k %d", len(c.Losses), c.Ratio, got, c.K)
		}
		if c.MinK != nil {
			if got := MinK(c.Losses, c.Ratio); math.Abs(got-*c.MinK) > 1e-5 {
				t.Errorf("n=%d ratio %g: MinK %v, published %v", len(c.Losses), c.Ratio, got, *c.MinK)
			}
		}
	}
}

// MinKCount is Python's int(n*ratio), truncated with no tolerance added:
// where n·ratio falls just below an integer in float64 (0.7·90 is
// 62.99999999999999) the published code averages one token fewer, and
// so does memo. Below one token memo averages one, where the published
// code averages none.
func TestMinKCountTruncates(t *testing.T) {
	for _, c := range []struct {
		n     int
		ratio float64
		want  int
	}{
		{90, 0.7, 62},   // Python: int(90*0.7) == 62
		{170, 0.7, 118}, // int(170*0.7) == 118
		{100, 0.7, 70},
		{10, 0.3, 3},
		{50, 0.2, 10},
		{5, 0.2, 1},
		{7, 1.0, 7},
		{4, 0.2, 1}, // int(4*0.2) == 0: memo's floor of one
		{1, 0.5, 1},
	} {
		if got := MinKCount(c.n, c.ratio); got != c.want {
			t.Errorf("MinKCount(%d, %g) = %d, want %d", c.n, c.ratio, got, c.want)
		}
	}
}
