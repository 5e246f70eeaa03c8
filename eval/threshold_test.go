package eval

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/memo-research/memo/loss"
)

// groupScores makes n attacked targets seen reps times, the first exact of
// them reproduced verbatim and the first rouge of them (exact ones
// included) with RougeL 0.5 exactly, the cut; the rest get RougeL 0.49.
func groupScores(reps, n, exact, rouge int) []Score {
	out := make([]Score, n)
	for i := range out {
		out[i] = Score{Split: splitTarget, Status: StatusOK, Repetitions: reps, RougeL: 0.49}
		out[i].Exact = i < exact
		if i < rouge {
			out[i].RougeL = 0.5
		}
	}
	return out
}

func intp(v int) *int { return &v }

func sameIntp(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// Hand-worked Wilson 95 % intervals (z = 1.96, n = 10): 0/10 [0, 0.278],
// 2/10 [0.057, 0.510], 5/10 [0.237, 0.763], 9/10 [0.596, 0.982],
// 10/10 [0.722, 1]; 4/10 [0.168, 0.687], 6/10 [0.313, 0.832].
func TestRepetitionThreshold(t *testing.T) {
	var rows []Score
	rows = append(rows, groupScores(1, 10, 0, 2)...)  // exact 0/10, rouge 2/10
	rows = append(rows, groupScores(2, 10, 2, 4)...)  // 2/10, 4/10
	rows = append(rows, groupScores(4, 10, 5, 9)...)  // 5/10, 9/10
	rows = append(rows, groupScores(8, 10, 9, 10)...) // 9/10, 10/10
	rows = append(rows, groupScores(16, 10, 6, 10)...)
	rows = append(rows, Score{Split: splitControl, Status: StatusOK, RougeL: 0.9})
	s := Summarize(rows, Config{Bootstrap: 0, Seed: 1, MinKFraction: 0.2, FPR: 0.01}, loss.Config{Strategy: loss.StrategyNone})
	th := s.RepetitionThreshold
	if th == nil {
		t.Fatal("no repetition_threshold with five repetition groups")
	}
	if th.MaxRepetitions != 16 || th.Rate != 0.5 || th.RougeLCut != 0.5 {
		t.Errorf("max %d rate %v cut %v, want 16, 0.5, 0.5", th.MaxRepetitions, th.Rate, th.RougeLCut)
	}
	for _, c := range []struct {
		name      string
		got, want Threshold
	}{
		// Exact: 5/10 at 4 reaches half; 2/10's upper bound 0.510 at 2 is
		// the first to reach 0.5; 9/10's lower bound 0.596 at 8 the first
		// above it (16's 6/10 does not count: 8 came first).
		{"exact", th.ExactMatch, Threshold{intp(4), [2]*int{intp(2), intp(8)}}},
		// RougeL >= 0.5 (0.5 itself counts): 2/10 at 1 already reaches the
		// interval, 9/10 at 4 is both the threshold and the upper end.
		{"rougeL", th.RougeL, Threshold{intp(4), [2]*int{intp(1), intp(4)}}},
	} {
		if !sameIntp(c.got.Repetitions, c.want.Repetitions) || !sameIntp(c.got.CI[0], c.want.CI[0]) || !sameIntp(c.got.CI[1], c.want.CI[1]) {
			b, _ := json.Marshal(c.got)
			w, _ := json.Marshal(c.want)
			t.Errorf("%s threshold %s, want %s", c.name, b, w)
		}
	}
	g := s.ByRepetitions[1] // 2 repetitions: rouge 4/10
	if float64(g.RougeLExtracted) != 0.4 || math.Abs(float64(g.RougeLExtractedWilsonCI[0])-0.168) > 5e-4 || math.Abs(float64(g.RougeLExtractedWilsonCI[1])-0.687) > 5e-4 {
		t.Errorf("2 repetitions: rougeL_extracted %v %v, want 0.4 [0.168, 0.687]", g.RougeLExtracted, g.RougeLExtractedWilsonCI)
	}
}

// A model that never reaches half: the threshold and the upper end of its
// interval are null (above the largest count tested), and so in JSON.
func TestRepetitionThresholdNotReached(t *testing.T) {
	var rows []Score
	rows = append(rows, groupScores(1, 10, 0, 0)...)
	rows = append(rows, groupScores(128, 10, 2, 4)...) // upper bounds 0.510 and 0.687 reach half
	s := Summarize(rows, Config{Bootstrap: 0, Seed: 1, MinKFraction: 0.2, FPR: 0.01}, loss.Config{Strategy: loss.StrategyNone})
	b, err := json.Marshal(s.RepetitionThreshold)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"rate":0.5,"rougeL_cut":0.5,"max_repetitions":128,"exact_match":{"repetitions":null,"ci":[128,null]},"rougeL":{"repetitions":null,"ci":[128,null]}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	one := Summarize(groupScores(4, 10, 9, 9), DefaultConfig(), loss.Config{Strategy: loss.StrategyNone})
	if one.RepetitionThreshold != nil {
		t.Error("a single repetition group has no threshold")
	}
}

// TestThresholdCIUpperEndAtRate: CI[1] is the smallest count whose Wilson
// interval lies at or above Rate, lower bound >= 0.5, so a lower bound of
// exactly 0.5 qualifies. TestRepetitionThreshold's lower bounds (0.596,
// 0.722) are all well above 0.5 and do not tell >= from >.
func TestThresholdCIUpperEndAtRate(t *testing.T) {
	groups := []RepetitionSummary{
		{Repetitions: 1, SplitSummary: SplitSummary{N: 10, ExactMatch: 0.2, ExactMatchWilsonCI: [2]Num{0.05, 0.45}}},
		{Repetitions: 2, SplitSummary: SplitSummary{N: 10, ExactMatch: 0.7, ExactMatchWilsonCI: [2]Num{0.5, 0.9}}},
	}
	got := thresholdOf(groups, func(g RepetitionSummary) (Num, [2]Num) { return g.ExactMatch, g.ExactMatchWilsonCI })
	want := Threshold{intp(2), [2]*int{intp(2), intp(2)}}
	if !sameIntp(got.Repetitions, want.Repetitions) || !sameIntp(got.CI[0], want.CI[0]) || !sameIntp(got.CI[1], want.CI[1]) {
		b, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("threshold %s, want %s", b, w)
	}
}
