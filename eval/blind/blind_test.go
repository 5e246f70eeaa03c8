package blind

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/memo-research/memo/eval"
)

// corpus draws n texts of 40 words from a vocabulary of 300; plant, when
// not empty, is put into every member text (a distribution shift a word
// count sees: a date, a topic).
func corpus(n int, seed uint64, plant string) ([]string, []bool) {
	rng := rand.New(rand.NewPCG(seed, 7))
	texts, member := make([]string, n), make([]bool, n)
	for i := range n {
		member[i] = i%2 == 0
		words := make([]string, 40)
		for j := range words {
			words[j] = "w" + string(rune('a'+rng.IntN(20))) + string(rune('a'+rng.IntN(15)))
		}
		if plant != "" && member[i] {
			words[rng.IntN(len(words))] = plant
		}
		texts[i] = strings.Join(words, " ")
	}
	return texts, member
}

// TestPlantedShift: a planted word gives AUC near 1; no shift gives an
// interval around 0.5.
func TestPlantedShift(t *testing.T) {
	for _, tc := range []struct {
		name   string
		plant  string
		lo, hi float64 // the AUC's bounds
		sep    bool
	}{
		{"planted word", "2019", 0.9, 1, true},
		{"no shift", "", 0.4, 0.6, false},
	} {
		texts, member := corpus(600, 1, tc.plant)
		r, err := Evaluate(texts, member, DefaultConfig(), 1000, 5)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: blind AUC %.3f [%.3f, %.3f]", tc.name, r.AUC, r.AUCCI[0], r.AUCCI[1])
		if a := float64(r.AUC); a < tc.lo || a > tc.hi || r.Separable() != tc.sep {
			t.Errorf("%s: AUC %v, want in [%v, %v], separable %v", tc.name, a, tc.lo, tc.hi, tc.sep)
		}
		if !tc.sep && !(float64(r.AUCCI[0]) <= 0.5 && 0.5 <= float64(r.AUCCI[1])) {
			t.Errorf("%s: interval %v does not hold 0.5", tc.name, r.AUCCI)
		}
		if tc.sep && float64(r.AUCCI[0]) < SeparableAUC {
			t.Errorf("%s: interval %v reaches below %v", tc.name, r.AUCCI, SeparableAUC)
		}
	}
}

// TestDeterministicAndOutOfFold: the same seed gives the same scores;
// a text's score does not depend on its own label (it is out of fold).
func TestDeterministicAndOutOfFold(t *testing.T) {
	texts, member := corpus(100, 3, "planted")
	a, err := Scores(texts, member, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Scores(texts, member, DefaultConfig())
	if !slices.Equal(a, b) {
		t.Error("two runs with one seed differ")
	}
	// A text alone in its class within the training folds: a unique word
	// of its own, seen by no training fold, adds nothing to its score.
	texts2 := slices.Clone(texts)
	texts2[0] += " uniqueword"
	c, _ := Scores(texts2, member, DefaultConfig())
	if a[0] != c[0] {
		t.Errorf("a feature seen only in the scored text moved its score: %v to %v", a[0], c[0])
	}
}

func TestFeatures(t *testing.T) {
	got := Features("The cat, the CAT!")
	want := []string{"the", "cat", "the cat", "cat the", "the cat"}
	want = slices.Compact(want[:4])
	if !slices.Equal(got, want) {
		t.Errorf("Features = %q, want %q", got, want)
	}
}

func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		member []bool
		cfg    Config
	}{
		{"one class", []bool{true, true, true, true, true, true}, DefaultConfig()},
		{"too few per fold", []bool{true, false, true, false}, DefaultConfig()},
		{"one fold", []bool{true, false}, Config{Folds: 1, Alpha: 1}},
		{"no smoothing", []bool{true, false, true, false}, Config{Folds: 2}},
	} {
		texts := make([]string, len(tc.member))
		if _, err := Scores(texts, tc.member, tc.cfg); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// TestSeparableBothWays: a blind AUC as far below 0.5 as SeparableAUC is
// above it separates the classes too (ranked backwards); near 0.5 does not.
func TestSeparableBothWays(t *testing.T) {
	for _, tc := range []struct {
		auc float64
		sep bool
	}{{1, true}, {0.6, true}, {0.55, false}, {0.5, false}, {0.45, false}, {0.4, true}, {0, true}} {
		r := Result{AuditStat: eval.AuditStat{MIAStat: eval.MIAStat{AUC: eval.Num(tc.auc)}}}
		if r.Separable() != tc.sep {
			t.Errorf("AUC %v: separable %v, want %v", tc.auc, r.Separable(), tc.sep)
		}
	}
}
