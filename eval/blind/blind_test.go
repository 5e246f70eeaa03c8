package blind

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
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

// TestNearDuplicatesShareAFold: a set whose every text is given again
// under the same random label, in capitals with a full stop, with a word
// appended or with one word changed (an article's revision, a template
// filled in twice), is no more separable than the set alone. It read AUC
// 0.98, "separable", while a copy could sit in the training folds of its
// twin: for capitals until texts of one word set shared a fold, for the
// edits until texts at Jaccard >= 0.5 did.
func TestNearDuplicatesShareAFold(t *testing.T) {
	for _, edit := range []struct {
		name string
		f    func(s string, i int) string
	}{
		{"in capitals", func(s string, i int) string { return strings.ToUpper(s) + "." }},
		{"a word appended", func(s string, i int) string { return s + " tail" }},
		{"a word changed", func(s string, i int) string { return "zz" + strconv.Itoa(i) + s[strings.Index(s, " "):] }},
	} {
		t.Run(edit.name, func(t *testing.T) {
			texts, member := corpus(200, 5, "")
			rng := rand.New(rand.NewPCG(11, 11))
			rng.Shuffle(len(member), func(a, b int) { member[a], member[b] = member[b], member[a] })
			for i := range 200 {
				texts = append(texts, edit.f(texts[i], i))
				member = append(member, member[i])
			}
			r, err := Evaluate(texts, member, DefaultConfig(), 200, 5)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("blind AUC %.3f, p %.3f", r.AUC, r.P)
			if float64(r.AUC) > 0.65 || r.Separable() {
				t.Errorf("random labels with near copies: AUC %v, verdict %s; want about 0.5", r.AUC, r.Verdict())
			}
		})
	}
	// Copies alone in a class are too few groups for the folds.
	few := []string{"a b", "A B.", "a, b", "c d", "C D"}
	if _, err := Scores(few, []bool{true, true, true, false, false}, Config{Folds: 2, Seed: 1, Alpha: 1}); err == nil || !strings.Contains(err.Error(), "differ") {
		t.Errorf("one distinct member text under 2 folds: err %v, want a refusal", err)
	}
}

// TestNearDuplicateGroups: texts at Jaccard 0.5 or more share a group,
// transitively; unrelated texts of one vocabulary do not.
func TestNearDuplicateGroups(t *testing.T) {
	docs := [][]int32{
		{1, 2, 3, 4},       // 0
		{1, 2, 3, 5},       // 1: J(0) = 3/5
		{9, 10, 11},        // 2
		{1, 2, 5, 6, 7, 8}, // 3: J(1) = 3/7 < 0.5, J(0) = 2/8
		{3, 4, 1, 2, 2},    // 4: 0's set, repeats and order aside
		{},                 // 5
		{},                 // 6: empty alike
	}
	group, first := nearDuplicateGroups(docs)
	want := []int{0, 0, 1, 2, 0, 3, 3}
	if !slices.Equal(group, want) || !slices.Equal(first, []int{0, 2, 3, 5}) {
		t.Errorf("groups %v, first %v; want %v, [0 2 3 5]", group, first, want)
	}
	if j := jaccard([]int32{1, 2, 3}, []int32{2, 3, 4, 5}); j != 2.0/5 {
		t.Errorf("jaccard = %v, want 0.4", j)
	}
	// Independent texts of the test corpus (40 words of 300) stay apart.
	texts, _ := corpus(400, 7, "")
	f := featurize(texts)
	if len(f.first) != len(texts) {
		t.Errorf("%d groups of %d unrelated texts", len(f.first), len(texts))
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

// TestVerdict: separable takes an AUC of at least SeparableAUC and a
// permutation p-value below SignificanceLevel (or no test); an AUC that
// high the test cannot tell from chance, or one ranked backwards, is
// inconclusive; a small AUC above chance is a shift.
func TestVerdict(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		auc, p float64
		want   string
	}{
		{1, 0.005, VerdictSeparable},
		{0.6, 0.01, VerdictSeparable},
		{0.6, nan, VerdictSeparable},
		{0.75, 0.2, VerdictInconclusive},
		{0.55, 0.01, VerdictShift},
		{0.55, 0.3, VerdictNoneFound},
		{0.55, nan, VerdictNoneFound},
		{0.5, 0.5, VerdictNoneFound},
		{0.45, 0.9, VerdictNoneFound},
		{0.45, 0.01, VerdictNoneFound}, // one-sided: cannot happen, but not a shift
		{0.4, 0.99, VerdictInconclusive},
		{0, 1, VerdictInconclusive},
	} {
		r := Result{AuditStat: eval.AuditStat{MIAStat: eval.MIAStat{AUC: eval.Num(tc.auc)}}, P: tc.p}
		if got := r.Verdict(); got != tc.want {
			t.Errorf("AUC %v, p %v: verdict %q, want %q", tc.auc, tc.p, got, tc.want)
		}
		if r.Separable() != (tc.want == VerdictSeparable) {
			t.Errorf("AUC %v, p %v: Separable %v", tc.auc, tc.p, r.Separable())
		}
	}
}

// TestCrossValidateIsRecount: taking each fold out of counts of the
// whole set and putting it back scores every text bit for bit as
// counting each fold's training texts afresh does (the baseline before
// the permutation test needed it fast), written out here.
func TestCrossValidateIsRecount(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		texts, member := corpus(90, seed, "")
		texts[4] += " onlyhere alsoonlyhere" // features of one text alone
		cfg := DefaultConfig()
		got, err := Scores(texts, member, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]int{}
		docs := make([][]int, len(texts))
		for i, tx := range texts {
			for _, f := range Features(tx) {
				if _, ok := ids[f]; !ok {
					ids[f] = len(ids)
				}
				docs[i] = append(docs[i], ids[f])
			}
		}
		self := make([]int, len(texts)) // every text unlike the others
		for i := range self {
			self[i] = i
		}
		fold := folds(member, self, self, cfg.Folds, cfg.Seed)
		want := make([]float64, len(texts))
		for k := range cfg.Folds {
			var counts [2][]float64
			counts[0], counts[1] = make([]float64, len(ids)), make([]float64, len(ids))
			var total [2]float64
			var n [2]int
			for i, d := range docs {
				if fold[i] == k {
					continue
				}
				c := class(member[i])
				n[c]++
				for _, id := range d {
					counts[c][id]++
				}
				total[c] += float64(len(d))
			}
			vocab := 0
			for id := range counts[0] {
				if counts[0][id] > 0 || counts[1][id] > 0 {
					vocab++
				}
			}
			prior := math.Log(float64(n[1])) - math.Log(float64(n[0]))
			den0, den1 := math.Log(total[0]+cfg.Alpha*float64(vocab)), math.Log(total[1]+cfg.Alpha*float64(vocab))
			for i, d := range docs {
				if fold[i] != k {
					continue
				}
				s := prior
				for _, id := range d {
					if counts[0][id] == 0 && counts[1][id] == 0 {
						continue
					}
					s += math.Log(counts[1][id]+cfg.Alpha) - den1 - math.Log(counts[0][id]+cfg.Alpha) + den0
				}
				want[i] = s
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("seed %d: scores differ from a recount per fold", seed)
		}
	}
}

// TestPermutationTestHoldsItsLevel: on sets whose labels have nothing to
// do with their texts, the permutation test calls the AUC above chance
// about as often as its level says, 5 %; the pooled bootstrap's interval
// missed 0.5 on 15-18 % of such sets. A planted word is found at the
// smallest p the permutations allow.
func TestPermutationTestHoldsItsLevel(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Permutations = 99
	const sets = 60
	rejected, missed := 0, 0
	for seed := range uint64(sets) {
		texts, member := corpus(60, 100+seed, "")
		r, err := Evaluate(texts, member, cfg, 200, seed)
		if err != nil {
			t.Fatal(err)
		}
		if r.P < SignificanceLevel {
			rejected++
		}
		if !(float64(r.AUCCI[0]) <= 0.5 && 0.5 <= float64(r.AUCCI[1])) {
			missed++
		}
	}
	t.Logf("shift-free sets of 60 texts: permutation test rejects %d of %d; the bootstrap interval misses 0.5 on %d", rejected, sets, missed)
	// Binomial(60, 0.05): P(X >= 8) < 0.01.
	if rejected >= 8 {
		t.Errorf("the permutation test rejected %d of %d shift-free sets at level %v", rejected, sets, SignificanceLevel)
	}
	texts, member := corpus(200, 9, "2019")
	r, err := Evaluate(texts, member, cfg, 200, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.P != 1.0/float64(1+cfg.Permutations) || r.Verdict() != VerdictSeparable {
		t.Errorf("planted word: AUC %v, p %v, verdict %q; want p = 1/%d and separable", r.AUC, r.P, r.Verdict(), 1+cfg.Permutations)
	}
}

// TestUnspacedScripts: text in a script without spaces between words is
// taken a character at a word, so a character planted in every member
// is seen; whole, each text was one feature and the AUC 0.5.
func TestUnspacedScripts(t *testing.T) {
	got := Features("我爱北京abc天安 Go")
	want := []string{"我", "爱", "我 爱", "北", "爱 北", "京", "北 京", "abc", "京 abc", "天", "abc 天", "安", "天 安", "go", "安 go"}
	if !slices.Equal(got, want) {
		t.Errorf("Features = %q, want %q", got, want)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	han := []rune("的一是不了人我在有他这中大来上个国到说们为子和你地出道也时")
	texts, member := make([]string, 300), make([]bool, 300)
	for i := range texts {
		member[i] = i%2 == 0
		rs := make([]rune, 40)
		for j := range rs {
			rs[j] = han[rng.IntN(len(han))]
		}
		if member[i] {
			rs[rng.IntN(len(rs))] = '年'
		}
		texts[i] = string(rs)
	}
	cfg := DefaultConfig()
	cfg.Permutations = 39
	r, err := Evaluate(texts, member, cfg, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if float64(r.AUC) < 0.9 || !r.Separable() {
		t.Errorf("a planted Han character: AUC %v, verdict %q; want >= 0.9, separable", r.AUC, r.Verdict())
	}
}
