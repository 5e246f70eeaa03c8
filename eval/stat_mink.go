package eval

import "github.com/memo-research/memo/internal/runfiles"

// mink: Min-K% Prob (Shi et al. 2023), the mean of the int(k·n) highest token
// losses, k = eval.mink_fraction; lower means member. Column mink, a
// fixed field of Score.
func init() {
	RegisterMIAStatistic(MIAStatistic{
		Name: "mink", Label: "min-k% loss", Needs: NeedTokenLosses, Order: 30,
		Field: func(s *Score) *float64 { return &s.MinK },
		PerDoc: func(c *runfiles.Completion, _ *Score, in DocInput) float64 {
			if len(c.TokenLosses) > 0 {
				return MinK(c.TokenLosses, in.MinKFraction)
			}
			return c.MinK
		},
	})
}
