package extract

import (
	"math"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// ApproxFields are the columns completions.arrow gains after Schema's when
// the attack decoded under an approximation (extract.kv_bits,
// extract.attention or extract.speculative not at their defaults) or
// named one in extract.approximation (even "exact"); other attacks write
// Schema alone, as before these keys existed.
//
//   - exact_agree: generated tokens equal to exact decoding's (same
//     decoding, same seed) before the first that differs; the suffix
//     length when all agree;
//   - attn_mass_kept: the mean over decode steps, layers, heads of the
//     exact attention probability on the tokens attended (1 unless sparse);
//   - kv_bytes_per_token: mean key and value bytes read per decode step,
//     all layers (model.ApproxStats; NaN for quantspec, whose two models
//     read differently sized caches);
//   - spec_accept: QuantSpec's accepted / proposed draft tokens (NaN
//     without speculation).
//
// Rows not attacked hold 0, NaN, NaN, NaN.
var ApproxFields = []arrow.Field{
	{Name: "exact_agree", Type: arrow.PrimitiveTypes.Int32},
	{Name: "attn_mass_kept", Type: arrow.PrimitiveTypes.Float64},
	{Name: "kv_bytes_per_token", Type: arrow.PrimitiveTypes.Float64},
	{Name: "spec_accept", Type: arrow.PrimitiveTypes.Float64},
}

// ApproxMetrics are one row's ApproxFields.
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

// appendApprox fills ApproxFields, which follow Schema's fields.
func appendApprox(b *array.RecordBuilder, r Row) {
	m := noApprox
	if r.Approx != nil {
		m = *r.Approx
	}
	n := len(Schema.Fields())
	b.Field(n).(*array.Int32Builder).Append(int32(m.ExactAgree))
	b.Field(n + 1).(*array.Float64Builder).Append(m.AttnMassKept)
	b.Field(n + 2).(*array.Float64Builder).Append(m.KVBytesPerToken)
	b.Field(n + 3).(*array.Float64Builder).Append(m.SpecAccept)
}
