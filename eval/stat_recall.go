package eval

import "github.com/memo-research/memo/internal/runfiles"

// recall: ReCaLL (Xie et al. 2024), LL(x|P)/LL(x) with P a non-member
// prefix, computed by extract and copied from completions.arrow; higher
// means member.
func init() {
	RegisterMIAStatistic(MIAStatistic{
		Name: "recall", Label: "ReCaLL", HigherMember: true, Needs: NeedPrefixedPass, Order: 60,
		PerDoc: func(c *runfiles.Completion, _ *Score, _ DocInput) float64 { return c.ReCaLL },
	})
}
