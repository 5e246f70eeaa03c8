package extract

import (
	"context"
	"math"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/model"
)

// TestSuffixLogProbByHand: a 3-token suffix on a 4-token vocabulary under
// top-k = 2 at temperature 0.7. Logits are multiples of 0.7, so after the
// temperature they are small integers:
//
//	position 0: [2.1, 1.4, 0, −0.7]/0.7 = [3, 2, 0, −1]; top-2 keeps ids 0, 1;
//	            true token 1: e²/(e³+e²) = 1/(1+e) = 0.268941
//	position 1: [0.7, 0.7, 2.1, 0]/0.7 = [1, 1, 3, 0]; the 2nd largest is 1,
//	            tied by ids 0 and 1, so top-2 keeps ids 2, 0, 1 (ties stay);
//	            true token 0: e/(e³+2e) = 1/(e²+2) = 0.106507
//	position 2: [−0.7, 0, 0.7, 1.4]/0.7 = [−1, 0, 1, 2]; keeps ids 3, 2;
//	            true token 2: e/(e+e²) = 1/(1+e) = 0.268941
//
// p = 0.268941² · 0.106507 = 0.0077035, log p = −2 ln(1+e) − ln(e²+2)
// = −2·1.3132617 − 2.2395447 = −4.8660680.
func TestSuffixLogProbByHand(t *testing.T) {
	logits := [][]float32{{2.1, 1.4, 0, -0.7}, {0.7, 0.7, 2.1, 0}, {-0.7, 0, 0.7, 1.4}}
	cfg := DefaultConfig()
	cfg.Decoding, cfg.Temperature, cfg.TopK = DecodeSample, 0.7, 2
	d := decoder{cfg: cfg}
	want := -2*math.Log(1+math.E) - math.Log(math.E*math.E+2)
	if got := d.suffixLogProb(logits, []int32{1, 0, 2}); math.Abs(got-want) > 1e-6 || math.Abs(want-(-4.866068)) > 1e-6 {
		t.Errorf("log p = %.7f, want %.7f (= −4.8660680)", got, want)
	}
	// Token 3 at position 0 is cut by top-2: the scheme never produces it.
	if got := d.suffixLogProb(logits, []int32{3, 0, 2}); !math.IsInf(got, -1) {
		t.Errorf("a truncated token: log p = %v, want -Inf", got)
	}
	// Top-p = 0.5 after top-2 at position 0 keeps only id 0 (0.731 >= 0.5;
	// id 1's 0.269 is dropped as the cumulative mass from the tail, 0.269,
	// is <= 1 − 0.5): position 0 gives id 0 with probability 1.
	cfg.TopP = 0.5
	d = decoder{cfg: cfg}
	if got := d.suffixLogProb(logits[:1], []int32{0}); got != 0 {
		t.Errorf("top-p leaving one token: log p = %v, want 0", got)
	}
	// Greedy: the argmax path gives 0, anything else −Inf; at position 1
	// ids 0 and 1 tie below id 2, so the argmax is 2.
	d = decoder{cfg: Config{Decoding: DecodeGreedy, Temperature: 1, TopP: 1}}
	if got := d.suffixLogProb(logits, []int32{0, 2, 3}); got != 0 {
		t.Errorf("greedy path: log p = %v, want 0", got)
	}
	if got := d.suffixLogProb(logits, []int32{0, 0, 3}); !math.IsInf(got, -1) {
		t.Errorf("greedy, one token off the argmax: log p = %v, want -Inf", got)
	}
	// Greedy's tie rule is the lowest id: logits tied at the top.
	if got := d.suffixLogProb([][]float32{{1, 5, 5}}, []int32{1}); got != 0 {
		t.Errorf("greedy tie to the lower id: log p = %v, want 0", got)
	}
	if got := d.suffixLogProb([][]float32{{1, 5, 5}}, []int32{2}); !math.IsInf(got, -1) {
		t.Errorf("greedy tie, the higher id: log p = %v, want -Inf", got)
	}
	if got := (decoder{cfg: Config{Decoding: DecodeBeam}}).suffixLogProb(logits, []int32{0, 2, 3}); !math.IsNaN(got) {
		t.Errorf("beam search: log p = %v, want NaN", got)
	}
}

// TestMinKPlusPlusByHand: a 4-token vocabulary whose next-token
// distribution is p = (1/2, 1/4, 1/8, 1/8) at each of 4 positions, log p =
// −(1, 2, 3, 3)·ln 2. μ = −(½·1 + ¼·2 + ⅛·3 + ⅛·3) ln 2 = −1.75 ln 2,
// E[(log p)²] = (½ + ¼·4 + ¼·9) ln²2 = 3.75 ln²2, σ² = (3.75 − 1.75²) ln²2
// = 0.6875 ln²2, σ = 0.8291562 ln 2. True tokens 0, 1, 2, 3 give
// z = (−1 + 1.75)/0.8291562 = 0.9045340, (−2 + 1.75)/… = −0.3015113 and
// (−3 + 1.75)/… = −1.5075567 twice.
func TestMinKPlusPlusByHand(t *testing.T) {
	ln2 := math.Ln2
	nll := []float32{float32(ln2), float32(2 * ln2), float32(3 * ln2), float32(3 * ln2)}
	mean := []float64{-1.75 * ln2, -1.75 * ln2, -1.75 * ln2, -1.75 * ln2}
	v := 0.6875 * ln2 * ln2
	variance := []float64{v, v, v, v}
	for _, tc := range []struct {
		frac, want float64
	}{
		{0.2, -1.5075567},                              // int(0.8) = 0: at least 1 lowest
		{0.5, -1.5075567},                              // 2 lowest
		{0.75, (-0.3015113 - 2*1.5075567) / 3},         // 3 lowest
		{1, (0.9045340 - 0.3015113 - 2*1.5075567) / 4}, // all
	} {
		if got := MinKPlusPlus(nll, mean, variance, tc.frac); math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("k = %v: Min-K%%++ %.7f, want %.7f", tc.frac, got, tc.want)
		}
	}
	// A one-hot distribution (σ = 0) is no evidence: z = 0.
	if got := MinKPlusPlus([]float32{0}, []float64{0}, []float64{0}, 1); got != 0 {
		t.Errorf("σ = 0: %v, want 0", got)
	}
	if got := MinKPlusPlus(nil, nil, nil, 0.2); !math.IsNaN(got) {
		t.Errorf("no positions: %v, want NaN", got)
	}
}

// TestReCaLLByHand: NLLs of the same three tokens with and without the
// prefix, 0.5 + 1 + 1.5 = 3 and 0.25 + 0.5 + 0.75 = 1.5: LL(x|P)/LL(x) =
// −3/−1.5 = 2.
func TestReCaLLByHand(t *testing.T) {
	if got := ReCaLL([]float32{0.5, 1, 1.5}, []float32{0.25, 0.5, 0.75}); got != 2 {
		t.Errorf("ReCaLL = %v, want 2", got)
	}
	if got := ReCaLL(nil, nil); !math.IsNaN(got) {
		t.Errorf("no tokens: %v, want NaN", got)
	}
	if got := ReCaLL([]float32{1}, []float32{1, 2}); !math.IsNaN(got) {
		t.Errorf("different token sets: %v, want NaN", got)
	}
}

// TestRecallScoresAlignTokens: recallScores' conditional NLLs are those of
// the document's own tokens after the prefix, checked against TokenNLL of
// prefix+document scored here; the document that gave the prefix gets NaN.
func TestRecallScoresAlignTokens(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	docs := opticksDocs(t, 3, 60)
	docs[2].Split = "control"
	g := newModel(t, model.Config{Preset: "nano", Vocab: 256, Context: 64, Seed: 9})
	cfg := DefaultConfig()
	cfg.Suffix = 10
	prompts := BuildPrompts(cfg, docs, 64)
	losses, err := windowLosses(context.Background(), g, prompts, 2, "test")
	if err != nil {
		t.Fatal(err)
	}
	prefix := RecallPrefix{DocID: 2, IDs: docs[2].IDs[:8]}
	got, err := recallScores(context.Background(), g, prompts, losses, prefix, 64, 2)
	if err != nil {
		t.Fatal(err)
	}
	// 64 − 8 = 56 tokens of each 60-token window fit after the prefix.
	w := append(append([]int32{}, prefix.IDs...), docs[0].IDs[:56]...)
	cond, err := engine.TokenNLL(g, [][]int32{w})
	if err != nil {
		t.Fatal(err)
	}
	want := ReCaLL(cond[0][8:], losses[0][:55])
	if math.Abs(got[0]-want) > 1e-9 || !(got[0] > 0) {
		t.Errorf("doc 0: recall %v, want %v", got[0], want)
	}
	if !math.IsNaN(got[2]) {
		t.Errorf("the prefix's own document: recall %v, want NaN", got[2])
	}
}

// TestPExtractAgreesWithSampling is the check that p_extract is the
// probability extract's sampling reproduces the suffix: a nano model
// trained part way on two passages, a top-k/top-p/temperature scheme, and
// N = 2,000 samples drawn by generateAll (the path `memo extract` samples
// with, one RNG per document). The number that equal the suffix must lie
// in the binomial 99 % interval of N·exp(p_extract). The suffix length is
// chosen as the shortest of at least 4 tokens (a product of several
// truncated probabilities) whose p lies in [0.05, 0.95], so the test has
// teeth; it fails if none does.
func TestPExtractAgreesWithSampling(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	docs := opticksDocs(t, 2, 64)
	g := newModel(t, model.Config{Preset: "nano", Vocab: 256, Context: 64, Seed: 21})
	loss := memorize(t, g, [][]int32{docs[0].IDs, docs[1].IDs}, 150, 0.6)
	t.Logf("trained to loss %.3f in %v", loss, time.Since(start).Round(time.Millisecond))
	cfg := DefaultConfig()
	cfg.Mode, cfg.Prefix, cfg.Decoding = ModeFixed, 24, DecodeSample
	cfg.Temperature, cfg.TopK, cfg.TopP = 0.9, 8, 0.95
	const n = 2000
	var p float64
	var prompt Prompt
	for suffix := 4; suffix <= 16 && prompt.Suffix == nil; suffix++ {
		cfg.Suffix = suffix
		for _, pr := range BuildPrompts(cfg, docs, 64) {
			s, err := scoreAll(context.Background(), g, cfg, []Prompt{pr})
			if err != nil {
				t.Fatal(err)
			}
			if q := math.Exp(s[0].pExtract); q >= 0.05 && q <= 0.95 {
				p, prompt = q, pr
				break
			}
		}
	}
	if prompt.Suffix == nil {
		t.Fatal("no suffix of 4 to 16 tokens has p_extract in [0.05, 0.95]: the test would have no teeth")
	}
	// N copies of the prompt, each its own document id: its own RNG.
	prompts := make([]Prompt, n)
	for i := range prompts {
		prompts[i] = prompt
		prompts[i].Doc = data.Doc{ID: int64(1000 + i), IDs: prompt.Doc.IDs}
	}
	cfg.BatchSize = 500
	gen, err := generateAll(context.Background(), g, cfg, prompts, true)
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	for _, s := range gen {
		if reflect.DeepEqual(s, prompt.Suffix) {
			hits++
		}
	}
	lo, hi := binomialInterval(n, p, 0.99)
	t.Logf("suffix of %d tokens: p_extract = %.4f, %d of %d samples reproduce it (99 %% interval [%d, %d]); %v",
		len(prompt.Suffix), p, hits, n, lo, hi, time.Since(start).Round(time.Millisecond))
	if hits < lo || hits > hi {
		t.Errorf("%d of %d samples reproduce the suffix; exp(p_extract) = %.4f expects %d to %d (99 %%)", hits, n, p, lo, hi)
	}
}

// binomialInterval is the central interval [lo, hi] of Binomial(n, p)
// holding at least level of its mass: P(X < lo) and P(X > hi) are each at
// most (1 − level)/2.
func binomialInterval(n int, p, level float64) (lo, hi int) {
	tail := (1 - level) / 2
	pmf := func(k int) float64 {
		lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
		return math.Exp(lg(n) - lg(k) - lg(n-k) + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
	}
	var c float64
	for lo = 0; lo < n && c+pmf(lo) <= tail; lo++ {
		c += pmf(lo)
	}
	c = 0
	for hi = n; hi > 0 && c+pmf(hi) <= tail; hi-- {
		c += pmf(hi)
	}
	return lo, hi
}
