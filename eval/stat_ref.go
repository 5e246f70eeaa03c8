package eval

import (
	"math"

	"github.com/memo-research/memo/internal/runfiles"
)

// ref: the loss minus a reference model's loss of the same document
// (eval.reference, or the ref_loss extract recorded); lower means member.
// Columns ref_loss and ref_diff, fixed fields of Score.
func init() {
	RegisterMIAStatistic(MIAStatistic{
		Name: "ref", Label: "reference-model difference", Needs: NeedReference, Order: 40,
		Field: func(s *Score) *float64 { return &s.RefDiff },
		PerDoc: func(c *runfiles.Completion, s *Score, in DocInput) float64 {
			s.RefLoss = c.RefLoss
			if !math.IsNaN(in.RefLoss) {
				s.RefLoss = in.RefLoss
			}
			return s.Loss - s.RefLoss
		},
	})
}
