package eval

import "github.com/memo-research/memo/internal/runfiles"

// grad_norm: ‖∇θ L‖₂ of the document's window loss, computed by extract
// (extract.grad_norm) and copied from completions.arrow; lower means
// member.
func init() {
	RegisterMIAStatistic(MIAStatistic{
		Name: "grad_norm", Label: "gradient norm", Needs: NeedGradient, Order: 70,
		PerDoc: func(c *runfiles.Completion, _ *Score, _ DocInput) float64 { return c.GradNorm },
	})
}
