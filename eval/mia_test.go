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
