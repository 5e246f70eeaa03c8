package eval

import (
	"math"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// ApproxColumns are one row's columns of an approximate attack, as
// extract documents them (runfiles.CompletionsApproxFields).
type ApproxColumns struct {
	ExactAgree      int     // generated tokens equal to exact decoding's before the first difference
	AttnMassKept    float64 // mean exact attention probability on the tokens attended
	KVBytesPerToken float64 // mean key/value bytes read per decode step (NaN: not measured)
	SpecAccept      float64 // QuantSpec's accepted / proposed draft tokens (NaN: no speculation)
}

// approxCols are a batch's approximate-attack columns (all nil when absent).
type approxCols struct {
	agree               *array.Int32
	mass, bytes, accept *array.Float64
}

func approxColumnsOf(rec arrow.Record) (approxCols, error) {
	var c approxCols
	var errs [4]error
	c.agree, errs[0] = column[*array.Int32](rec, "exact_agree", false)
	c.mass, errs[1] = column[*array.Float64](rec, "attn_mass_kept", false)
	c.bytes, errs[2] = column[*array.Float64](rec, "kv_bytes_per_token", false)
	c.accept, errs[3] = column[*array.Float64](rec, "spec_accept", false)
	for _, err := range errs {
		if err != nil {
			return c, err
		}
	}
	return c, nil
}

func (c approxCols) at(i int) *ApproxColumns {
	if c.agree == nil || c.mass == nil || c.bytes == nil || c.accept == nil {
		return nil
	}
	return &ApproxColumns{ExactAgree: int(c.agree.Value(i)), AttnMassKept: floatOrNaN(c.mass, i),
		KVBytesPerToken: floatOrNaN(c.bytes, i), SpecAccept: floatOrNaN(c.accept, i)}
}

// ApproxSummary is summary.json's "approx": the attacked documents' means
// of the approximate-attack columns (NaN means unmeasured: null in JSON).
type ApproxSummary struct {
	// Method is the approximation as extract named it ("kv4", "loki-r8-k0.25", …).
	Method string `json:"method"`
	N      int    `json:"n"`
	// ExactAgree is the mean number of tokens before the first that
	// differs from exact decoding; FullAgreement the fraction of documents
	// whose whole generation is exact decoding's.
	ExactAgree      Num `json:"exact_agree"`
	FullAgreement   Num `json:"full_agreement"`
	AttnMassKept    Num `json:"attn_mass_kept"`
	KVBytesPerToken Num `json:"kv_bytes_per_token"`
	SpecAccept      Num `json:"spec_accept"`
}

// summarizeApprox is nil for completions without the columns.
func summarizeApprox(comps []Completion, method string) *ApproxSummary {
	var s ApproxSummary
	var agree, full, mass, bytes, accept, nb, na float64
	for _, c := range comps {
		if c.Approx == nil || c.Status != StatusOK {
			continue
		}
		s.N++
		a := c.Approx
		agree += float64(a.ExactAgree)
		if a.ExactAgree >= len(c.Generated) {
			full++
		}
		mass += a.AttnMassKept
		if !math.IsNaN(a.KVBytesPerToken) {
			bytes, nb = bytes+a.KVBytesPerToken, nb+1
		}
		if !math.IsNaN(a.SpecAccept) {
			accept, na = accept+a.SpecAccept, na+1
		}
	}
	if s.N == 0 {
		return nil
	}
	n := float64(s.N)
	s.Method = method
	s.ExactAgree, s.FullAgreement, s.AttnMassKept = Num(agree/n), Num(full/n), Num(mass/n)
	s.KVBytesPerToken, s.SpecAccept = Num(math.NaN()), Num(math.NaN())
	if nb > 0 {
		s.KVBytesPerToken = Num(bytes / nb)
	}
	if na > 0 {
		s.SpecAccept = Num(accept / na)
	}
	return &s
}
