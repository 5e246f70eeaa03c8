package loss

import (
	"fmt"
	"strings"
)

// Strategy names accepted in Config.Strategy.
const (
	StrategyNone          = "none"
	StrategyStatic        = "static"
	StrategyHashTable     = "hash-table"
	StrategyHashAvalanche = "hash-avalanche"
	StrategyRandom        = "random"
	StrategyRolling       = "rolling"
)

// Strategies lists every strategy name, in the order the help text shows them.
var Strategies = []string{StrategyNone, StrategyStatic, StrategyHashTable, StrategyHashAvalanche, StrategyRandom, StrategyRolling}

// Config is the [goldfish] table of an experiment spec.
type Config struct {
	// Strategy picks how targets are chosen for dropping; see the package doc.
	Strategy string `toml:"strategy"`
	// K drops about one target in K; 0 means the standard loss whatever the strategy.
	K int `toml:"k"`
	// H is the context width of the hashed strategies (the paper's h).
	H int `toml:"h"`
	// Start is the first dropped position of the static strategy.
	Start int `toml:"start"`
	// Seed seeds the random strategy and keys the rolling hash.
	Seed int64 `toml:"seed"`
	// ExemptIDs are token ids the rolling strategy never drops (EOS, padding).
	ExemptIDs []int32 `toml:"exempt_ids"`
	// AllowPacked accepts the goldfish loss with data.layout = "packed",
	// which is refused otherwise: packed documents straddle rows at shifting
	// offsets, the first targets of every row are never dropped, and hash
	// windows reach into the neighbouring document, so across repetitions
	// the tokens goldfish should hold out get trained anyway.
	AllowPacked bool `toml:"allow_packed,omitempty"`
}

// DefaultConfig is the paper's main setting: hash-table, k = 4, h = 13.
func DefaultConfig() Config {
	return Config{Strategy: StrategyHashTable, K: 4, H: 13}
}

// Enabled reports whether the config asks for a goldfish mask at all.
func (c Config) Enabled() bool {
	return c.Strategy != StrategyNone && c.Strategy != "" && c.K != 0
}

// KeptPrefix is how many of a row's first targets the strategy never
// drops: the h-1 before the product strategies' first full window, the h
// the rolling hash reads before its first, static's first start. A row
// no longer than this trains with the standard loss.
func (c Config) KeptPrefix() int {
	switch c.Strategy {
	case StrategyHashTable, StrategyHashAvalanche:
		return max(c.H-1, 0)
	case StrategyRolling:
		return c.H
	case StrategyStatic:
		return c.Start
	}
	return 0
}

// Validate checks every key and names the offending one in its error.
func (c Config) Validate() error {
	known := false
	for _, s := range Strategies {
		if c.Strategy == s {
			known = true
		}
	}
	if !known {
		return fmt.Errorf("goldfish.strategy = %q: must be one of %s", c.Strategy, strings.Join(Strategies, ", "))
	}
	if c.Strategy == StrategyNone {
		return nil
	}
	for _, id := range c.ExemptIDs {
		if id < 0 {
			return fmt.Errorf("goldfish.exempt_ids = [..., %d, ...]: token ids are >= 0", id)
		}
	}
	if c.K < 0 || c.K == 1 {
		return fmt.Errorf("goldfish.k = %d: must be 0 (standard loss) or >= 2", c.K)
	}
	if c.K == 0 {
		return nil
	}
	switch c.Strategy {
	case StrategyHashTable, StrategyHashAvalanche, StrategyRolling:
		if c.H < 1 {
			return fmt.Errorf("goldfish.h = %d: must be >= 1 for strategy %q", c.H, c.Strategy)
		}
	case StrategyStatic:
		if c.Start < 0 {
			return fmt.Errorf("goldfish.start = %d: must be >= 0", c.Start)
		}
	}
	return nil
}
