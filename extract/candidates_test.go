package extract

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
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

// descendingOrder's radix sort must give the comparison sort's order:
// ties (lower index first), −0 beside +0, infinities, subnormals, and
// temperature-scaled values; with a NaN, NaNs last.
func TestDescendingOrderMatchesComparisonSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	special := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), 5e-324, -5e-324, math.MaxFloat64, -1, 1}
	for it := 0; it < 2000; it++ {
		x := make([]float64, 1+rng.IntN(400))
		for i := range x {
			switch rng.IntN(4) {
			case 0:
				x[i] = special[rng.IntN(len(special))]
			case 1:
				x[i] = float64(rng.IntN(6)) - 3 // ties
			default:
				x[i] = float64(float32(rng.NormFloat64()*8)) / 0.7
			}
		}
		if it%50 == 0 {
			x[rng.IntN(len(x))] = math.NaN()
		}
		got, want := descendingOrder(x), descendingOrderCompared(x)
		if !slices.Equal(got, want) {
			t.Fatalf("case %d (%d values): radix order %v, comparison order %v", it, len(x), got[:min(10, len(got))], want[:min(10, len(want))])
		}
	}
}

// referenceSample is sampling as first written: a stable comparison sort
// of the candidates, their exponentials, the inverse-CDF draw, and the
// guess's log-probability from logProbAt's separate pass.
func referenceSample(d decoder, logits []float32, rng *rand.Rand) (int32, float64) {
	type tok struct {
		id    int
		logit float64
	}
	toks := make([]tok, len(logits))
	for i, v := range logits {
		toks[i] = tok{i, float64(v) / d.cfg.Temperature}
	}
	slices.SortStableFunc(toks, func(a, b tok) int { return cmp.Compare(b.logit, a.logit) })
	n := len(toks)
	if k := d.cfg.TopK; k > 0 && k < n {
		n = k
		for n < len(toks) && toks[n].logit >= toks[k-1].logit {
			n++
		}
	}
	probs := make([]float64, n)
	var z float64
	for i := range probs {
		probs[i] = math.Exp(toks[i].logit - toks[0].logit)
		z += probs[i]
	}
	for i := range probs {
		probs[i] /= z
	}
	u := rng.Float64()
	pick := int32(toks[n-1].id)
	for i, p := range probs {
		if u -= p; u < 0 {
			pick = int32(toks[i].id)
			break
		}
	}
	return pick, logProbAt(logits, pick)
}

// sampleScored must draw the same tokens and sum the same log-probability
// bits as the reference, at temperature 1 (shared exponentials) and not.
func TestSampleScoredMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for it := 0; it < 300; it++ {
		logits := make([]float32, 1+rng.IntN(500))
		for i := range logits {
			logits[i] = float32(rng.NormFloat64() * 3)
			if rng.IntN(5) == 0 {
				logits[i] = float32(rng.IntN(4))
			}
		}
		cfg := DefaultConfig()
		cfg.Decoding = DecodeSample
		cfg.Temperature = []float64{1, 0.7, 1.3}[it%3]
		cfg.TopK = []int{0, 0, 5, 40}[it%4]
		d := decoder{cfg: cfg}
		seed := uint64(it)
		tok, lp := d.sampleScored(logits, rand.New(rand.NewPCG(seed, 9)).Float64())
		wantTok, wantLP := referenceSample(d, logits, rand.New(rand.NewPCG(seed, 9)))
		if tok != wantTok || math.Float64bits(lp) != math.Float64bits(wantLP) {
			t.Fatalf("case %d (T %v, top-k %d): drew %d (log p %v), reference %d (%v)", it, cfg.Temperature, cfg.TopK, tok, lp, wantTok, wantLP)
		}
	}
}

// A small top-k's candidates found by selection (topKOrder) must be the
// whole sort's, id for id and probability for probability, and the draws
// from them the same: ties at the k-th value, ±0, infinities, a NaN
// (which falls back to the sort), temperature and top-p.
func TestTopKSelectionMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), -1, 1}
	for it := 0; it < 1500; it++ {
		logits := make([]float32, 16+rng.IntN(600))
		for i := range logits {
			switch rng.IntN(5) {
			case 0:
				logits[i] = special[rng.IntN(len(special))]
			case 1:
				logits[i] = float32(rng.IntN(5)) // ties
			default:
				logits[i] = float32(rng.NormFloat64() * 3)
			}
		}
		if it%100 == 0 {
			logits[rng.IntN(len(logits))] = float32(math.NaN())
		}
		if it%7 == 0 { // every value finite and far below: kth may be −Inf
			for i := range logits {
				logits[i] = float32(math.Inf(-1))
			}
			logits[rng.IntN(len(logits))] = 2
		}
		cfg := DefaultConfig()
		cfg.TopK = 1 + rng.IntN(len(logits)/topKSelectRatio)
		cfg.Temperature = []float64{1, 0.7, 1.3}[it%3]
		cfg.TopP = []float64{1, 0.9, 0.5}[it%3]
		d := decoder{cfg: cfg}
		ids, probs := d.candidates(logits)
		topKSelect = false
		wantIDs, wantProbs := d.candidates(logits)
		topKSelect = true
		if !slices.Equal(ids, wantIDs) || !slices.EqualFunc(probs, wantProbs, func(a, b float64) bool {
			return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
		}) {
			t.Fatalf("case %d (k %d of %d): selected %v %v, sorted %v %v", it, cfg.TopK, len(logits), ids, probs, wantIDs, wantProbs)
		}
		seed := uint64(it)
		tok, lp := d.sampleScored(logits, rand.New(rand.NewPCG(seed, 1)).Float64())
		topKSelect = false
		wantTok, wantLP := d.sampleScored(logits, rand.New(rand.NewPCG(seed, 1)).Float64())
		topKSelect = true
		if tok != wantTok || (math.Float64bits(lp) != math.Float64bits(wantLP) && !(math.IsNaN(lp) && math.IsNaN(wantLP))) {
			t.Fatalf("case %d: selected draw %d (%v), sorted %d (%v)", it, tok, lp, wantTok, wantLP)
		}
	}
}
