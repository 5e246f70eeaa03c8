package eval

import "github.com/memo-research/memo/internal/runfiles"

// zlib: the loss over the zlib-compressed length of the same span, the
// window the losses were taken over (Carlini et al. 2021); lower means
// member. Columns zlib_len and zlib_ratio, fixed fields of Score.
func init() {
	RegisterMIAStatistic(MIAStatistic{
		Name: "zlib", Label: "zlib ratio", Needs: NeedTokenLosses, Order: 20,
		Field: func(s *Score) *float64 { return &s.ZlibRatio },
		PerDoc: func(c *runfiles.Completion, s *Score, _ DocInput) float64 {
			zt := c.WindowText
			if zt == "" {
				zt = c.Text
			}
			s.ZlibLen = ZlibLen(zt)
			return s.Loss / float64(s.ZlibLen)
		},
	})
}
