package extract

import (
	"math"

	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/memo-research/memo/internal/runfiles"
)

// ApproxMetrics are one row's runfiles.CompletionsApproxFields.
type ApproxMetrics struct {
	ExactAgree      int
	AttnMassKept    float64
	KVBytesPerToken float64
	SpecAccept      float64
}

// noApprox is the row of a document not attacked.
var noApprox = ApproxMetrics{AttnMassKept: math.NaN(), KVBytesPerToken: math.NaN(), SpecAccept: math.NaN()}

func hasApprox(rows []Row) bool {
	for _, r := range rows {
		if r.Approx != nil {
			return true
		}
	}
	return false
}

// appendApprox fills runfiles.CompletionsApproxFields, which follow
// runfiles.CompletionsSchema's fields.
func appendApprox(b *array.RecordBuilder, r Row) {
	m := noApprox
	if r.Approx != nil {
		m = *r.Approx
	}
	n := len(runfiles.CompletionsSchema.Fields())
	b.Field(n).(*array.Int32Builder).Append(int32(m.ExactAgree))
	b.Field(n + 1).(*array.Float64Builder).Append(m.AttnMassKept)
	b.Field(n + 2).(*array.Float64Builder).Append(m.KVBytesPerToken)
	b.Field(n + 3).(*array.Float64Builder).Append(m.SpecAccept)
}
