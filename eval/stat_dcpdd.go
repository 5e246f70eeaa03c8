package eval

import (
	"math"

	"github.com/memo-research/memo/internal/runfiles"
)

// dcpdd: DC-PDD (Zhang et al. 2024, arXiv 2409.14781), the divergence of
// the model's token probabilities from a reference corpus's token
// frequencies; higher means member. Scored by memo audit alone, with
// the token frequencies of a corpus the user names.
func init() {
	RegisterMIAStatistic(MIAStatistic{
		Name: "dcpdd", Label: "DC-PDD", HigherMember: true, Needs: NeedFrequency, Order: 25, AuditOnly: true,
		PerDoc: func(c *runfiles.Completion, _ *Score, in DocInput) float64 {
			return DCPDD(in.Tokens, c.TokenLosses, in.Frequency, in.DCPDDCap)
		},
	})
}

// DCPDDDefaultCap is the paper's clipping bound a (its code's default,
// --a 0.01).
const DCPDDDefaultCap = 0.01

// TokenFrequency is DC-PDD's reference distribution: how often each token
// id occurs in a reference corpus, tokenized by the audited model's
// tokenizer.
type TokenFrequency struct {
	Counts []int64 // by token id; len is the vocabulary size
	Total  int64   // sum of Counts
}

// NewTokenFrequency counts the tokens of docs over a vocabulary of vocab
// ids; ids outside it are left out (they cannot be the model's).
func NewTokenFrequency(vocab int, docs [][]int32) *TokenFrequency {
	f := &TokenFrequency{Counts: make([]int64, vocab)}
	for _, d := range docs {
		for _, id := range d {
			if id >= 0 && int(id) < vocab {
				f.Counts[id]++
				f.Total++
			}
		}
	}
	return f
}

// Prob is the Laplace-smoothed frequency of id, (count + 1) / (total + V),
// as the paper's code smooths it, so that a token the corpus lacks does
// not have an infinite log.
func (f *TokenFrequency) Prob(id int32) float64 {
	var c int64
	if id >= 0 && int(id) < len(f.Counts) {
		c = f.Counts[id]
	}
	return float64(c+1) / float64(f.Total+int64(len(f.Counts)))
}

// DCPDD is the DC-PDD score of a text whose predicted tokens are tokens,
// with token losses losses (−log p, one per token): over the first
// occurrence of each distinct token, α = p(x) · log(1/f(x)) with f the
// smoothed reference frequency, clipped at capA (a; α > a counts as a),
// and the score is the mean α. A token the model finds likely but the
// corpus finds rare raises it: the sign of a member. NaN without tokens,
// a reference or a positive cap, or when tokens and losses differ in
// length.
func DCPDD(tokens []int32, losses []float32, f *TokenFrequency, capA float64) float64 {
	if len(tokens) == 0 || len(tokens) != len(losses) || f == nil || !(capA > 0) {
		return nan()
	}
	seen := make(map[int32]bool, len(tokens))
	var sum float64
	n := 0
	for i, id := range tokens {
		if seen[id] {
			continue
		}
		seen[id] = true
		a := math.Exp(-float64(losses[i])) * -math.Log(f.Prob(id))
		sum += math.Min(a, capA)
		n++
	}
	return sum / float64(n)
}
