package eval

import (
	"math"
	"testing"

	"github.com/memo-research/memo/loss"
)

// TestExtractableByHand: members with p = 1 (greedy), 0.6, 0.01, 0.001 and
// 0 (−Inf), and one not defined (NaN, left out); controls with p = 1e-5
// and 0. At q = 0.5, 1 − (1 − p)^n >= 0.5 holds for
//
//	p = 1, 0.6 at every n;
//	p = 0.01 from n = 100 (1 − 0.99^10 = 0.096, 1 − 0.99^100 = 0.634);
//	p = 0.001 at n = 1000 only (1 − 0.999^100 = 0.095, 1 − 0.999^1000 = 0.632);
//	p = 1e-5 never up to 1000 (1 − (1 − 1e-5)^1000 = 0.00995); p = 0 never.
//
// Members: 2/5, 2/5, 3/5, 4/5 at n = 1, 10, 100, 1000; controls 0/2.
func TestExtractableByHand(t *testing.T) {
	var rows []Score
	for _, lp := range []float64{0, math.Log(0.6), math.Log(0.01), math.Log(0.001), math.Inf(-1), math.NaN()} {
		rows = append(rows, Score{Split: "target", Status: StatusOK, PExtract: lp})
	}
	for _, lp := range []float64{math.Log(1e-5), math.Inf(-1)} {
		rows = append(rows, Score{Split: "control", Status: StatusOK, PExtract: lp})
	}
	// A document not attacked has no p_extract to count.
	rows = append(rows, Score{Split: "target", Status: "too_short", PExtract: 0})
	cfg := DefaultConfig()
	cfg.Bootstrap = 0
	s := Summarize(rows, cfg, loss.Config{Strategy: loss.StrategyNone})
	if s.Extractable == nil || s.Extractable.Q != 0.5 {
		t.Fatalf("extractable %+v, want q = 0.5", s.Extractable)
	}
	for i, want := range []int{2, 2, 3, 4} {
		m := s.Extractable.Members[i]
		lo, hi := WilsonCI(want, 5)
		if m.N != ExtractableNs[i] || m.Count != want || m.Total != 5 || !near(float64(m.Fraction), float64(want)/5) ||
			!near(float64(m.WilsonCI[0]), lo) || !near(float64(m.WilsonCI[1]), hi) {
			t.Errorf("members at n = %d: %+v, want %d of 5, Wilson [%v, %v]", ExtractableNs[i], m, want, lo, hi)
		}
		if c := s.Extractable.Controls[i]; c.Count != 0 || c.Total != 2 {
			t.Errorf("controls at n = %d: %+v, want 0 of 2", ExtractableNs[i], c)
		}
	}
	if got := ExtractProb(math.Log(1e-12), 1000); math.Abs(got-1e-9)/1e-9 > 1e-6 {
		t.Errorf("1 − (1 − 1e-12)^1000 = %v, want 1e-9 (no rounding to 0)", got)
	}
	// Without any p_extract (beam search) there is no extractable table.
	for i := range rows {
		rows[i].PExtract = math.NaN()
	}
	if s := Summarize(rows, cfg, loss.Config{Strategy: loss.StrategyNone}); s.Extractable != nil {
		t.Errorf("no p_extract: extractable %+v, want none", s.Extractable)
	}
}

// TestNewMIAStatisticsDirection: Min-K%++ and ReCaLL are higher for
// members, the gradient norm lower; members separated perfectly in each
// statistic's own direction give AUC 1, whatever the sign.
func TestNewMIAStatisticsDirection(t *testing.T) {
	var rows []Score
	for i := 0; i < 3; i++ {
		f := float64(i)
		rows = append(rows,
			Score{Split: "target", Status: StatusOK, MinKPP: 1 + f, Stats: map[string]float64{"recall": 1.5 + f, "grad_norm": 0.1 + f/10}, RefDiff: math.NaN()},
			Score{Split: "control", Status: StatusOK, MinKPP: -1 - f, Stats: map[string]float64{"recall": 1.1 - f/100, "grad_norm": 2 + f}, RefDiff: math.NaN()})
	}
	cfg := DefaultConfig()
	cfg.Bootstrap = 0
	m := Summarize(rows, cfg, loss.Config{Strategy: loss.StrategyNone}).MIA
	for _, name := range []string{"mink_pp", "recall", "grad_norm"} {
		st := m.Stat(name)
		if st.AUC != 1 || st.TPR1 != 1 {
			t.Errorf("%s: AUC %v, TPR at 1 %% FPR %v; want 1 and 1", name, st.AUC, st.TPR1)
		}
	}
	if ref := m.Stat("ref"); !math.IsNaN(float64(ref.AUC)) {
		t.Errorf("ref without numbers: AUC %v, want NaN", ref.AUC)
	}
}

// TestExtractableAtExactlyQ: (n, q)-extractable means 1 − (1 − p)^n >= q,
// so a document whose probability equals q counts. p = 0.5 at n = 1 is
// exactly 0.5 in floating point; a strict > would leave it out, and
// TestExtractableByHand has no document on the boundary.
func TestExtractableAtExactlyQ(t *testing.T) {
	if got := ExtractProb(math.Log(0.5), 1); got != 0.5 {
		t.Fatalf("ExtractProb(log 0.5, 1) = %v, want exactly 0.5", got)
	}
	rows := []Score{{Split: "target", Status: StatusOK, PExtract: math.Log(0.5)}}
	at := summarizeExtractable(rows, 0.5)
	if got := at[0]; got.N != 1 || got.Count != 1 || got.Total != 1 {
		t.Errorf("n = 1, p = q = 0.5: %+v, want count 1 of 1", got)
	}
}

// TestExtractableAtQOne: at q = 1 only a suffix of probability 1 is
// (n, 1)-extractable. 1 − (1 − p)^n rounds to 1 in floating point once
// (1 − p)^n < 2⁻⁵³, so comparing the rounded probability counted p = 0.1
// at n = 1000 and p = 0.98 at n = 10.
func TestExtractableAtQOne(t *testing.T) {
	var rows []Score
	for _, lp := range []float64{0, math.Log(0.1), math.Log(0.5), math.Log(0.98), -1e-20} {
		rows = append(rows, Score{Split: "target", Status: StatusOK, PExtract: lp})
	}
	for i, at := range summarizeExtractable(rows, 1) {
		if at.Count != 1 || at.Total != 5 {
			t.Errorf("q = 1, n = %d: %d of %d, want only p = 1's 1 of 5", ExtractableNs[i], at.Count, at.Total)
		}
	}
	// Below 1, the logs agree with the probability where it does not
	// round: p = 0.98 at n = 10 is 1 − 1.024e-17 extractable.
	for _, tc := range []struct {
		lp   float64
		n    int
		q    float64
		want bool
	}{
		{math.Log(0.98), 10, 0.999999, true},
		{math.Log(0.01), 100, 0.633, true},
		{math.Log(0.01), 100, 0.634, false},
		{math.Log(0.001), 1000, 0.632, true},
		{math.Log(0.001), 1000, 0.633, false},
		{math.Inf(-1), 1000, 1e-9, false},
		{-1e-20, 1, 1 - 1e-15, true},
	} {
		if got := extractableAt(tc.lp, tc.n, tc.q); got != tc.want {
			t.Errorf("extractableAt(%v, %d, %v) = %v, want %v", tc.lp, tc.n, tc.q, got, tc.want)
		}
	}
	if got := ExtractProb(-1e-20, 1); got != 1 {
		t.Errorf("ExtractProb(-1e-20, 1) = %v, want 1", got)
	}
}
