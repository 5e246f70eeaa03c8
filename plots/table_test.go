package plots

import (
	"strings"
	"testing"

	"github.com/memo-research/memo/eval"
)

func TestLowFPRNote(t *testing.T) {
	tests := []struct {
		name     string
		controls []int
		want     string // prefix; "" for no note
	}{
		{"none scored", []int{0}, ""},
		{"both resolved", []int{1001, 5000}, ""},
		{"0.1 % unresolved at 1,000", []int{1000, 2000}, "TPR@0.1%FPR over as few as 1000 controls: "},
		{"both unresolved", []int{1001, 99}, "TPR@0.1%FPR and TPR@1%FPR over as few as 99 controls: "},
		{"exactly 100", []int{100}, "TPR@0.1%FPR and TPR@1%FPR over as few as 100 controls: "},
		{"101", []int{101}, "TPR@0.1%FPR over as few as 101 controls: "},
		{"a run without controls is not the least", []int{0, 500}, "TPR@0.1%FPR over as few as 500 controls: "},
	}
	for _, tt := range tests {
		got := lowFPRNote(tt.controls...)
		if (tt.want == "") != (got == "") || !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s: lowFPRNote(%v) = %q, want prefix %q", tt.name, tt.controls, got, tt.want)
		}
	}
}

// The note's bound is eval.TPRAtFPR's: with 1,000 controls TPR@0.1%FPR
// counts only members above every control, with 1,001 one control may
// score above the threshold.
func TestLowFPRNoteAgreesWithTPRAtFPR(t *testing.T) {
	for _, n := range []int{1000, 1001} {
		controls := make([]float64, n)
		for i := range controls {
			controls[i] = float64(i) // highest n-1
		}
		members := []float64{float64(n) - 1.5, float64(n) + 1} // one between the top two controls, one above all
		atZero := eval.TPRAtFPR(members, controls, eval.LowFPRs[0]) == 0.5
		if noted := lowFPRNote(n) != ""; noted != atZero {
			t.Errorf("%d controls: note %v, but TPRAtFPR at FPR 0 is %v", n, noted, atZero)
		}
	}
}
