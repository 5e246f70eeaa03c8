package eval

import (
	"math"

	"github.com/memo-research/memo/internal/runfiles"
)

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
func summarizeApprox(comps []runfiles.Completion, method string) *ApproxSummary {
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
