package eval

import "github.com/memo-research/memo/internal/runfiles"

// mink_pp: Min-K%++ (Zhang et al. 2024), computed by extract from the
// next-token distributions and copied from completions.arrow; higher
// means member. Column mink_pp, a fixed field of Score (it comes before
// p_extract in scores.parquet).
func init() {
	RegisterMIAStatistic(MIAStatistic{
		Name: "mink_pp", Label: "min-k%++", HigherMember: true, Needs: NeedDistribution, Order: 50,
		Field:  func(s *Score) *float64 { return &s.MinKPP },
		PerDoc: func(c *runfiles.Completion, _ *Score, _ DocInput) float64 { return c.MinKPP },
	})
}
