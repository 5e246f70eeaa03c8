package eval

import (
	"fmt"
	"math"

	"github.com/memo-research/memo/eval/calibrated"
)

// Config is the [eval] table of an experiment spec.
type Config struct {
	// Bootstrap is the number of resamples behind each 95 % confidence
	// interval: 100 to 1000000, or 0 to leave the intervals out.
	Bootstrap int `toml:"bootstrap" json:"bootstrap"`
	// Seed seeds the bootstrap resampling.
	Seed int64 `toml:"seed" json:"seed"`
	// MinKFraction is the K of Min-K% Prob as a fraction of the document's
	// tokens (0.2 = the 20 % least likely tokens).
	MinKFraction float64 `toml:"mink_fraction" json:"mink_fraction"`
	// Reference, when set, is another run directory or its completions.arrow
	// whose per-document losses serve as the reference model's for the
	// loss-difference attack, matched by the window each was scored over
	// (by document text in files that record no window). Empty uses the
	// ref_loss column that extract wrote, when it holds numbers.
	Reference string `toml:"reference" json:"reference"`
	// FPR is the false positive rate below which the true positive rate is
	// reported, strictly, as mimir and LiRA do (0.01 = TPR at FPR < 1 %);
	// the tables always give TPR at 0.1 % and 1 % as well.
	FPR float64 `toml:"fpr" json:"fpr"`
	// ExtractableQ is the q of probabilistic extraction (Hayes et al.
	// 2024): a document counts as (n, q)-extractable when n samples of the
	// attack's decoding reproduce its suffix with probability >= q. 0.5:
	// more likely than not.
	ExtractableQ float64 `toml:"extractable_q" json:"extractable_q"`
	// Calibrated are the calibrated attacks' settings: the run's [mia]
	// table, which experiments and memo eval pass in (not an [eval] key).
	Calibrated calibrated.Config `toml:"-" json:"-"`
}

// DefaultConfig: 1,000 bootstrap resamples, Min-K% with K = 20 %, TPR at
// 1 % FPR, (n, 0.5)-extractability.
func DefaultConfig() Config {
	return Config{Bootstrap: 1000, Seed: 1234, MinKFraction: 0.2, FPR: 0.01, ExtractableQ: 0.5, Calibrated: calibrated.DefaultConfig()}
}

// Validate checks every key and names the offending one in its error.
func (c Config) Validate() error {
	if c.Bootstrap != 0 && (c.Bootstrap < 100 || c.Bootstrap > 1_000_000) {
		return fmt.Errorf("eval.bootstrap = %d: must be 0 (no intervals) or 100 to 1000000 (fewer resamples do not make a 95 %% interval)", c.Bootstrap)
	}
	if math.IsNaN(c.MinKFraction) || c.MinKFraction <= 0 || c.MinKFraction > 1 {
		return fmt.Errorf("eval.mink_fraction = %v: must be in (0, 1], e.g. 0.2 for Min-20%%", c.MinKFraction)
	}
	if math.IsNaN(c.FPR) || c.FPR <= 0 || c.FPR >= 1 {
		return fmt.Errorf("eval.fpr = %v: must be in (0, 1), e.g. 0.01", c.FPR)
	}
	if math.IsNaN(c.ExtractableQ) || c.ExtractableQ <= 0 || c.ExtractableQ > 1 {
		return fmt.Errorf("eval.extractable_q = %v: must be in (0, 1], e.g. 0.5", c.ExtractableQ)
	}
	return nil
}
