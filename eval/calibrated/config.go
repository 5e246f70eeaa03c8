package calibrated

import (
	"errors"
	"fmt"
	"math"
)

// Config is an experiment's [mia] table: how many reference models memo
// trains for the calibrated attacks and the settings eval scores them
// with.
type Config struct {
	// References is how many reference models to train for the calibrated
	// attacks (LiRA, RMIA, counterfactual memorization): each on a random
	// half of the candidate pool (the targets and the controls) plus the
	// same background, with the target's model, training and goldfish
	// settings and seeds of its own. Every candidate is trained on by
	// exactly half of them (models 2p and 2p+1 split the pool between
	// them). 0 trains none; otherwise an even number >= 2. Trained models
	// are kept in the cache (MEMO_CACHE/references) and reused by any run
	// with the same dataset, settings and half.
	References int `toml:"references" json:"references"`
	// RMIAA is offline RMIA's a: Pr(x) = ((1+a)·mean over the models that
	// did not train on x + (1−a)) / 2 (Zarifzadeh et al. 2024), in [0, 1];
	// -1 chooses it as the paper does, with reference model 0 as the target
	// (summary.json's calibrated.rmia_a says which).
	RMIAA float64 `toml:"rmia_a" json:"rmia_a"`
	// RMIAGamma is RMIA's γ: a candidate's score is the fraction of
	// population samples z it dominates by a likelihood ratio >= γ (> 0).
	RMIAGamma float64 `toml:"rmia_gamma" json:"rmia_gamma"`
	// LiRAGlobalVariance gives every candidate one variance per side (IN,
	// OUT), pooled over candidates, as Carlini et al. 2022 advise below
	// about 64 reference models; false fits each candidate's own.
	LiRAGlobalVariance bool `toml:"lira_global_variance" json:"lira_global_variance"`
}

// DefaultConfig trains no reference model; a chosen with the references,
// γ = 1 and the global variance are the settings the attacks use when it
// does.
func DefaultConfig() Config {
	return Config{RMIAA: -1, RMIAGamma: 1, LiRAGlobalVariance: true}
}

// Validate checks every key and names it in the error.
func (c Config) Validate() error {
	var errs []error
	if r := c.References; r < 0 || r == 1 || r%2 != 0 || r > 1024 {
		errs = append(errs, fmt.Errorf("mia.references = %d: want 0 (no reference models) or an even number from 2 to 1024: the online attacks need, for every candidate, models that trained on it and models that did not, and memo trains them in complementary pairs", r))
	}
	if a := c.RMIAA; !(a >= 0 && a <= 1) && a != -1 {
		errs = append(errs, fmt.Errorf("mia.rmia_a = %v: want a number in [0, 1], or -1 to choose it with the reference models", a))
	}
	if g := c.RMIAGamma; !(g > 0) || math.IsInf(g, 1) {
		errs = append(errs, fmt.Errorf("mia.rmia_gamma = %v: want a finite number > 0", g))
	}
	return errors.Join(errs...)
}
