package extract

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
)

// Values of extract.checkpoints besides a list of steps.
const (
	CheckpointsLast = "last"
	CheckpointsAll  = "all"
)

// maxSamples bounds extract.samples: the benchmark draws 100 guesses per
// prefix; ten times that is already a large attack on a CPU.
const maxSamples = 10000

// validateGuesses checks extract.samples against the decoding.
func (c Config) validateGuesses() error {
	switch {
	case c.Samples < 1 || c.Samples > maxSamples:
		return fmt.Errorf("extract.samples = %d: must be between 1 and %d", c.Samples, maxSamples)
	case c.Samples > 1 && c.Decoding == DecodeGreedy:
		return fmt.Errorf("extract.samples = %d: greedy decoding has one guess per prompt; use decoding = %q (or %q with beams >= samples)", c.Samples, DecodeSample, DecodeBeam)
	case c.Samples > 1 && c.Decoding == DecodeBeam && c.Samples > c.Beams:
		return fmt.Errorf("extract.samples = %d: beam search returns at most its %d beams (extract.beams); raise beams or lower samples", c.Samples, c.Beams)
	}
	return nil
}

// CheckpointSteps reads extract.checkpoints: all for "all", the steps
// (ascending) for a list, neither for "last".
func (c Config) CheckpointSteps() (all bool, steps []int, err error) {
	bad := func(why string) error {
		return fmt.Errorf("extract.checkpoints = %v: %s; want %q, %q or a list of steps, e.g. [100, 200]", c.Checkpoints, why, CheckpointsLast, CheckpointsAll)
	}
	switch v := c.Checkpoints.(type) {
	case nil:
		return false, nil, nil
	case string:
		switch v {
		case CheckpointsLast:
			return false, nil, nil
		case CheckpointsAll:
			return true, nil, nil
		}
		return false, nil, bad("unknown value")
	case []int:
		steps = append(steps, v...)
	case []any:
		// TOML decodes integers as int64; JSON (a recorded config) as float64.
		for _, x := range v {
			switch n := x.(type) {
			case int64:
				steps = append(steps, int(n))
			case float64:
				if n != float64(int(n)) {
					return false, nil, bad(fmt.Sprintf("step %v is not an integer", n))
				}
				steps = append(steps, int(n))
			default:
				return false, nil, bad(fmt.Sprintf("step %v is not an integer", x))
			}
		}
	default:
		return false, nil, bad("not a string or a list")
	}
	if len(steps) == 0 {
		return false, nil, bad("the list is empty")
	}
	sort.Ints(steps)
	for i, s := range steps {
		if s < 1 {
			return false, nil, bad(fmt.Sprintf("step %d is below 1", s))
		}
		if i > 0 && steps[i-1] == s {
			return false, nil, bad(fmt.Sprintf("step %d is listed twice", s))
		}
	}
	return false, slices.Clip(steps), nil
}

// AttacksCheckpoints says whether extract.checkpoints names more than the
// newest checkpoint.
func (c Config) AttacksCheckpoints() bool {
	all, steps, _ := c.CheckpointSteps()
	return all || len(steps) > 0
}

// recorded is the config as completions.arrow records it and Slug hashes
// it: canonical (approximations that are off cleared), the keys that
// cannot change one checkpoint's completions (checkpoints) left out, and
// samples = 1 left out, so that the attack of a config without these keys
// keeps its record and its file name.
func (c Config) recorded() Config {
	c = c.canonical()
	c.Checkpoints = nil
	if c.Samples == 1 {
		c.Samples = 0
	}
	// The warpers of sampling and the width of beam search change nothing
	// under another decoding: set there (a spec's [extract], --set) they
	// named another file for the same completions. They are recorded at
	// their defaults, which every attack made before records.
	def := DefaultConfig()
	if c.Decoding != DecodeSample {
		c.Temperature, c.TopK, c.TopP = def.Temperature, def.TopK, def.TopP
	}
	if c.Decoding != DecodeBeam {
		c.Beams = def.Beams
	}
	return c
}

// BesidePath is where an attack of checkpoint ckpt with cfg on the
// documents of the run directory dataDir goes when it is not the run's own
// (memo extract, and the checkpoints of extract.checkpoints):
// RUN/checkpoints/step-N.<Slug>.completions.arrow, the slug digesting the
// settings and the data directory, so that attacks never overwrite each
// other and the same attack finds its earlier file.
func BesidePath(ckpt string, cfg Config, dataDir string) string {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		abs = dataDir
	}
	ckpt = filepath.Clean(ckpt)
	return filepath.Join(filepath.Dir(ckpt), filepath.Base(ckpt)+"."+cfg.Slug("data="+abs)+".completions.arrow")
}
