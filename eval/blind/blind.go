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
package blind

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"unicode"

	"github.com/memo-research/memo/eval"
)

// SeparableAUC is the blind AUC from which an audit says that the labels
// are separable without the model: Das et al. find 0.6 and above on
// several popular sets, against 0.5 for a set without a shift.
const SeparableAUC = 0.6

// Config sets the baseline.
type Config struct {
	Folds int     // cross-validation folds, at least 2
	Seed  uint64  // seeds the folds' assignment
	Alpha float64 // the additive (Laplace) smoothing of naive Bayes
}

// DefaultConfig: 5 folds, Laplace smoothing.
func DefaultConfig() Config { return Config{Folds: 5, Seed: 1234, Alpha: 1} }

// Features are the distinct lowercased words and adjacent word pairs of
// text, words being runs of letters and digits.
func Features(text string) []string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
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

// Scores returns each text's out-of-fold score, the naive Bayes log odds
// that it is a member (higher means member), from a model trained on the
// other folds. Folds are stratified: each class is shuffled by cfg.Seed
// and dealt round-robin, so every fold holds both classes in proportion.
func Scores(texts []string, member []bool, cfg Config) ([]float64, error) {
	if len(texts) != len(member) {
		return nil, fmt.Errorf("blind: %d texts, %d labels", len(texts), len(member))
	}
	var nm int
	for _, m := range member {
		if m {
			nm++
		}
	}
	if cfg.Folds < 2 || nm < cfg.Folds || len(texts)-nm < cfg.Folds {
		return nil, fmt.Errorf("blind: %d folds need at least as many members (%d) and non-members (%d)", cfg.Folds, nm, len(texts)-nm)
	}
	if !(cfg.Alpha > 0) {
		return nil, errors.New("blind: smoothing alpha must be positive")
	}
	// One id per feature across all texts (labels unused), so that
	// each fold counts into arrays rather than maps.
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
	fold := folds(member, cfg.Folds, cfg.Seed)
	out := make([]float64, len(texts))
	counts := [2][]float64{make([]float64, len(ids)), make([]float64, len(ids))}
	for f := range cfg.Folds {
		for c := range counts {
			clear(counts[c])
		}
		var total [2]float64
		var ndocs [2]int
		for i, d := range docs {
			if fold[i] == f {
				continue
			}
			c := class(member[i])
			ndocs[c]++
			for _, id := range d {
				counts[c][id]++
			}
			total[c] += float64(len(d))
		}
		// The vocabulary is the training folds': a feature they never saw
		// says nothing about either class.
		vocab := 0
		for id := range counts[0] {
			if counts[0][id] > 0 || counts[1][id] > 0 {
				vocab++
			}
		}
		prior := math.Log(float64(ndocs[1])) - math.Log(float64(ndocs[0]))
		den := [2]float64{math.Log(total[0] + cfg.Alpha*float64(vocab)), math.Log(total[1] + cfg.Alpha*float64(vocab))}
		for i, d := range docs {
			if fold[i] != f {
				continue
			}
			s := prior
			for _, id := range d {
				if counts[0][id] == 0 && counts[1][id] == 0 {
					continue
				}
				s += math.Log(counts[1][id]+cfg.Alpha) - den[1] - math.Log(counts[0][id]+cfg.Alpha) + den[0]
			}
			out[i] = s
		}
	}
	return out, nil
}

// class is naive Bayes' index of a label: 1 for a member.
func class(member bool) int {
	if member {
		return 1
	}
	return 0
}

// folds deals each class's texts, shuffled, round-robin into k folds.
func folds(member []bool, k int, seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, 0x626c696e64))
	out := make([]int, len(member))
	for _, want := range []bool{true, false} {
		var idx []int
		for i, m := range member {
			if m == want {
				idx = append(idx, i)
			}
		}
		rng.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
		for j, i := range idx {
			out[i] = j % k
		}
	}
	return out
}

// Result is the baseline scored on a labelled set: each text's
// out-of-fold score and their AUC and TPRs with bootstrap intervals.
type Result struct {
	Scores []float64
	eval.AuditStat
}

// Separable says the texts alone tell the classes apart: an AUC at least
// SeparableAUC, or as far below 0.5 (the classes told apart and ranked
// backwards out of fold; on a small set often cross-validation's own
// artifact, the held-out class being scarcer in its training folds).
func (r Result) Separable() bool {
	a := float64(r.AUC)
	return a >= SeparableAUC || a <= 1-SeparableAUC
}

// Evaluate scores the texts (Scores) and the scores against the labels
// with eval's AUC and stratified bootstrap (b resamples, seed bootSeed).
func Evaluate(texts []string, member []bool, cfg Config, b int, bootSeed uint64) (Result, error) {
	s, err := Scores(texts, member, cfg)
	if err != nil {
		return Result{}, err
	}
	var ms, cs []float64
	for i, v := range s {
		if member[i] {
			ms = append(ms, v)
		} else {
			cs = append(cs, v)
		}
	}
	return Result{Scores: s, AuditStat: eval.ScoreMembership(ms, cs, b, bootSeed)}, nil
}
