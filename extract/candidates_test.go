package extract

import (
	"math/rand/v2"
	"testing"
)

// TestCandidatesOrder checks the order sampling walks the candidates in
// (its draws depend on it): most likely first, lower id first among equal
// logits, on vectors full of ties.
func TestCandidatesOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for it := 0; it < 500; it++ {
		logits := make([]float32, 1+rng.IntN(300))
		for i := range logits {
			logits[i] = float32(rng.IntN(12)) / 4
		}
		cfg := DefaultConfig()
		cfg.TopK = []int{0, 1, 7}[it%3]
		ids, probs := decoder{cfg: cfg}.candidates(logits)
		if len(ids) != len(probs) || len(ids) == 0 {
			t.Fatalf("case %d: %d ids, %d probabilities", it, len(ids), len(probs))
		}
		for i := 1; i < len(ids); i++ {
			a, b := ids[i-1], ids[i]
			if logits[a] < logits[b] || (logits[a] == logits[b] && a > b) {
				t.Fatalf("case %d: id %d (logit %v) before id %d (logit %v)", it, a, logits[a], b, logits[b])
			}
		}
	}
}
