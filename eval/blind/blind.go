// Package blind is the blind baseline of a membership audit (Das et al.
// 2024, arXiv 2406.16201; Duan et al. 2024, arXiv 2402.07841): a
// classifier that sees the labelled texts alone, never the model. When it
// tells members from non-members, the set's classes differ in
// distribution (dates, topics, formatting), and a membership attack's
// AUC on it measures that shift, not what the model memorized.
//
// The classifier is multinomial naive Bayes over binarized word unigrams
// and bigrams (each feature counted once per text, which classifies
// short texts better than raw counts: Wang and Manning 2012), trained
// and scored by stratified k-fold cross-validation, so that every text's
// score comes from a model that never saw it. It has no iterations and no
// tuning: the same texts, labels and seed give the same scores.
//
// Whether its AUC is above chance is a label-permutation test (Ojala and
// Garriga 2010, JMLR 11): the whole cross-validation rerun under shuffled
// labels. A bootstrap of the pooled out-of-fold scores treats them as
// fixed, but they are not independent (each fold's model is trained on
// the others'), and its 95 % interval missed 0.5 on 15-18 % of label-shift
// free sets of 40 to 200 texts.
//
// It is one of the three blind attacks of Das et al. (bag of words); the
// other two, date detection and greedy rare n-gram selection, are not
// run. A baseline that finds nothing is no proof that nothing is there.
package blind

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode"

	"github.com/memo-research/memo/eval"
)

// SeparableAUC is the blind AUC from which an audit says that the labels
// are separable without the model: Das et al. find 0.6 and above on
// several popular sets, against 0.5 for a set without a shift.
const SeparableAUC = 0.6

// SignificanceLevel is the permutation p-value below which the blind
// AUC is taken to be above chance.
const SignificanceLevel = 0.05

// Config sets the baseline.
type Config struct {
	Folds int     // cross-validation folds, at least 2
	Seed  uint64  // seeds the folds' assignment and the permutations
	Alpha float64 // the additive (Laplace) smoothing of naive Bayes
	// Permutations is how many shuffles of the labels the permutation
	// test reruns the cross-validation under; 0 runs no test (P is NaN).
	Permutations int
}

// DefaultConfig: 5 folds, Laplace smoothing, 200 permutations (p-values
// down to 1/201).
func DefaultConfig() Config { return Config{Folds: 5, Seed: 1234, Alpha: 1, Permutations: 200} }

// Features are the distinct lowercased words and adjacent word pairs of
// text, words being runs of letters and digits. A run in a script written
// without spaces between words (Han, kana, Thai, Lao, Khmer, Myanmar,
// Tibetan) is taken a character at a word instead: whole, a sentence of
// Chinese would be one feature, and a shift in it invisible.
func Features(text string) []string {
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if !strings.ContainsFunc(w, unspaced) {
			words = append(words, w)
			continue
		}
		// Characters of an unspaced script alone; a run of others (Latin
		// letters, digits) inside the word stays one.
		start := -1
		for i, r := range w {
			if unspaced(r) {
				if start >= 0 {
					words = append(words, w[start:i])
					start = -1
				}
				words = append(words, string(r))
			} else if start < 0 {
				start = i
			}
		}
		if start >= 0 {
			words = append(words, w[start:])
		}
	}
	seen := make(map[string]bool, 2*len(words))
	out := make([]string, 0, 2*len(words))
	add := func(f string) {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	for i, w := range words {
		add(w)
		if i > 0 {
			add(words[i-1] + " " + w)
		}
	}
	return out
}

// unspaced reports whether r is of a script written without spaces
// between words.
func unspaced(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar, unicode.Tibetan)
}

// Scores returns each text's out-of-fold score, the naive Bayes log odds
// that it is a member (higher means member), from a model trained on the
// other folds. Folds are stratified: each class is shuffled by cfg.Seed
// and dealt round-robin, so every fold holds both classes in proportion.
func Scores(texts []string, member []bool, cfg Config) ([]float64, error) {
	_, s, err := outOfFold(texts, member, cfg)
	return s, err
}

// outOfFold is Scores that also returns the featurized texts, which the
// permutation test refits under shuffled labels.
func outOfFold(texts []string, member []bool, cfg Config) (*featurized, []float64, error) {
	if err := check(texts, member, cfg); err != nil {
		return nil, nil, err
	}
	f := featurize(texts)
	var groups [2]int
	for _, i := range f.first {
		groups[class(member[i])]++
	}
	if groups[1] < cfg.Folds || groups[0] < cfg.Folds {
		return nil, nil, fmt.Errorf("blind: %d folds need at least as many members (%d) and non-members (%d) whose words differ (texts alike but for case and punctuation count once)", cfg.Folds, groups[1], groups[0])
	}
	s := make([]float64, len(texts))
	f.crossValidate(member, cfg, s)
	return f, s, nil
}

// check refuses labels and settings the cross-validation cannot run on.
func check(texts []string, member []bool, cfg Config) error {
	if len(texts) != len(member) {
		return fmt.Errorf("blind: %d texts, %d labels", len(texts), len(member))
	}
	members := 0
	for _, m := range member {
		if m {
			members++
		}
	}
	if cfg.Folds < 2 || members < cfg.Folds || len(texts)-members < cfg.Folds {
		return fmt.Errorf("blind: %d folds need at least as many members (%d) and non-members (%d)", cfg.Folds, members, len(texts)-members)
	}
	if !(cfg.Alpha > 0) {
		return errors.New("blind: smoothing alpha must be positive")
	}
	return nil
}

// featurized is a set's texts as feature ids, one id per distinct feature
// across all texts (labels unused), so that folds count into arrays.
type featurized struct {
	docs [][]int32
	// group is each text's group, texts of the same features (alike but
	// for case, punctuation and repeats) or near them (Jaccard of at
	// least NearDuplicateJaccard) in one, numbered in the order of their
	// first text, first[g]. A group is one fold's: a held-out text whose
	// twin sat in the training folds was scored by its own features, and
	// 100 randomly labelled texts, each also given in capitals, came out
	// "separable" at AUC 0.98.
	group  []int
	first  []int
	nfeat  int
	counts [2][]float64 // per class, scratch of crossValidate
	mark   []int32      // scratch of crossValidate
	stamp  int32
}

func featurize(texts []string) *featurized {
	ids := map[string]int32{}
	docs := make([][]int32, len(texts))
	for i, t := range texts {
		fs := Features(t)
		docs[i] = make([]int32, len(fs))
		for j, f := range fs {
			id, ok := ids[f]
			if !ok {
				id = int32(len(ids))
				ids[f] = id
			}
			docs[i][j] = id
		}
	}
	group, first := nearDuplicateGroups(docs)
	n := len(ids)
	return &featurized{docs: docs, group: group, first: first, nfeat: n, counts: [2][]float64{make([]float64, n), make([]float64, n)}, mark: make([]int32, n)}
}

// NearDuplicateJaccard is the Jaccard similarity of two texts' feature
// sets (binarized words and word pairs) from which the baseline keeps
// them in one fold. A near-copy in the training folds leaks its label as
// an exact one does: 200 random texts each given again with one word
// appended read blind AUC 0.97, "separable", under random labels. One
// word changed in 40 leaves about 0.9; two unrelated texts of one topic
// share well under half their word pairs.
const NearDuplicateJaccard = 0.5

// nearDuplicateGroups puts texts whose feature sets are equal, or have a
// Jaccard similarity of at least NearDuplicateJaccard, into one group
// (transitively), numbered in the order of each group's first text,
// first[g]. Candidate pairs come from MinHash bands (32 bands of 2: a
// pair at Jaccard 0.5 shares a band with probability 1 − 0.75³² ≈
// 0.9999), each checked exactly, so the set costs its features, not the
// square of its size.
func nearDuplicateGroups(docs [][]int32) (group, first []int) {
	sets := make([][]int32, len(docs))
	for i, d := range docs {
		sets[i] = slices.Compact(slices.Sorted(slices.Values(d)))
	}
	parent := make([]int, len(docs))
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	union := func(a, b int) {
		if ra, rb := find(a), find(b); ra != rb {
			parent[max(ra, rb)] = min(ra, rb) // the earlier text roots its group
		}
	}
	const bands, rows = 32, 2
	var sig [bands * rows]uint64
	buckets := map[[3]uint64]int{} // band and its rows -> the first text there
	for i, set := range sets {
		for j := range sig {
			sig[j] = math.MaxUint64
		}
		for _, id := range set {
			for j := range sig {
				sig[j] = min(sig[j], mix64(uint64(id)<<6|uint64(j)))
			}
		}
		if len(set) == 0 {
			continue // an empty set is alike only to another, equal, one
		}
		for b := range bands {
			key := [3]uint64{uint64(b), sig[b*rows], sig[b*rows+1]}
			if o, ok := buckets[key]; ok {
				if find(o) != find(i) && jaccard(sets[o], sets[i]) >= NearDuplicateJaccard {
					union(o, i)
				}
				continue
			}
			buckets[key] = i
		}
	}
	// Equal sets (empty ones too) are one group whatever the bands drew.
	byKey := map[string]int{}
	for i, set := range sets {
		key := fmt.Sprint(set)
		if o, ok := byKey[key]; ok {
			union(o, i)
		} else {
			byKey[key] = i
		}
	}
	group = make([]int, len(docs))
	number := map[int]int{}
	for i := range docs {
		r := find(i)
		g, ok := number[r]
		if !ok {
			g = len(first)
			number[r] = g
			first = append(first, i)
		}
		group[i] = g
	}
	return group, first
}

// jaccard is |a ∩ b| / |a ∪ b| of two sorted sets without repeats.
func jaccard(a, b []int32) float64 {
	inter := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// mix64 is splitmix64's finaliser: a hash of x whose bits all depend on
// every bit of x, so that each of the signature's 64 seeds orders the
// feature ids independently.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// crossValidate writes each text's out-of-fold score into out. It counts
// every text once and, per fold, takes the fold's texts out of the counts
// and puts them back, so that a fold costs its own texts' features, not
// the whole set's: the permutation test reruns it hundreds of times. The
// counts are whole numbers, exact in float64, so the scores are those of
// counting each fold's training texts afresh.
func (f *featurized) crossValidate(member []bool, cfg Config, out []float64) {
	fold := folds(member, f.group, f.first, cfg.Folds, cfg.Seed)
	byFold := make([][]int, cfg.Folds)
	for i, k := range fold {
		byFold[k] = append(byFold[k], i)
	}
	counts := f.counts
	clear(counts[0])
	clear(counts[1])
	var total [2]float64
	var ndocs [2]int
	for i, d := range f.docs {
		c := class(member[i])
		ndocs[c]++
		for _, id := range d {
			counts[c][id]++
		}
		total[c] += float64(len(d))
	}
	for k := range cfg.Folds {
		trainTotal, trainDocs := total, ndocs
		for _, i := range byFold[k] {
			c := class(member[i])
			trainDocs[c]--
			for _, id := range f.docs[i] {
				counts[c][id]--
			}
			trainTotal[c] -= float64(len(f.docs[i]))
		}
		// The vocabulary is the training folds': a feature they never saw
		// says nothing about either class. Every feature is in some text,
		// so those missing are the held-out fold's alone.
		f.stamp++
		gone := 0
		for _, i := range byFold[k] {
			for _, id := range f.docs[i] {
				if counts[0][id] == 0 && counts[1][id] == 0 && f.mark[id] != f.stamp {
					f.mark[id] = f.stamp
					gone++
				}
			}
		}
		vocab := f.nfeat - gone
		prior := math.Log(float64(trainDocs[1])) - math.Log(float64(trainDocs[0]))
		den := [2]float64{math.Log(trainTotal[0] + cfg.Alpha*float64(vocab)), math.Log(trainTotal[1] + cfg.Alpha*float64(vocab))}
		for _, i := range byFold[k] {
			s := prior
			for _, id := range f.docs[i] {
				if counts[0][id] == 0 && counts[1][id] == 0 {
					continue
				}
				s += math.Log(counts[1][id]+cfg.Alpha) - den[1] - math.Log(counts[0][id]+cfg.Alpha) + den[0]
			}
			out[i] = s
		}
		for _, i := range byFold[k] {
			c := class(member[i])
			for _, id := range f.docs[i] {
				counts[c][id]++
			}
		}
	}
}

// permutationP is the one-sided permutation p-value of the blind AUC auc:
// (1 + the permutations whose AUC is at least auc) / (1 + permutations),
// each the whole cross-validation under the labels shuffled. One-sided,
// because an AUC below 0.5 out of fold is cross-validation's artifact on
// small sets (the held-out class scarcer in its training folds), not a
// shift. The permuted AUC is computed as eval.AUC computes auc.
func (f *featurized) permutationP(member []bool, cfg Config, auc float64) float64 {
	if cfg.Permutations <= 0 || math.IsNaN(auc) {
		return math.NaN()
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x7065726d75746521))
	perm := slices.Clone(member)
	scores := make([]float64, len(member))
	atLeast := 0
	for range cfg.Permutations {
		rng.Shuffle(len(perm), func(a, b int) { perm[a], perm[b] = perm[b], perm[a] })
		f.crossValidate(perm, cfg, scores)
		ms, cs := split(scores, perm)
		if eval.AUC(ms, cs) >= auc {
			atLeast++
		}
	}
	return float64(1+atLeast) / float64(1+cfg.Permutations)
}

// split parts scores into the members' and the non-members'.
func split(scores []float64, member []bool) (ms, cs []float64) {
	for i, v := range scores {
		if member[i] {
			ms = append(ms, v)
		} else {
			cs = append(cs, v)
		}
	}
	return ms, cs
}

// class is naive Bayes' index of a label: 1 for a member.
func class(member bool) int {
	if member {
		return 1
	}
	return 0
}

// folds deals each class's groups of texts (group, the texts' groups;
// first, each group's first text, whose label is the group's class),
// shuffled, round-robin into k folds. Where every text is its own group
// these are the folds of dealing texts.
func folds(member []bool, group, first []int, k int, seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, 0x626c696e64))
	groupFold := make([]int, len(first))
	for _, want := range []bool{true, false} {
		var idx []int
		for g, i := range first {
			if member[i] == want {
				idx = append(idx, g)
			}
		}
		rng.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
		for j, g := range idx {
			groupFold[g] = j % k
		}
	}
	out := make([]int, len(member))
	for i, g := range group {
		out[i] = groupFold[g]
	}
	return out
}

// Result is the baseline scored on a labelled set: each text's
// out-of-fold score, their AUC and TPRs with bootstrap intervals, and
// the permutation test's p-value of the AUC.
type Result struct {
	Scores []float64
	eval.AuditStat
	// P is the permutation p-value (NaN when Permutations is 0), from
	// Permutations shuffles.
	P            float64
	Permutations int
}

// Verdicts of a blind baseline (Result.Verdict).
const (
	// VerdictSeparable: AUC at least SeparableAUC and above chance (P
	// below SignificanceLevel, or no test run): the texts alone tell the
	// classes apart.
	VerdictSeparable = "separable"
	// VerdictShift: above chance, but below SeparableAUC: a shift the
	// classifier finds, smaller than Das et al.'s popular sets show.
	VerdictShift = "shift"
	// VerdictInconclusive: an AUC at least SeparableAUC that the test
	// cannot tell from chance (a small set), or one at or below
	// 1 − SeparableAUC (ranked backwards out of fold).
	VerdictInconclusive = "inconclusive"
	// VerdictNoneFound: within chance of 0.5. This classifier found no
	// shift, which does not prove there is none.
	VerdictNoneFound = "none-found"
)

// Verdict says what the baseline shows of the set.
func (r Result) Verdict() string {
	a := float64(r.AUC)
	tested := !math.IsNaN(r.P)
	above := tested && r.P < SignificanceLevel
	switch {
	case a >= SeparableAUC && (above || !tested):
		return VerdictSeparable
	case a >= SeparableAUC || a <= 1-SeparableAUC:
		return VerdictInconclusive
	case above && a > 0.5:
		return VerdictShift
	}
	return VerdictNoneFound
}

// Separable says the texts alone tell the classes apart
// (VerdictSeparable).
func (r Result) Separable() bool { return r.Verdict() == VerdictSeparable }

// Evaluate scores the texts (Scores), the scores against the labels with
// eval's AUC and stratified bootstrap (b resamples, seed bootSeed), and
// the AUC with cfg.Permutations label permutations.
func Evaluate(texts []string, member []bool, cfg Config, b int, bootSeed uint64) (Result, error) {
	f, s, err := outOfFold(texts, member, cfg)
	if err != nil {
		return Result{}, err
	}
	ms, cs := split(s, member)
	st := eval.ScoreMembership(ms, cs, b, bootSeed)
	return Result{Scores: s, AuditStat: st, P: f.permutationP(member, cfg, float64(st.AUC)), Permutations: max(cfg.Permutations, 0)}, nil
}
