package extract

import (
	"fmt"
	"math"
	"strings"

	"github.com/memo-research/memo/engine/approx"
	"github.com/memo-research/memo/precision"
)

// Speculative decoders.
const (
	SpecNone      = "none"
	SpecQuantSpec = "quantspec"
)

// Attentions lists extract.attention's values.
var Attentions = []string{approx.AttnExact, approx.AttnLoki, approx.AttnSift}

// LokiConfig is [extract.loki]: Loki's sparse attention (Singhania et al. 2024).
type LokiConfig struct {
	// Rank is the number of principal dimensions of the post-rotary keys
	// that score the cached tokens (at most the head dimension).
	Rank int `toml:"rank" json:"rank"`
	// TopK is the fraction (<= 1) or the count (> 1) of each query's
	// cached tokens attended at every decode step.
	TopK float64 `toml:"top_k" json:"top_k"`
	// CalibrationDocs is how many training (target) documents, the first by
	// doc_id, calibrate the key basis; it is cached beside the checkpoint.
	CalibrationDocs int `toml:"calibration_docs" json:"calibration_docs"`
}

// SiftConfig is [extract.sift]: SiftAttention's threshold.
type SiftConfig struct {
	// Quantile is tau: the quantile of each head's attention probabilities
	// whose power law over decode steps predicts the threshold; tokens
	// below the threshold are dropped (0.9 keeps about a tenth).
	Quantile float64 `toml:"quantile" json:"quantile"`
	// Warmup is the number of first decode steps attended exactly, whose
	// tau-quantiles the power law is fitted to (>= 2).
	Warmup int `toml:"warmup" json:"warmup"`
}

// QuantSpecConfig is [extract.quantspec]: self-speculative decoding.
type QuantSpecConfig struct {
	// Gamma is the number of tokens the draft proposes per round.
	Gamma int `toml:"gamma" json:"gamma"`
}

func defaultApprox(c *Config) {
	c.KVBits, c.Attention, c.Speculative = 16, approx.AttnExact, SpecNone
	c.Loki = LokiConfig{Rank: 8, TopK: 0.25, CalibrationDocs: 32}
	c.Sift = SiftConfig{Quantile: 0.9, Warmup: 4}
	c.QuantSpec = QuantSpecConfig{Gamma: 4}
}

// approximate reports whether any inference approximation is on.
func (c Config) approximate() bool {
	return c.KVBits != 16 || c.Attention != approx.AttnExact || c.Speculative != SpecNone
}

// canonical is c with the settings of approximations that are off
// cleared: their JSON (omitempty, omitzero) then vanishes, so an exact
// attack's slug and recorded config name only the keys that shape exact
// decoding, and two exact attacks that differ only in an unused
// approximation setting share one slug (one output file).
func (c Config) canonical() Config {
	c.Approximation = ""
	if c.Precision == precision.FP32 {
		c.Precision = ""
	}
	if c.KVBits == 16 {
		c.KVBits = 0
	}
	if c.Attention != approx.AttnLoki {
		c.Loki = LokiConfig{}
	}
	if c.Attention != approx.AttnSift {
		c.Sift = SiftConfig{}
	}
	if c.Attention == approx.AttnExact {
		c.Attention = ""
	}
	if c.Speculative == SpecNone {
		c.Speculative, c.QuantSpec = "", QuantSpecConfig{}
	}
	return c
}

func (c Config) validateApprox() error {
	switch c.KVBits {
	case 16, 8, 4:
	default:
		return fmt.Errorf("extract.kv_bits = %d: must be 16 (exact), 8 or 4", c.KVBits)
	}
	if !oneOf(c.Attention, Attentions) {
		return fmt.Errorf("extract.attention = %q: must be one of %s", c.Attention, strings.Join(Attentions, ", "))
	}
	if c.Loki.Rank < 1 {
		return fmt.Errorf("extract.loki.rank = %d: must be >= 1 (and at most the head dimension)", c.Loki.Rank)
	}
	// A count is whole: 1.5 was cut to 1 key, fewer than 1 (everything).
	if !(c.Loki.TopK > 0) || math.IsInf(c.Loki.TopK, 1) || c.Loki.TopK > 1 && c.Loki.TopK != math.Trunc(c.Loki.TopK) {
		return fmt.Errorf("extract.loki.top_k = %v: must be a fraction in (0, 1] or a whole count > 1", c.Loki.TopK)
	}
	if c.Loki.CalibrationDocs < 1 {
		return fmt.Errorf("extract.loki.calibration_docs = %d: must be >= 1", c.Loki.CalibrationDocs)
	}
	if !(c.Sift.Quantile > 0 && c.Sift.Quantile < 1) {
		return fmt.Errorf("extract.sift.quantile = %v: must be in (0, 1), e.g. 0.9", c.Sift.Quantile)
	}
	if c.Sift.Warmup < 2 {
		return fmt.Errorf("extract.sift.warmup = %d: must be >= 2 (a power law needs two points)", c.Sift.Warmup)
	}
	switch c.Speculative {
	case SpecNone:
	case SpecQuantSpec:
		if c.Decoding != DecodeGreedy {
			return fmt.Errorf("extract.speculative = %q: needs extract.decoding = %q, not %q", c.Speculative, DecodeGreedy, c.Decoding)
		}
		if c.KVBits != 16 || c.Attention != approx.AttnExact {
			return fmt.Errorf("extract.speculative = %q: the verifying model decodes exactly; set extract.kv_bits = 16 and extract.attention = %q", c.Speculative, approx.AttnExact)
		}
	default:
		return fmt.Errorf("extract.speculative = %q: must be %q or %q", c.Speculative, SpecNone, SpecQuantSpec)
	}
	if c.QuantSpec.Gamma < 1 || c.QuantSpec.Gamma > 32 {
		return fmt.Errorf("extract.quantspec.gamma = %d: must be between 1 and 32", c.QuantSpec.Gamma)
	}
	return nil
}

// CheckHeadDim reports a Loki rank the model cannot serve: the keys' PCA
// basis has one component per head dimension. It is checked when a spec
// is loaded (the model's shape known from the spec) and again before a
// basis is calibrated (the shape known from the checkpoint), with one
// message for both.
func (c Config) CheckHeadDim(headDim int) error {
	if c.Attention == approx.AttnLoki && c.Loki.Rank > headDim {
		return fmt.Errorf("extract.loki.rank = %d: must be at most the model's head dimension %d (the keys' PCA basis has that many components)", c.Loki.Rank, headDim)
	}
	return nil
}

// modelApprox is the model's approximation for this attack (basis: the
// Loki key basis, nil unless attention is loki).
func (c Config) modelApprox(basis *approx.LokiBasis) approx.Approx {
	return approx.Approx{
		KVBits: c.KVBits, Attention: c.Attention, Loki: basis, LokiRank: c.Loki.Rank, LokiTopK: c.Loki.TopK,
		SiftQuantile: c.Sift.Quantile, SiftWarmup: c.Sift.Warmup,
	}
}

// approxName names the approximation for slugs, logs and eval: "exact",
// "kv8", "kv4", "loki-r8-k0.25", "sift-q0.9", "quantspec-g4", joined by
// "+" when several apply.
func (c Config) approxName() string {
	var parts []string
	if c.KVBits != 16 {
		parts = append(parts, fmt.Sprintf("kv%d", c.KVBits))
	}
	switch c.Attention {
	case approx.AttnLoki:
		parts = append(parts, fmt.Sprintf("loki-r%d-k%g", c.Loki.Rank, c.Loki.TopK))
	case approx.AttnSift:
		parts = append(parts, fmt.Sprintf("sift-q%g", c.Sift.Quantile))
	}
	if c.Speculative == SpecQuantSpec {
		parts = append(parts, fmt.Sprintf("quantspec-g%d", c.QuantSpec.Gamma))
	}
	if len(parts) == 0 {
		return "exact"
	}
	return strings.Join(parts, "+")
}

// ApproximationKeys are the keys, relative to [extract], that
// extract.approximation sets: a config or flag value for one of them is
// replaced by the name's. The names with no dot are also flags of memo
// extract.
var ApproximationKeys = []string{"kv_bits", "attention", "speculative", "loki.rank", "loki.top_k", "sift.quantile", "quantspec.gamma"}

// parseApproximation sets the keys extract.approximation names: "exact",
// or approxName's parts joined by "+" ("kv8", "kv4", "loki-r<rank>-k<top_k>",
// "sift-q<quantile>", "quantspec-g<gamma>").
func (c *Config) parseApproximation(name string) error {
	bad := func(part string) error {
		return fmt.Errorf("extract.approximation = %q: part %q: want exact, kv8, kv4, loki-r<rank>-k<top_k>, sift-q<quantile> or quantspec-g<gamma>, joined by +", name, part)
	}
	c.KVBits, c.Attention, c.Speculative = 16, approx.AttnExact, SpecNone
	for _, part := range strings.Split(name, "+") {
		var err error
		switch {
		case part == "exact":
		case part == "kv8":
			c.KVBits = 8
		case part == "kv4":
			c.KVBits = 4
		case strings.HasPrefix(part, "loki-"):
			c.Attention = approx.AttnLoki
			_, err = fmt.Sscanf(part, "loki-r%d-k%g", &c.Loki.Rank, &c.Loki.TopK)
		case strings.HasPrefix(part, "sift-"):
			c.Attention = approx.AttnSift
			_, err = fmt.Sscanf(part, "sift-q%g", &c.Sift.Quantile)
		case strings.HasPrefix(part, "quantspec-"):
			c.Speculative = SpecQuantSpec
			_, err = fmt.Sscanf(part, "quantspec-g%d", &c.QuantSpec.Gamma)
		default:
			return bad(part)
		}
		if err != nil {
			return bad(part)
		}
	}
	if got := c.approxName(); got != name && name != "exact" {
		return fmt.Errorf("extract.approximation = %q: reads as %q; write it that way", name, got)
	}
	return nil
}

// Resolved applies extract.approximation, when set, to the keys it names.
func (c Config) Resolved() (Config, error) {
	if c.Approximation == "" {
		return c, nil
	}
	err := c.parseApproximation(c.Approximation)
	return c, err
}
