package eval

import "github.com/memo-research/memo/internal/runfiles"

// lowercase: the ratio of the text's log-perplexity to its lowercased
// version's (Carlini et al. 2021's "Lowercase" metric), mean token loss
// over mean token loss; lower means member (a memorized text is easy
// as written, not once its case changes). Scored by memo audit alone,
// which makes the second pass over the lowercased text.
func init() {
	RegisterMIAStatistic(MIAStatistic{
		Name: "lowercase", Label: "lowercase ratio", Needs: NeedLowercase, Order: 22, AuditOnly: true,
		PerDoc: func(c *runfiles.Completion, s *Score, in DocInput) float64 {
			return LowercaseRatio(c.TokenLosses, in.LowercaseLosses)
		},
	})
}

// LowercaseRatio is MeanLoss(losses) / MeanLoss(lowerLosses), the log
// of the text's perplexity over the log of its lowercased version's;
// NaN when either has no tokens.
func LowercaseRatio(losses, lowerLosses []float32) float64 {
	return MeanLoss(losses) / MeanLoss(lowerLosses)
}
