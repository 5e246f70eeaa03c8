package eval

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 || (math.IsNaN(a) && math.IsNaN(b)) }

func TestRougeTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"Hello, World!", []string{"hello", "world"}},
		{"don't stop", []string{"don", "t", "stop"}},
		{"Year 1704.", []string{"year", "1704"}},
		{"café  naïve", []string{"caf", "na", "ve"}},
		{"!!! ... ---", []string{}},
		{"", []string{}},
		{"a_b\tc\nd", []string{"a", "b", "c", "d"}},
		// Python's lower() makes 'İ' "i" and a combining dot, which
		// rouge_score's tokenizer splits on: "İstanbul" is two words.
		{"İstanbul is big", []string{"i", "stanbul", "is", "big"}},
		// A decode cut inside a character, and the same text as the
		// completions file stores it (stray bytes as U+FFFD): the same
		// words, so RougeL reads either alike.
		{"caf\xc3", []string{"caf"}},
		{"caf\uFFFD", []string{"caf"}},
		{"x\xe2\x82y \xff\xfez", []string{"x", "y", "z"}},
		{"x\uFFFDy \uFFFDz", []string{"x", "y", "z"}},
	} {
		got := RougeTokens(tc.in)
		if len(got) == 0 && len(tc.want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("RougeTokens(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRougeLHandWorked(t *testing.T) {
	for _, tc := range []struct {
		name         string
		target, pred string
		p, r, f      float64
	}{
		// LCS "the cat on the mat" = 5 of 6 on both sides.
		{"reordered", "the cat sat on the mat", "the cat on the mat sat", 5.0 / 6, 5.0 / 6, 5.0 / 6},
		{"case and punctuation only", "Hello, World!", "hello world", 1, 1, 1},
		// Several LCS of length 2 (a-c, a-d, b-c, b-d): the length is what counts.
		{"ties between subsequences", "a b c d", "b a d c", 0.5, 0.5, 0.5},
		// LCS 3: P = 3/3, R = 3/5, F = 2·1·0.6/1.6.
		{"prediction shorter", "a b c d e", "a c e", 1, 0.6, 0.75},
		{"repeated tokens", "a a a", "a", 1, 1.0 / 3, 0.5},
		// Repeats in the prediction (RougeL's second argument): one "a"
		// of the target matches one of the two, LCS 1, P = 1/2, R = 1.
		// Pins the LCS recurrence's diagonal step (prev[j] + 1): counting
		// from the current row (cur[j] + 1) would match the target's
		// single "a" twice, LCS 2.
		{"repeats in the prediction", "a", "a a", 0.5, 1, 2.0 / 3},
		{"repeats in the target", "a a", "a", 1, 0.5, 2.0 / 3},
		// LCS "a b" = 2 of 4 predicted, 2 of 2 target.
		{"each target token repeated in the prediction", "a b", "a a b b", 0.5, 1, 2.0 / 3},
		{"nothing shared", "one two", "three four", 0, 0, 0},
		{"empty target", "", "some words", 0, 0, 0},
		{"empty prediction", "some words", "", 0, 0, 0},
		{"both empty", "", "", 0, 0, 0},
		{"punctuation-only target", "!!! ...", "abc", 0, 0, 0},
		{"both punctuation-only", "?!", "--", 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RougeL(RougeTokens(tc.target), RougeTokens(tc.pred))
			if !near(got.Precision, tc.p) || !near(got.Recall, tc.r) || !near(got.F1, tc.f) {
				t.Errorf("RougeL = %+v, want P %v R %v F %v", got, tc.p, tc.r, tc.f)
			}
		})
	}
}

func TestRougeNHandWorked(t *testing.T) {
	for _, tc := range []struct {
		target, pred string
		n            int
		f            float64
	}{
		// Unigrams: target {the:2, cat:1}, prediction {the:3}: overlap 2, P = R = 2/3.
		{"the cat the", "the the the", 1, 2.0 / 3},
		// Bigrams: {the cat, cat the} against {the the ×2}: nothing shared.
		{"the cat the", "the the the", 2, 0},
		// Bigrams: {a b, b c} against {a b, b d}: P = R = 1/2.
		{"a b c", "a b d", 2, 0.5},
		{"a", "a", 2, 0}, // no bigram on either side
		{"", "a b", 1, 0},
	} {
		if got := RougeN(RougeTokens(tc.target), RougeTokens(tc.pred), tc.n); !near(got.F1, tc.f) {
			t.Errorf("Rouge%d(%q, %q) = %+v, want F1 %v", tc.n, tc.target, tc.pred, got, tc.f)
		}
	}
}

func TestCompareTokens(t *testing.T) {
	suffix := []int32{1, 2, 3, 4}
	for _, tc := range []struct {
		name string
		gen  []int32
		want Match
	}{
		{"exact", []int32{1, 2, 3, 4}, Match{true, 1, 4}},
		{"one wrong inside", []int32{1, 9, 3, 4}, Match{false, 0.75, 1}},
		{"wrong first", []int32{0, 2, 3, 4}, Match{false, 0.75, 0}},
		{"wrong last", []int32{1, 2, 3, 0}, Match{false, 0.75, 3}},
		{"short generation", []int32{1, 2}, Match{false, 0.5, 2}},
		{"empty generation", nil, Match{false, 0, 0}},
		{"longer than suffix", []int32{1, 2, 3, 4, 5}, Match{false, 1, 4}},
		{"shifted by one", []int32{2, 3, 4, 5}, Match{false, 0, 0}},
	} {
		if got := CompareTokens(suffix, tc.gen); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: CompareTokens = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if got := CompareTokens(nil, nil); got.Exact || !math.IsNaN(got.TokenAccuracy) {
		t.Errorf("empty suffix: %+v, want inexact with NaN accuracy", got)
	}
}

func TestAUCHandWorked(t *testing.T) {
	for _, tc := range []struct {
		name     string
		m, c     []float64
		want     float64
		wantsNaN bool
	}{
		// Pairs: 3>2, 3>0, 2=2 (½), 2>0, 1<2, 1>0: 4.5 of 6.
		{"with a tie", []float64{3, 2, 1}, []float64{2, 0}, 0.75, false},
		{"all tied", []float64{1, 1}, []float64{1, 1, 1}, 0.5, false},
		{"perfect", []float64{5, 6}, []float64{1, 2}, 1, false},
		{"inverted", []float64{1, 2}, []float64{5, 6}, 0, false},
		// Members 2,2 against controls 1,2,3: each member beats one, ties one: 1.5 of 3.
		{"ties in the middle", []float64{2, 2}, []float64{1, 2, 3}, 0.5, false},
		{"NaN left out", []float64{3, math.NaN()}, []float64{1}, 1, false},
		{"no controls", []float64{1}, nil, 0, true},
		{"no members", nil, []float64{1}, 0, true},
	} {
		got := AUC(tc.m, tc.c)
		if tc.wantsNaN != math.IsNaN(got) || (!tc.wantsNaN && !near(got, tc.want)) {
			t.Errorf("%s: AUC = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func repeatF(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestTPRAtFPRHandWorked(t *testing.T) {
	// 100 controls: one false positive is exactly 1 % FPR, which is not
	// strictly below 1 %.
	controls := append([]float64{9.5, 5}, repeatF(0, 98)...)
	members := []float64{10, 9, 8, 1}
	// Thresholds 10 (TPR .25, FPR 0), 9.5 (.25, .01), 9 (.5, .01), 8 (.75, .01),
	// then 5 pushes FPR to .02.
	for _, tc := range []struct {
		name      string
		m, c      []float64
		fpr, want float64
	}{
		{"1 % allows no false positive of 100", members, controls, 0.01, 0.25},
		{"2 % allows one", members, controls, 0.02, 0.75},
		{"0.1 % of 100 controls", members, controls, 0.001, 0.25},
		// A tie of two members with one control: flagged together, at 1 % FPR.
		{"tie at the limit", []float64{5, 5}, append([]float64{5}, repeatF(0, 99)...), 0.01, 0},
		{"tie under the limit", []float64{5, 5}, append([]float64{5}, repeatF(0, 99)...), 0.011, 1},
		// A tie with two controls is 2 % FPR: the threshold cannot split it.
		{"tie over the limit", []float64{5, 5}, append([]float64{5, 5}, repeatF(0, 98)...), 0.02, 0},
		// With 10 controls any false positive is 10 %: only members above every control count.
		{"10 controls", []float64{4, 3, 2}, []float64{2.5, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0.01, 2.0 / 3},
	} {
		if got := TPRAtFPR(tc.m, tc.c, tc.fpr); !near(got, tc.want) {
			t.Errorf("%s: TPR at %v FPR = %v, want %v", tc.name, tc.fpr, got, tc.want)
		}
	}
	if got := TPRAtFPR(nil, controls, 0.01); !math.IsNaN(got) {
		t.Errorf("no members: TPR = %v, want NaN", got)
	}
}

// The ROC curve figures draw is the one AUC and TPRAtFPR summarize: its
// trapezoid area is the AUC, and its highest TPR at FPR < limit is the TPR.
func TestROCAgreesWithAUCAndTPR(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		m, c := make([]float64, 1+rng.IntN(40)), make([]float64, 1+rng.IntN(300))
		for i := range m {
			m[i] = math.Round(rng.NormFloat64()*4+1) / 2 // ties on purpose
		}
		for i := range c {
			c[i] = math.Round(rng.NormFloat64()*4) / 2
		}
		pts := ROC(m, c)
		if pts[0] != (ROCPoint{0, 0}) || pts[len(pts)-1] != (ROCPoint{1, 1}) {
			t.Fatalf("trial %d: curve runs from %v to %v", trial, pts[0], pts[len(pts)-1])
		}
		area := 0.0
		for i := 1; i < len(pts); i++ {
			area += (pts[i].FPR - pts[i-1].FPR) * (pts[i].TPR + pts[i-1].TPR) / 2
		}
		if !near(area, AUC(m, c)) {
			t.Errorf("trial %d: area under ROC %v, AUC %v", trial, area, AUC(m, c))
		}
		for _, f := range []float64{0.001, 0.01, 0.1} {
			best := 0.0
			for _, p := range pts {
				if p.FPR < f {
					best = math.Max(best, p.TPR)
				}
			}
			if got := TPRAtFPR(m, c, f); got != best {
				t.Errorf("trial %d: TPR at %v = %v, ROC says %v", trial, f, got, best)
			}
		}
	}
	if ROC(nil, []float64{1}) != nil {
		t.Error("ROC without members is not nil")
	}
}

// shiftedNormals are 60 member scores from N(1, 1) and 200 control
// scores from N(0, 1), the same every call.
func shiftedNormals() (members, controls []float64) {
	rng := rand.New(rand.NewPCG(5, 6))
	members, controls = make([]float64, 60), make([]float64, 200)
	for i := range members {
		members[i] = rng.NormFloat64() + 1
	}
	for i := range controls {
		controls[i] = rng.NormFloat64()
	}
	return members, controls
}

func TestMIABootstrap(t *testing.T) {
	m, c := shiftedNormals()
	auc, tpr := MIABootstrap(m, c, LowFPRs, 500, 9)
	a := AUC(m, c)
	if !(auc[0] < a && a < auc[1]) || auc[1]-auc[0] > 0.25 {
		t.Errorf("AUC %v, interval %v: want a narrow interval around it", a, auc)
	}
	for i, f := range LowFPRs {
		v := TPRAtFPR(m, c, f)
		if !(tpr[i][0] <= v && v <= tpr[i][1]) {
			t.Errorf("TPR at %v = %v outside its interval %v", f, v, tpr[i])
		}
	}
	again, _ := MIABootstrap(m, c, LowFPRs, 500, 9)
	if again != auc {
		t.Errorf("same seed, intervals %v and %v", auc, again)
	}
	// Stratified: a single control still gives every resample a control,
	// so the interval is defined.
	if one, _ := MIABootstrap(m, c[:1], LowFPRs, 200, 9); math.IsNaN(one[0]) {
		t.Error("one control: AUC interval NaN")
	}
	if none, tp := MIABootstrap(m, nil, LowFPRs, 200, 9); !math.IsNaN(none[0]) || !math.IsNaN(tp[1][1]) {
		t.Error("no controls: intervals should be NaN")
	}
}

// TestQuantileLinear pins quantile to numpy's default (linear) rule,
// sorted[i] + f·(sorted[i+1] − sorted[i]) at position q·(n−1): a flipped
// interpolation sign or a dropped interpolation term (the lower order
// statistic alone) moves every bootstrap interval, which the bootstrap
// tests' loose bounds do not notice. Values from numpy.quantile.
func TestQuantileLinear(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5}
	for _, tc := range []struct{ q, want float64 }{
		{0, 1},
		{0.025, 1.1}, // position 0.1
		{0.5, 3},
		{0.975, 4.9}, // position 3.9
		{1, 5},
	} {
		if got := quantile(xs, tc.q); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("quantile(%v, %v) = %v, want %v", xs, tc.q, got, tc.want)
		}
	}
}

// TestMIABootstrapEachFPR: the TPR interval at each FPR is computed at that
// FPR, not at fprs[0]. The resamples are drawn from the generator alone
// (fprs only choose where TPR is read), so the interval at 0.5 must be the
// same whether 0.5 is asked for first or second; TestMIABootstrap's
// fprs (0.1 %, 1 %) are too close together to tell.
func TestMIABootstrapEachFPR(t *testing.T) {
	m, c := shiftedNormals()
	_, two := MIABootstrap(m, c, []float64{0.001, 0.5}, 300, 9)
	_, alone := MIABootstrap(m, c, []float64{0.5}, 300, 9)
	if two[1] != alone[0] {
		t.Errorf("TPR interval at 50 %% FPR asked second = %v, asked alone = %v; want equal", two[1], alone[0])
	}
	if two[0] == two[1] {
		t.Errorf("TPR intervals at 0.1 %% and 50 %% FPR both %v; want different", two[0])
	}
}

func TestMinK(t *testing.T) {
	l := []float32{1, 5, 2, 4, 3}
	for _, tc := range []struct{ frac, want float64 }{
		{0.2, 5},   // int(1) = 1 token
		{0.4, 4.5}, // 5, 4
		{0.5, 4.5}, // int(2.5) = 2, as Shi et al.'s code: 5, 4
		{0.01, 5},  // at least one
		{1, 3},     // all: the mean loss
	} {
		if got := MinK(l, tc.frac); !near(got, tc.want) {
			t.Errorf("MinK(%v) = %v, want %v", tc.frac, got, tc.want)
		}
	}
	if !math.IsNaN(MinK(nil, 0.2)) || !math.IsNaN(MeanLoss(nil)) {
		t.Error("no tokens should give NaN")
	}
	// A NaN loss gives NaN wherever it stands, as it does to MeanLoss.
	nan := float32(math.NaN())
	for _, l := range [][]float32{{nan, 1, 3, 0}, {1, 3, 0, nan}, {3, 1, nan, 0, 2, 5}, {0, 2, 5, 3, 1, nan}} {
		if got := MinK(l, 0.5); !math.IsNaN(got) {
			t.Errorf("MinK(%v, 0.5) = %v, want NaN", l, got)
		}
	}
}

func TestZlibLen(t *testing.T) {
	rep := ZlibLen(string(make([]byte, 10000)))
	if rep > 100 {
		t.Errorf("10,000 zero bytes compress to %d bytes, want far fewer", rep)
	}
	// Empty input still costs the zlib header, final block and Adler-32
	// (8 bytes from C zlib, 11 from Go's deflate).
	if n := ZlibLen(""); n < 6 || n > 12 {
		t.Errorf("ZlibLen(\"\") = %d, want a handful of bytes", n)
	}
}

func TestWilsonCIPaperRates(t *testing.T) {
	// The README's rates: 0 and 32 of 32, and the paper's 84 of 100.
	for _, tc := range []struct {
		k, n   int
		lo, hi float64
	}{
		// Computed apart (the formula in Python, z = 1.959963984540054): for
		// 0/32 the upper end is
		// (z²/n)/(1 + z²/n); 84/100 is centre 0.8274222 ± 0.0716249.
		{0, 32, 0, 0.107179},
		{32, 32, 0.892821, 1},
		{84, 100, 0.755797, 0.899047},
	} {
		lo, hi := WilsonCI(tc.k, tc.n)
		if math.Abs(lo-tc.lo) > 1e-6 || math.Abs(hi-tc.hi) > 1e-6 {
			t.Errorf("WilsonCI(%d, %d) = [%.6f, %.6f], want [%.6f, %.6f]", tc.k, tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
	if lo, _ := WilsonCI(0, 0); !math.IsNaN(lo) {
		t.Errorf("WilsonCI(0, 0) = %v, want NaN", lo)
	}
}

func TestBootstrapCI(t *testing.T) {
	xs := []float64{0, 1, 0, 1, 1, 0, 1, 1, 1, 0, 1, 1}
	lo, hi := BootstrapCI(xs, 2000, 7)
	lo2, hi2 := BootstrapCI(xs, 2000, 7)
	if lo != lo2 || hi != hi2 {
		t.Fatalf("same seed, different intervals: [%v %v] vs [%v %v]", lo, hi, lo2, hi2)
	}
	m := Mean(xs)
	if !(lo < m && m < hi && lo >= 0 && hi <= 1) {
		t.Errorf("interval [%v, %v] should contain the mean %v inside [0, 1]", lo, hi, m)
	}
	// For a proportion of 8/12 the normal-theory half-width is about 0.27.
	if w := hi - lo; w < 0.35 || w > 0.7 {
		t.Errorf("interval width %v, want about 0.53", w)
	}
	if lo, hi := BootstrapCI([]float64{0.3, 0.3, 0.3}, 500, 1); lo != 0.3 || hi != 0.3 {
		t.Errorf("constant data: [%v, %v], want [0.3, 0.3]", lo, hi)
	}
	if lo, _ := BootstrapCI(nil, 500, 1); !math.IsNaN(lo) {
		t.Error("no data: want NaN")
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mod func(*Config)
		key string
	}{
		{func(c *Config) { c.Bootstrap = -1 }, "eval.bootstrap"},
		{func(c *Config) { c.Bootstrap = 10 }, "eval.bootstrap"},
		{func(c *Config) { c.MinKFraction = 0 }, "eval.mink_fraction"},
		{func(c *Config) { c.MinKFraction = 1.5 }, "eval.mink_fraction"},
		{func(c *Config) { c.FPR = 1 }, "eval.fpr"},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("want an error naming %s, got %v", tc.key, err)
		}
	}
}

func TestWilsonCI(t *testing.T) {
	// 0 of 4: upper = (z²/n)/(1+z²/n) = 0.9604/1.9604.
	if lo, hi := WilsonCI(0, 4); lo != 0 || math.Abs(hi-0.48990) > 1e-4 {
		t.Errorf("0/4: [%v, %v], want [0, 0.4899]", lo, hi)
	}
	// 5 of 10: centred on 0.5, half-width 1.96·sqrt(.025+.0096)/1.384 = 0.2634.
	if lo, hi := WilsonCI(5, 10); math.Abs(lo-0.2366) > 1e-3 || math.Abs(hi-0.7634) > 1e-3 {
		t.Errorf("5/10: [%v, %v], want [0.2366, 0.7634]", lo, hi)
	}
	if lo, _ := WilsonCI(0, 0); !math.IsNaN(lo) {
		t.Error("n = 0: want NaN")
	}
}
