package dpaccount

import (
	"errors"
	"math"
	"testing"
	"time"
)

// Sources of the reference values below, each read at a fixed commit:
//
//	opacus  = github.com/pytorch/opacus @ 4d0ebc84613d214fbfd37fbfd1390e3747a625ce
//	tfp     = github.com/tensorflow/privacy @ c4fea75675431edb85429af405c8441b249acf95
//	          (tensorflow_privacy/privacy/analysis/rdp_accountant_test.py, the last
//	          commit before its RDP accountant moved to dp_accounting)

// sig3 reports whether got and want agree to three significant digits
// (within half a unit of want's third digit): the bar for agreement
// with Opacus.
func sig3(got, want float64) bool {
	unit := math.Pow(10, math.Floor(math.Log10(math.Abs(want)))-2)
	return math.Abs(got-want) <= unit/2
}

func TestEpsilonAgainstOpacus(t *testing.T) {
	ints := func(lo, hi int) []float64 {
		var o []float64
		for a := lo; a <= hi; a++ {
			o = append(o, float64(a))
		}
		return o
	}
	cases := []struct {
		source    string
		phases    []Phase
		delta     float64
		orders    []float64
		want      float64
		wantOrder float64 // 0: not asserted by the source
		places    float64 // the source's own tolerance, absolute
	}{
		{
			// opacus/tests/accountants_test.py:94-104 test_rdp_accountant:
			// σ = 1.5, q = 0.04, steps = int(90/0.04) = 2250, δ = 1e-5,
			// assertAlmostEqual(ε, 7.32911117143) (7 places).
			source: "opacus tests/accountants_test.py:104",
			phases: []Phase{{SampleRate: 0.04, Noise: 1.5, Steps: 2250}},
			delta:  1e-5, want: 7.32911117143, places: 5e-8,
		},
		{
			// opacus/accountants/analysis/rdp.py:33-43, the module doctest:
			// [(1e-5, 1.0, 10), (1e-4, 3.0, 4)] composed, orders 2..32,
			// δ = 1e-5 → (0.336, 23) (doctest +NUMBER: 3 digits).
			source: "opacus accountants/analysis/rdp.py:43 doctest",
			phases: []Phase{{SampleRate: 1e-5, Noise: 1.0, Steps: 10}, {SampleRate: 1e-4, Noise: 3.0, Steps: 4}},
			delta:  1e-5, orders: ints(2, 32), want: 0.336, wantOrder: 23, places: 5e-4,
		},
		{
			// opacus/scripts/compute_dp_sgd_privacy.py:30-42, its docstring
			// example: q = 0.01, σ = 1.0, 300 steps, orders 2 5 10 20 100,
			// δ = 1e-5 → ε = 2.39, optimal α = 5.0.
			source: "opacus scripts/compute_dp_sgd_privacy.py:37",
			phases: []Phase{{SampleRate: 0.01, Noise: 1.0, Steps: 300}},
			delta:  1e-5, orders: []float64{2, 5, 10, 20, 100}, want: 2.39, wantOrder: 5, places: 5e-3,
		},
	}
	for _, c := range cases {
		t.Run(c.source, func(t *testing.T) {
			eps, order, err := Epsilon(c.phases, c.delta, c.orders)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(eps-c.want) > c.places || !sig3(eps, c.want) {
				t.Errorf("ε = %.10g, want %.10g (±%g)", eps, c.want, c.places)
			}
			if c.wantOrder != 0 && order != c.wantOrder {
				t.Errorf("optimal order %v, want %v", order, c.wantOrder)
			}
		})
	}
}

func TestNoiseForAgainstOpacus(t *testing.T) {
	cases := []struct {
		source string
		target float64
		q      float64
		steps  int64
		delta  float64
		want   float64
	}{
		// opacus/tests/accountants_test.py:132-146: ε = 8, δ = 1e-5, q = 0.04,
		// 90 epochs (steps = int(90/0.04) = 2250) → σ ≈ 1.416 (places=4).
		{"opacus tests/accountants_test.py:146", 8, 0.04, 2250, 1e-5, 1.416},
		// opacus/tests/accountants_test.py:148-161: 2000 steps → σ ≈ 1.3562.
		{"opacus tests/accountants_test.py:161", 8, 0.04, 2000, 1e-5, 1.3562},
	}
	for _, c := range cases {
		t.Run(c.source, func(t *testing.T) {
			sigma, err := NoiseFor(c.target, c.q, c.steps, c.delta)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(sigma-c.want) >= 5e-5 {
				t.Errorf("σ = %.6f, want %.4f to 4 places", sigma, c.want)
			}
		})
	}
}

// TestNoiseForWithinOnePercent: the σ found spends at most the target and
// at least 99 % of it, over small and large targets, q = 1 and long runs.
func TestNoiseForWithinOnePercent(t *testing.T) {
	for _, c := range []struct {
		target, q float64
		steps     int64
		delta     float64
	}{
		{8, 0.04, 2250, 1e-5},
		{1, 0.01, 10000, 1e-5},
		{0.5, 0.001, 1000, 1e-6},
		{0.2, 0.05, 100, 1e-5},
		{3, 1, 1, 1e-5},
		{2, 1, 50, 1e-6},
		{8, 0.004, 2_000_000, 1e-6},
		{50, 0.5, 100, 1e-3},
	} {
		sigma, err := NoiseFor(c.target, c.q, c.steps, c.delta)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		eps, err := EpsilonOf(c.q, sigma, c.steps, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		if eps > c.target || eps < 0.99*c.target {
			t.Errorf("%+v: σ = %v spends ε = %v, want within 1 %% below %v", c, sigma, eps, c.target)
		}
	}
}

func TestNoiseForUnreachable(t *testing.T) {
	// However large σ, the conversion at the largest default order (63)
	// leaves −(log δ + log 63)/62 + log(62/63) ≈ 0.10 at δ = 1e-5: a target
	// of 0.05 is out of reach of Opacus's orders, as Opacus also says.
	_, err := NoiseFor(0.05, 0.01, 100, 1e-5)
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
}

// TestNoiseForHugeTarget: past about ε = 1e14 no two neighbouring σ
// are within the tolerance of each other in ε; the bisection stops at the
// closest instead of looping for ever (memo dp-epsilon hung).
func TestNoiseForHugeTarget(t *testing.T) {
	for _, target := range []float64{1e13, 1e14, 1e15, 1e300} {
		done := make(chan error, 1)
		var sigma float64
		go func() {
			var err error
			sigma, err = NoiseFor(target, 0.01, 1000, 1e-5)
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("target %g: %v", target, err)
			}
			eps, err := EpsilonOf(0.01, sigma, 1000, 1e-5)
			if err != nil || eps > target {
				t.Errorf("target %g: σ %v gives ε %v (%v), want at most the target", target, sigma, eps, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("target %g: NoiseFor still searching after 20 s", target)
		}
	}
}

// TestRDPAgainstTFPrivacy: the RDP values TF Privacy's tests assert (the
// conversion aside), of which Opacus's analysis/rdp.py is a port.
func TestRDPAgainstTFPrivacy(t *testing.T) {
	cases := []struct {
		source   string
		q, sigma float64
		steps    int64
		orders   []float64
		want     []float64
		rtol     float64
	}{
		// tfp rdp_accountant_test.py:95-97 test_compute_rdp_no_sampling:
		// q = 1, RDP = α/(2σ²): compute_rdp(1, 10, 1, 20) == 0.1.
		{"tfp rdp_accountant_test.py:97", 1, 10, 1, []float64{20}, []float64{0.1}, 1e-15},
		// tfp :99-101 test_compute_rdp_scalar: compute_rdp(0.1, 2, 10, 5) ≈ 0.07737 (places=5).
		{"tfp rdp_accountant_test.py:101", 0.1, 2, 10, []float64{5}, []float64{0.07737}, 1e-4},
		// tfp :113-118 test_compute_rdp_sequence (rtol 1e-4); the α = ∞
		// entry aside: fractional and integer orders, small and large.
		{"tfp rdp_accountant_test.py:118", 0.01, 2.5, 50,
			[]float64{1.5, 2.5, 5, 50, 100},
			[]float64{6.5007e-04, 1.0854e-03, 2.1808e-03, 2.3846e-02, 1.6742e+02}, 1e-4},
	}
	for _, c := range cases {
		t.Run(c.source, func(t *testing.T) {
			for k, a := range c.orders {
				r, err := RDP(c.q, c.sigma, a)
				if err != nil {
					t.Fatal(err)
				}
				r *= float64(c.steps)
				if math.Abs(r-c.want[k]) > c.rtol*math.Abs(c.want[k]) {
					t.Errorf("α = %v: RDP = %.6g, want %.6g (rtol %g)", a, r, c.want[k], c.rtol)
				}
			}
		})
	}
}

// TestConversionAgainstTFPrivacy: tfp rdp_accountant_test.py:166-173, a
// constant RDP of 1.1 at orders 2..32 (pure DP) at δ = 1e-5 converts to
// ε = 1.32783806176 at order 32, computed there with the same Balle et
// al. conversion.
func TestConversionAgainstTFPrivacy(t *testing.T) {
	var orders, rdp []float64
	for a := 2; a <= 32; a++ {
		orders = append(orders, float64(a))
		rdp = append(rdp, 1.1)
	}
	eps, order, err := EpsilonFromRDP(orders, rdp, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(eps-1.32783806176) > 5e-8 || order != 32 {
		t.Errorf("ε = %.11f at α = %v, want 1.32783806176 at 32", eps, order)
	}

	// tfp rdp_accountant_test.py:175-180: the Gaussian mechanism (q = 1) with
	// σ = 4.530877117, "chosen to obtain exactly (1, 1e-6)-DP", at the fine
	// orders 1.001..99.999 gives ε = 1 (assertAlmostEqual, 7 places).
	var fine []float64
	for i := 1001; i < 100000; i++ {
		fine = append(fine, 0.001*float64(i))
	}
	eps, _, err = Epsilon([]Phase{{SampleRate: 1, Noise: 4.530877117, Steps: 1}}, 1e-6, fine)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(eps-1) > 5e-8 {
		t.Errorf("Gaussian mechanism: ε = %.10f, want 1 to 7 places", eps)
	}
}

// TestNoSubsamplingClosedForm: at q = 1 RDP is α/(2σ²) per step, so ε after
// T steps is min over the orders of Tα/(2σ²) − (log δ + log α)/(α−1) +
// log((α−1)/α), computed here independently; large T included.
func TestNoSubsamplingClosedForm(t *testing.T) {
	for _, c := range []struct {
		sigma float64
		steps int64
		delta float64
	}{{1, 1, 1e-5}, {5, 100, 1e-5}, {100, 1_000_000, 1e-6}, {1e4, 100_000_000, 1e-8}} {
		eps, _, err := Epsilon([]Phase{{SampleRate: 1, Noise: c.sigma, Steps: c.steps}}, c.delta, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := math.Inf(1)
		for _, a := range DefaultOrders() {
			e := float64(c.steps)*a/(2*c.sigma*c.sigma) - math.Log(c.delta)/(a-1) - math.Log(a)/(a-1) + math.Log(1-1/a)
			want = math.Min(want, e)
		}
		if math.Abs(eps-want) > 1e-12*want {
			t.Errorf("%+v: ε = %v, want %v", c, eps, want)
		}
	}
}

// TestLargeStepsCompose: RDP composes linearly, so T steps in one phase and
// the same T split into phases give the same ε, up to a hundred million.
func TestLargeStepsCompose(t *testing.T) {
	one, _, err := Epsilon([]Phase{{SampleRate: 1e-4, Noise: 0.8, Steps: 100_000_000}}, 1e-6, nil)
	if err != nil {
		t.Fatal(err)
	}
	split, _, err := Epsilon([]Phase{
		{SampleRate: 1e-4, Noise: 0.8, Steps: 60_000_000},
		{SampleRate: 1e-4, Noise: 0.8, Steps: 40_000_000},
	}, 1e-6, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.IsInf(one, 0) || math.IsNaN(one) || math.Abs(one-split) > 1e-9*one {
		t.Errorf("ε one phase %v, split %v", one, split)
	}
	// More steps never spend less.
	fewer, _ := EpsilonOf(1e-4, 0.8, 10_000_000, 1e-6)
	if !(fewer < one) {
		t.Errorf("ε at 1e7 steps %v not below ε at 1e8 steps %v", fewer, one)
	}
}

func TestDefaultOrders(t *testing.T) {
	o := DefaultOrders()
	// 99 fractional orders 1.1..10.9, then 12..63: Opacus's 151.
	if len(o) != 151 || o[0] != 1.1 || o[98] != 10.9 || o[99] != 12 || o[150] != 63 {
		t.Fatalf("orders: %d, %v ... %v", len(o), o[:3], o[len(o)-3:])
	}
}

func TestBadInput(t *testing.T) {
	for _, c := range []struct {
		name  string
		p     Phase
		delta float64
	}{
		{"negative noise", Phase{0.1, -1, 10}, 1e-5},
		{"q zero", Phase{0, 1, 10}, 1e-5},
		{"q above one", Phase{1.5, 1, 10}, 1e-5},
		{"no steps", Phase{0.1, 1, 0}, 1e-5},
		{"delta zero", Phase{0.1, 1, 10}, 0},
		{"delta one", Phase{0.1, 1, 10}, 1},
		{"noise NaN", Phase{0.1, math.NaN(), 10}, 1e-5},
	} {
		if _, _, err := Epsilon([]Phase{c.p}, c.delta, nil); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

func TestZeroNoiseIsNoPrivacy(t *testing.T) {
	eps, err := EpsilonOf(0.1, 0, 10, 1e-5)
	if err != nil || !math.IsInf(eps, 1) {
		t.Fatalf("ε = %v, %v; want +Inf", eps, err)
	}
}

func TestLogErfcContinuous(t *testing.T) {
	// The two branches meet at x = 20 to float precision.
	below := math.Log(math.Erfc(19.999999))
	above := logErfc(20.000001)
	if math.Abs(below-above) > 1e-4 {
		t.Errorf("log erfc jumps at 20: %v vs %v", below, above)
	}
	if v := logErfc(40); math.IsInf(v, 0) || v > -1600 {
		t.Errorf("logErfc(40) = %v", v)
	}
}
