package eval

import "github.com/memo-research/memo/internal/runfiles"

// loss: the mean token loss over the scored window (Yeom et al. 2018);
// lower means member. Column loss, a fixed field of Score.
func init() {
	RegisterMIAStatistic(MIAStatistic{
		Name: "loss", Label: "loss", Needs: NeedTokenLosses, Order: 10,
		Field: func(s *Score) *float64 { return &s.Loss },
		PerDoc: func(c *runfiles.Completion, _ *Score, _ DocInput) float64 {
			if len(c.TokenLosses) > 0 {
				return MeanLoss(c.TokenLosses)
			}
			return c.Loss
		},
	})
}
