package calibrated

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// The fixture of most tests: K = 4 reference models, N = 3 candidates.
// Models (0,1) and (2,3) are complementary pairs, as Assign makes them.
//
//	candidate 0: IN {k0: 1, k2: 3},   OUT {k1: 0, k3: 1},  target 2.5
//	candidate 1: IN {k1: -1, k2: 3},  OUT {k0: -2, k3: -4}, target -3.5
//	candidate 2: IN {k0: 10, k3: 10}, OUT {k1: 4, k2: 8},  target 10
//
// Per candidate (population std, dividing by the count of 2):
//
//	0: μin = 2, σin = 1; μout = 0.5, σout = 0.5
//	1: μin = 1, σin = 2; μout = -3,  σout = 1
//	2: μin = 10, σin = 0 (+1e-30); μout = 6, σout = 2
//
// Pooled within candidates (GlobalVariance):
//
//	σin²  = ((1+1) + (4+4) + (0+0)) / 6 = 10/6 = 5/3
//	σout² = ((0.25+0.25) + (1+1) + (4+4)) / 6 = 10.5/6 = 1.75
var (
	in4 = [][]bool{
		{true, false, true},
		{false, true, false},
		{true, true, false},
		{false, false, true},
	}
	sig4 = [][]float64{
		{1, -2, 10},
		{0, -1, 4},
		{3, 3, 8},
		{1, -4, 10},
	}
	target4 = []float64{2.5, -3.5, 10}
)

// near reports whether got equals want to 1e-12 relative, exactly when
// want is 0 (so a tiny value such as log Φ(9) = -1.1e-19 must keep its
// digits); NaN matches only NaN and infinities only themselves.
func near(got, want float64) bool {
	switch {
	case math.IsNaN(want) || math.IsNaN(got):
		return math.IsNaN(want) && math.IsNaN(got)
	case math.IsInf(want, 0) || math.IsInf(got, 0):
		return got == want
	}
	return math.Abs(got-want) <= 1e-12*math.Abs(want)
}

func checkScores(t *testing.T, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d scores %v, want %d %v", len(got), got, len(want), want)
	}
	for j := range want {
		if !near(got[j], want[j]) {
			t.Errorf("candidate %d: got %.17g, want %.17g", j, got[j], want[j])
		}
	}
}

func TestLiRAOnline(t *testing.T) {
	for _, c := range []struct {
		name string
		opt  LiRAOptions
		want []float64
	}{
		{"per-example", LiRAOptions{}, []float64{
			// log N(2.5; 2, 1) = -h - ln 1 - ½(0.5/1)² = -h - 0.125
			// log N(2.5; 0.5, 0.5) = -h - ln 0.5 - ½(2/0.5)² = -h + ln 2 - 8
			7.875 - math.Ln2,
			// log N(-3.5; 1, 2) = -h - ln 2 - ½(4.5/2)² = -h - ln 2 - 2.53125
			// log N(-3.5; -3, 1) = -h - ½(0.5)² = -h - 0.125
			-2.40625 - math.Ln2,
			// σin = 1e-30: log N(10; 10, 1e-30) = -h - ln 1e-30 = -h + 30 ln 10
			// log N(10; 6, 2) = -h - ln 2 - ½(4/2)² = -h - ln 2 - 2
			30*math.Ln10 + math.Ln2 + 2,
		}},
		{"global variance", LiRAOptions{GlobalVariance: true}, []float64{
			// ln(σout/σin) - (t-μin)²/(2·5/3) + (t-μout)²/(2·1.75)
			//   = ½ ln(1.75/(5/3)) - 0.3(t-μin)² + (t-μout)²/3.5, ½ ln 1.05 = 0.024395...
			0.5*math.Log(1.05) - 0.3*0.25 + 4/3.5,     // t-μin = 0.5, t-μout = 2
			0.5*math.Log(1.05) - 0.3*20.25 + 0.25/3.5, // t-μin = -4.5, t-μout = -0.5
			0.5*math.Log(1.05) - 0 + 16/3.5,           // t-μin = 0, t-μout = 4
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := LiRAOnline(target4, sig4, in4, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			checkScores(t, got, c.want)
		})
	}
}

func TestLiRAOffline(t *testing.T) {
	// log Φ(z) to 20 digits (mpmath, log(ncdf(z))).
	for _, c := range []struct {
		name string
		opt  LiRAOptions
		want []float64
	}{
		{"per-example", LiRAOptions{}, []float64{
			-3.1671743377489263860e-05, // z = (2.5-0.5)/0.5 = 4
			-1.1759117615936186089,     // z = (-3.5+3)/1 = -0.5
			-0.023012909328963488465,   // z = (10-6)/2 = 2
		}},
		{"global variance", LiRAOptions{GlobalVariance: true}, []float64{
			-0.067513618683062212266,  // z = 2/√1.75 = 1.5118578920369089
			-1.0420566594753577937,    // z = -0.5/√1.75 = -0.37796447300922723
			-0.0012492344260747758854, // z = 4/√1.75 = 3.0237157840738178
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := LiRAOffline(target4, sig4, in4, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			checkScores(t, got, c.want)
		})
	}
}

// A candidate without OUT values is NaN in both modes and one without IN
// values is NaN online; constant reference values (σ = 0) stay finite.
//
//	candidate 0: IN {k0: 1, k1: 5}, no OUT
//	candidate 1: IN {k1: 4}, OUT {k0: 2}, target 4 (σin = σout = 1e-30)
//	candidate 2: no IN, OUT {k0: 3, k1: 7}, target 5 (μout = 5, σout = 2)
//	candidate 3: IN {k0: 1}, OUT {k1: 3}, target 0
func TestLiRAMissingAndConstant(t *testing.T) {
	in := [][]bool{{true, false, false, true}, {true, true, false, false}}
	sig := [][]float64{{1, 2, 3, 1}, {5, 4, 7, 3}}
	target := []float64{0, 4, 5, 0}
	nan := math.NaN()
	for _, c := range []struct {
		name    string
		offline bool
		opt     LiRAOptions
		want    []float64
	}{
		// Candidate 1: log N(4; 4, 1e-30) - log N(4; 2, 1e-30) = ½(2/1e-30)² = 2e60.
		// Candidate 3: log N(0; 1, 1e-30) - log N(0; 3, 1e-30) = -½e60 + ½·9e60 = 4e60.
		{"online", false, LiRAOptions{}, []float64{nan, 2e60, nan, 4e60}},
		// Candidate 1: z = 2e30, log Φ = 0 (rounded). Candidate 2: z = 0,
		// log Φ(0) = -ln 2. Candidate 3: z = -3e30, log Φ ≈ -½(3e30)² = -4.5e60.
		{"offline", true, LiRAOptions{}, []float64{nan, 0, -math.Ln2, -4.5e60}},
		// Pooled over candidates with two OUT values, candidate 2 alone:
		// σout² = ((3-5)² + (7-5)²)/2 = 4; candidates 1 and 3 have one
		// each and candidate 0 none, which add nothing. Candidate 2:
		// z = 0 → -ln 2; candidate 1: z = (4-2)/2 = 1, log Φ(1) =
		// ln 0.8413447460685429; candidate 3: z = (0-3)/2 = -1.5,
		// log Φ(-1.5) = ln 0.0668072012688581 (standard normal tables).
		{"offline global", true, LiRAOptions{GlobalVariance: true}, []float64{nan, -0.17275377902344988, -math.Ln2, -2.7059444008238893}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := LiRAOnline
			if c.offline {
				f = LiRAOffline
			}
			got, err := f(target, sig, in, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			checkScores(t, got, c.want)
		})
	}
}

// TestLiRAOneValuePerCandidate: at K = 2 every candidate is IN for one
// model and OUT for the other, so no candidate has a spread of its own.
// The shared σ is then np.std of every value on the side (plot.py's
// fix_variance), not zero: offline scores rank by t − μout instead of
// tying at log Φ = 0, and online scores are finite.
func TestLiRAOneValuePerCandidate(t *testing.T) {
	in := [][]bool{{true, false, true, false}, {false, true, false, true}}
	sig := [][]float64{{1, 2, 3, 4}, {5, 6, 7, 8}}
	target := []float64{9, 8, 5, 4}
	// OUT values: 5, 2, 7, 4 (mean 4.5; squared deviations 0.25, 6.25,
	// 6.25, 0.25: σ² = 13/4). IN values: 1, 6, 3, 8 (mean 4.5; 12.25,
	// 2.25, 2.25, 12.25: σ² = 29/4).
	sdOut, sdIn := math.Sqrt(13.0/4), math.Sqrt(29.0/4)
	muOut := []float64{5, 2, 7, 4}
	muIn := []float64{1, 6, 3, 8}
	var wantOff, wantOn []float64
	for j, x := range target {
		z := (x - muOut[j]) / sdOut
		wantOff = append(wantOff, math.Log(0.5*math.Erfc(-z/math.Sqrt2)))
		wantOn = append(wantOn, logNormal(x, muIn[j], sdIn)-logNormal(x, muOut[j], sdOut))
	}
	opt := LiRAOptions{GlobalVariance: true}
	off, err := LiRAOffline(target, sig, in, opt)
	if err != nil {
		t.Fatal(err)
	}
	checkScores(t, off, wantOff)
	// The ranking is that of t − μout: 4, 6, -2, 0.
	if !(off[1] > off[0] && off[0] > off[3] && off[3] > off[2]) {
		t.Errorf("offline scores %v do not rank by t − μout", off)
	}
	on, err := LiRAOnline(target, sig, in, opt)
	if err != nil {
		t.Fatal(err)
	}
	checkScores(t, on, wantOn)
}

func TestLogNormalCDF(t *testing.T) {
	// log Φ(z) from mpmath at 40 digits, across the three branches.
	for _, c := range []struct{ z, want float64 }{
		{9, -1.1285884059538406478e-19}, // log1p branch: Φ(9) = 1 - 1.1e-19
		{4, -3.1671743377489263860e-05},
		{1, -0.17275377902344988953},
		{0, -math.Ln2},
		{-0.5, -1.1759117615936186089},
		{-5, -15.064998393988725736},
		{-10, -53.231285150512470578},
		{-29.5, -439.42947460915022775}, // last erfc point before the series
		{-30.5, -469.46273732291211439}, // first series point
		{-36, -652.50322759379839685},
		{-40, -804.60844201375378817},
		{-1000, -500007.82669481218431},
		{-1e15, -5.0e+29},
		{math.Inf(1), 0},
		{math.Inf(-1), math.Inf(-1)},
		{math.NaN(), math.NaN()},
	} {
		if got := logNormalCDF(c.z); !near(got, c.want) {
			t.Errorf("logNormalCDF(%g) = %.17g, want %.17g", c.z, got, c.want)
		}
	}
}

func TestLogitOfLogProb(t *testing.T) {
	for _, c := range []struct{ logp, want float64 }{
		// log p - log(1-p) with 1 - e^{-x} = x(1 - x/2 + x²/6 - …):
		// -x - ln x + x/2 - x²/24 + … = 6.907755278982137 - 0.0005 - 4.17e-8
		{-1e-3, 6.9072552373154707326},
		// 1 - exp(-1e-20) rounds to 0, which would give +Inf; the answer is -ln 1e-20.
		{-1e-20, 46.051701859880913680},
		// log(1 - e^{-50}) = -1.9e-22 vanishes next to -50.
		{-50, -50},
		{-1, -0.54132485461291810898}, // -1 - ln(1 - 1/e)
		// 1 - p floored at score.py's 1e-45: ln 1e45.
		{0, 103.61632918473205},
		{-1e-50, 103.61632918473205},
		{0.5, 103.61632918473205},
		// Just above the floor, exact again: -ln 1e-44.
		{-1e-44, 101.31374409173802},
		{math.Inf(-1), math.Inf(-1)},
		{math.NaN(), math.NaN()},
	} {
		if got := LogitOfLogProb(c.logp); !near(got, c.want) {
			t.Errorf("LogitOfLogProb(%g) = %.17g, want %.17g", c.logp, got, c.want)
		}
	}
}

// RMIA on the in4 layout, with probabilities that are exact in binary so
// that the ties LR = γ below are exact too.
//
//	refProb (k × candidate): candidate 0 .25 .5 .25 .5, candidate 1 all .5,
//	candidate 2 .125 .375 .125 .375; targetProb .75, .25, .25.
//	population z0..z3: every reference model gives .5, .5, .25, .25;
//	the target gives .25, .5, .375, .625.
var (
	refP4 = [][]float64{
		{0.25, 0.5, 0.125},
		{0.5, 0.5, 0.375},
		{0.25, 0.5, 0.125},
		{0.5, 0.5, 0.375},
	}
	targetP4 = []float64{0.75, 0.25, 0.25}
	popRef4  = [][]float64{
		{0.5, 0.5, 0.25, 0.25},
		{0.5, 0.5, 0.25, 0.25},
		{0.5, 0.5, 0.25, 0.25},
		{0.5, 0.5, 0.25, 0.25},
	}
	popTarget4 = []float64{0.25, 0.5, 0.375, 0.625}
)

func TestRMIA(t *testing.T) {
	// Online: Pr(x) = mean of all four: .375, .5, .25, so
	//   rx = .75/.375 = 2, .25/.5 = 0.5, .25/.25 = 1;
	// Pr(z) = .5, .5, .25, .25, so rz = 0.5, 1, 1.5, 2.5.
	// LR = rx/rz >= γ:
	//   γ = 1: x0 beats rz <= 2 (3 of 4); x1 only rz = 0.5 (a tie, LR = 1);
	//          x2 rz = 0.5 and 1 (the tie).
	//   γ = 2: x0 rz <= 1 (2/1 = 2 a tie); x1 none; x2 rz = 0.5 (a tie).
	// Offline, a = 0.5: Pr(·) = ½(1.5·mean + 0.5) = 0.75·mean + 0.25.
	//   OUT means .5 (k1, k3), .5 (k0, k3), .25 (k1, k2) → Pr(x) = .625, .625, .4375,
	//   rx = 1.2, 0.4, 4/7; Pr(z) = .625, .625, .4375, .4375,
	//   rz = 0.4, 0.8, 6/7, 10/7.
	//   γ = 1: x0 beats 0.4, 0.8, 6/7 (1.2/(10/7) = 0.84); x1 only 0.4 (a
	//          tie); x2 only 0.4 (LR 1.43, then 0.71).
	//          Without the a-approximation on z, z0's rz would be .25/.5 =
	//          0.5 and x1 would score 0: this row pins Privacy Meter's choice.
	//   γ = 2: x0 only 0.4 (LR 3, then 1.5); x1, x2 none.
	for _, c := range []struct {
		name string
		opt  RMIAOptions
		want []float64
	}{
		{"online γ=1", RMIAOptions{Gamma: 1}, []float64{0.75, 0.25, 0.5}},
		{"online γ=2", RMIAOptions{Gamma: 2}, []float64{0.5, 0, 0.25}},
		{"offline a=0.5 γ=1", RMIAOptions{Offline: true, A: 0.5, Gamma: 1}, []float64{0.75, 0.25, 0.25}},
		{"offline a=0.5 γ=2", RMIAOptions{Offline: true, A: 0.5, Gamma: 2}, []float64{0.25, 0, 0}},
		// a = 1: Pr = mean_OUT = .5, .5, .25 and Pr(z) = .5, .5, .25, .25:
		// rx = 1.5, 0.5, 1 against rz = 0.5, 1, 1.5, 2.5.
		{"offline a=1 γ=1", RMIAOptions{Offline: true, A: 1, Gamma: 1}, []float64{0.75, 0.25, 0.5}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := RMIA(targetP4, refP4, in4, popTarget4, popRef4, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			checkScores(t, got, c.want)
		})
	}
}

// Offline, a candidate with no OUT model is NaN; a NaN probability gives
// NaN rather than a fraction.
func TestRMIANaN(t *testing.T) {
	in := [][]bool{{true, false, false}, {true, true, false}}
	ref := [][]float64{{0.5, 0.5, math.NaN()}, {0.5, 0.5, 0.5}}
	target := []float64{0.5, math.NaN(), 0.5}
	pop := [][]float64{{0.5}, {0.5}}
	got, err := RMIA(target, ref, in, []float64{0.5}, pop, RMIAOptions{Offline: true, A: 0.3, Gamma: 1})
	if err != nil {
		t.Fatal(err)
	}
	for j, g := range got {
		if !math.IsNaN(g) {
			t.Errorf("candidate %d: got %v, want NaN", j, g)
		}
	}
}

func TestCounterfactual(t *testing.T) {
	// mean IN - mean OUT: (1+3)/2 - (0+1)/2 = 1.5; (-1+3)/2 - (-2-4)/2 = 4;
	// (10+10)/2 - (4+8)/2 = 4.
	got, err := Counterfactual(sig4, in4)
	if err != nil {
		t.Fatal(err)
	}
	checkScores(t, got, []float64{1.5, 4, 4})
	// Candidate 0 is IN for both models, candidate 1 for neither.
	got, err = Counterfactual([][]float64{{1, 2, 3}, {5, 6, 8}}, [][]bool{{true, false, true}, {true, false, false}})
	if err != nil {
		t.Fatal(err)
	}
	checkScores(t, got, []float64{math.NaN(), math.NaN(), 3 - 8})
}

func TestAssign(t *testing.T) {
	for _, c := range []struct {
		n, K int
		seed uint64
	}{{0, 2, 1}, {1, 2, 1}, {1, 4, 9}, {7, 4, 3}, {10, 16, 1234}, {11, 6, 0}, {1000, 8, 7}} {
		in, err := Assign(c.n, c.K, c.seed)
		if err != nil {
			t.Fatalf("Assign(%d, %d, %d): %v", c.n, c.K, c.seed, err)
		}
		if len(in) != c.K {
			t.Fatalf("Assign(%d, %d, %d): %d rows", c.n, c.K, c.seed, len(in))
		}
		for j := 0; j < c.n; j++ {
			count := 0
			for k := 0; k < c.K; k++ {
				if in[k][j] {
					count++
				}
				if k%2 == 1 && in[k][j] == in[k-1][j] {
					t.Errorf("n=%d K=%d: candidate %d: models %d and %d not complementary", c.n, c.K, j, k-1, k)
				}
			}
			if count != c.K/2 {
				t.Errorf("n=%d K=%d: candidate %d IN for %d models, want %d", c.n, c.K, j, count, c.K/2)
			}
		}
		for p := 0; p < c.K/2; p++ {
			want := c.n / 2 // even pairs give model 2p the smaller half
			if p%2 == 1 {
				want = (c.n + 1) / 2
			}
			if got := countTrue(in[2*p]); got != want {
				t.Errorf("n=%d K=%d: model %d trains on %d, want %d", c.n, c.K, 2*p, got, want)
			}
		}
		again, _ := Assign(c.n, c.K, c.seed)
		if !reflect.DeepEqual(in, again) {
			t.Errorf("n=%d K=%d seed=%d: two calls differ", c.n, c.K, c.seed)
		}
		// Every even prefix of a larger set is the smaller set.
		for k := 2; k < c.K; k += 2 {
			small, _ := Assign(c.n, k, c.seed)
			if !reflect.DeepEqual(in[:k], small) {
				t.Errorf("n=%d K=%d seed=%d: first %d models differ from Assign(n, %d)", c.n, c.K, c.seed, k, k)
			}
		}
	}
	a, _ := Assign(10, 4, 1)
	b, _ := Assign(10, 4, 2)
	if reflect.DeepEqual(a, b) {
		t.Error("seeds 1 and 2 give the same assignment")
	}
}

// TestAssignPinned pins one assignment so that any change to the
// generator, the shuffle or the split shows up: Assign must give the same
// rows on every machine and Go version. The rows were cross-checked with
// a separate Python rendering of the documented algorithm (splitmix64,
// Lemire's bounded draw, Fisher–Yates from the identity per pair, model
// 2p taking the first ⌊5/2⌋ = 2 of pair 0's order and ⌈5/2⌉ = 3 of pair 1's).
func TestAssignPinned(t *testing.T) {
	got, err := Assign(5, 4, 42)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]bool{
		{false, true, true, false, false},
		{true, false, false, true, true},
		{false, true, true, false, true},
		{true, false, false, true, false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Assign(5, 4, 42) = %v, want %v", got, want)
	}
}

func countTrue(b []bool) int {
	n := 0
	for _, x := range b {
		if x {
			n++
		}
	}
	return n
}

func TestBadInputs(t *testing.T) {
	ok := RMIAOptions{Gamma: 1}
	for _, c := range []struct {
		name, want string
		call       func() error
	}{
		{"Assign K odd", "K = 3", func() error { _, err := Assign(4, 3, 1); return err }},
		{"Assign K 0", "K = 0", func() error { _, err := Assign(4, 0, 1); return err }},
		{"Assign K 1", "K = 1", func() error { _, err := Assign(4, 1, 1); return err }},
		{"Assign K negative", "K = -2", func() error { _, err := Assign(4, -2, 1); return err }},
		{"Assign n negative", "n = -1", func() error { _, err := Assign(-1, 2, 1); return err }},
		{"online K 1", "need at least 2", func() error {
			_, err := LiRAOnline([]float64{1}, [][]float64{{1}}, [][]bool{{true}}, LiRAOptions{})
			return err
		}},
		{"offline K 0", "need at least 1", func() error { _, err := LiRAOffline([]float64{1}, nil, nil, LiRAOptions{}); return err }},
		{"target longer", "want 4", func() error {
			_, err := LiRAOnline([]float64{1, 2, 3, 4}, sig4, in4, LiRAOptions{})
			return err
		}},
		{"in rows", "4 rows of reference values but 3", func() error {
			_, err := LiRAOffline(target4, sig4, in4[:3], LiRAOptions{})
			return err
		}},
		{"in row short", "reference model 1 has 2 memberships", func() error {
			in := [][]bool{in4[0], in4[1][:2], in4[2], in4[3]}
			_, err := LiRAOnline(target4, sig4, in, LiRAOptions{})
			return err
		}},
		{"signal row short", "reference model 2 has 1 values", func() error {
			sig := [][]float64{sig4[0], sig4[1], sig4[2][:1], sig4[3]}
			_, err := Counterfactual(sig, in4)
			return err
		}},
		{"counterfactual K 1", "need at least 2", func() error { _, err := Counterfactual(sig4[:1], in4[:1]); return err }},
		{"rmia a < 0", "a = -0.1", func() error { return rmiaErr(RMIAOptions{Offline: true, A: -0.1, Gamma: 1}) }},
		{"rmia a > 1", "a = 1.5", func() error { return rmiaErr(RMIAOptions{Offline: true, A: 1.5, Gamma: 1}) }},
		{"rmia a NaN", "a = NaN", func() error { return rmiaErr(RMIAOptions{A: math.NaN(), Gamma: 1}) }},
		{"rmia γ 0", "gamma = 0", func() error { return rmiaErr(RMIAOptions{}) }},
		{"rmia γ < 0", "gamma = -1", func() error { return rmiaErr(RMIAOptions{Gamma: -1}) }},
		{"rmia γ Inf", "gamma = +Inf", func() error { return rmiaErr(RMIAOptions{Gamma: math.Inf(1)}) }},
		{"rmia γ NaN", "gamma = NaN", func() error { return rmiaErr(RMIAOptions{Gamma: math.NaN()}) }},
		{"rmia M 0", "no population samples", func() error {
			_, err := RMIA(targetP4, refP4, in4, nil, [][]float64{{}, {}, {}, {}}, ok)
			return err
		}},
		{"rmia pop K", "3 reference models on the population but 4", func() error {
			_, err := RMIA(targetP4, refP4, in4, popTarget4, popRef4[:3], ok)
			return err
		}},
		{"rmia pop row", "reference model 0 has 3 population values, want 4", func() error {
			pop := [][]float64{popRef4[0][:3], popRef4[1], popRef4[2], popRef4[3]}
			_, err := RMIA(targetP4, refP4, in4, popTarget4, pop, ok)
			return err
		}},
		{"rmia target short", "want 2", func() error {
			_, err := RMIA(targetP4[:2], refP4, in4, popTarget4, popRef4, ok)
			return err
		}},
		{"rmia pop prob 0", "population sample 1 = 0", func() error {
			_, err := RMIA(targetP4, refP4, in4, []float64{0.25, 0, 0.375, 0.625}, popRef4, ok)
			return err
		}},
		{"rmia pop ref > 1", "population sample 2: probability 1.5", func() error {
			pop := [][]float64{popRef4[0], {0.5, 0.5, 1.5, 0.25}, popRef4[2], popRef4[3]}
			_, err := RMIA(targetP4, refP4, in4, popTarget4, pop, ok)
			return err
		}},
		{"rmia target negative", "candidate 0 = -0.1", func() error {
			_, err := RMIA([]float64{-0.1, 0.25, 0.25}, refP4, in4, popTarget4, popRef4, ok)
			return err
		}},
		{"rmia ref Inf", "candidate 1: probability +Inf", func() error {
			ref := [][]float64{refP4[0], refP4[1], {0.25, math.Inf(1), 0.125}, refP4[3]}
			_, err := RMIA(targetP4, ref, in4, popTarget4, popRef4, ok)
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			if err == nil {
				t.Fatalf("no error, want one containing %q", c.want)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "calibrated: ") || !strings.Contains(msg, c.want) {
				t.Errorf("error %q: want the package prefix and %q", msg, c.want)
			}
		})
	}
}

func rmiaErr(opt RMIAOptions) error {
	_, err := RMIA(targetP4, refP4, in4, popTarget4, popRef4, opt)
	return err
}

// TestLiRAMemorizedWindow: a window whose summed log-likelihood is exactly
// 0 (every token certain in float32; an IN reference of a memorized
// document reaches it) scores finitely, in both modes and both variances.
// Before LogitOfLogProb floored 1 − p it was +Inf, whose moments are NaN:
// with the pooled variance every candidate's online score was NaN.
func TestLiRAMemorizedWindow(t *testing.T) {
	in := [][]bool{{true, false, true}, {false, true, false}, {true, true, false}, {false, false, true}}
	llSum := [][]float64{{0, -30, -40}, {-20, -31, -45}, {-5, -29, -41}, {-21, -33, -39}}
	sig := make([][]float64, len(llSum))
	for k, row := range llSum {
		for _, ll := range row {
			sig[k] = append(sig[k], LogitOfLogProb(ll))
		}
	}
	for _, targetLL := range [][]float64{{-1, -25, -42}, {0, -25, -42}} {
		var target []float64
		for _, ll := range targetLL {
			target = append(target, LogitOfLogProb(ll))
		}
		for _, global := range []bool{true, false} {
			opt := LiRAOptions{GlobalVariance: global}
			on, err := LiRAOnline(target, sig, in, opt)
			if err != nil {
				t.Fatal(err)
			}
			off, err := LiRAOffline(target, sig, in, opt)
			if err != nil {
				t.Fatal(err)
			}
			for j := range target {
				if math.IsNaN(on[j]) || math.IsInf(on[j], 0) || math.IsNaN(off[j]) || math.IsInf(off[j], 0) {
					t.Errorf("target %v, global variance %v: candidate %d scores online %v, offline %v; want finite", targetLL, global, j, on[j], off[j])
				}
			}
		}
	}
}

// TestLiRAInfiniteSignal: a signal that is not finite (LiRA's own never
// is, since LogitOfLogProb floors 1 − p) makes the side it is on count
// as empty: its candidate's online score is NaN, and the shared variance,
// so the other candidates' scores, are as the finite values give them.
//
//	candidate 0: IN {k0: +Inf, k2: 7}, OUT {k1: 3, k3: 1} (μ 2, ss 2)
//	candidate 1: IN {k1: 4, k2: 2} (μ 3, ss 2), OUT {k0: 1, k3: 5} (μ 3, ss 8)
//	candidate 2: IN {k0: 2, k3: 4} (μ 3, ss 2), OUT {k1: 6, k2: 3} (μ 4.5, ss 4.5)
//
// Pooled: σin² = (2 + 2)/4 = 1 without candidate 0; σout² = (2 + 8 + 4.5)/6.
func TestLiRAInfiniteSignal(t *testing.T) {
	in := [][]bool{{true, false, true}, {false, true, false}, {true, true, false}, {false, false, true}}
	sig := [][]float64{{math.Inf(1), 1, 2}, {3, 4, 6}, {7, 2, 3}, {1, 5, 4}}
	target := []float64{4, 3, 5}
	sdOut := math.Sqrt(14.5 / 6)
	nan := math.NaN()
	wantOn := []float64{nan, logNormal(3, 3, 1) - logNormal(3, 3, sdOut), logNormal(5, 3, 1) - logNormal(5, 4.5, sdOut)}
	on, err := LiRAOnline(target, sig, in, LiRAOptions{GlobalVariance: true})
	if err != nil {
		t.Fatal(err)
	}
	checkScores(t, on, wantOn)
	// Offline, candidate 0's OUT values are finite: it scores too.
	wantOff := []float64{logNormalCDF((4 - 2) / sdOut), -math.Ln2, logNormalCDF(0.5 / sdOut)}
	off, err := LiRAOffline(target, sig, in, LiRAOptions{GlobalVariance: true})
	if err != nil {
		t.Fatal(err)
	}
	checkScores(t, off, wantOff)
	// Per candidate, the same NaN and finite scores.
	own, err := LiRAOnline(target, sig, in, LiRAOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(own[0]) || math.IsNaN(own[1]) || math.IsNaN(own[2]) {
		t.Errorf("per-candidate variance: online scores %v, want NaN then two numbers", own)
	}
}

// TestLiRAInfiniteSignalOneValue: at K = 2, where the shared σ is the
// spread of all the side's values, an infinite one is left out of it.
// OUT values without candidate 0's: 2, 7, 4 (mean 13/3).
func TestLiRAInfiniteSignalOneValue(t *testing.T) {
	in := [][]bool{{true, false, true, false}, {false, true, false, true}}
	sig := [][]float64{{1, 2, 3, 4}, {math.Inf(-1), 6, 7, 8}}
	target := []float64{9, 8, 5, 4}
	m := 13.0 / 3
	sdOut := math.Sqrt(((2-m)*(2-m) + (7-m)*(7-m) + (4-m)*(4-m)) / 3)
	off, err := LiRAOffline(target, sig, in, LiRAOptions{GlobalVariance: true})
	if err != nil {
		t.Fatal(err)
	}
	checkScores(t, off, []float64{math.NaN(), logNormalCDF((8 - 2) / sdOut), logNormalCDF((5 - 7) / sdOut), logNormalCDF(0)})
}

// TestLiRAOnlineInfiniteTarget: a target signal of −Inf (a suffix token
// of probability 0 under the target) scores the likelihood ratio's limit,
// not NaN (−Inf − −Inf), which left the candidate out of the AUC:
//
//	K = 2, one value a side: the shared σ is equal on both sides, so the
//	limit is the sign of (μin − μout)·t: μin 1 > μout 0, t = −Inf: −Inf;
//	t = +Inf: +Inf.
//	Per candidate with a wider IN side the t² term decides: +Inf.
func TestLiRAOnlineInfiniteTarget(t *testing.T) {
	inf := math.Inf(1)
	in := [][]bool{{true, false}, {false, true}}
	sig := [][]float64{{1, 0}, {0, 1}}
	on, err := LiRAOnline([]float64{-inf, inf}, sig, in, LiRAOptions{GlobalVariance: true})
	if err != nil {
		t.Fatal(err)
	}
	checkScores(t, on, []float64{-inf, inf})

	in = [][]bool{{true}, {true}, {false}, {false}}
	sig = [][]float64{{0}, {4}, {1}, {2}} // IN μ 2, σ 2; OUT μ 1.5, σ 0.5
	for _, tc := range []struct{ t, want float64 }{{-inf, inf}, {inf, inf}, {1.5, logNormal(1.5, 2, 2) - logNormal(1.5, 1.5, 0.5)}} {
		got, err := LiRAOnline([]float64{tc.t}, sig, in, LiRAOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkScores(t, got, []float64{tc.want})
	}
	// One Gaussian on both sides: no evidence either way.
	if got := logRatio(math.Inf(-1), gauss{muIn: 1, sdIn: 2, muOut: 1, sdOut: 2}); got != 0 {
		t.Errorf("identical IN and OUT at t = −Inf: %v, want 0", got)
	}
}
