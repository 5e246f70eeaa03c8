package dist

import "github.com/memo-research/memo/internal/rankenv"

// Config says where this process sits in the group; see rankenv.Config.
// The reading of torchrun's and Slurm's environment lives in the pure-Go
// package internal/rankenv, so that experiments reads it the same way
// without linking libtorch.
type Config = rankenv.Config

// Defaults of Config's zero fields.
const (
	DefaultTimeout   = rankenv.DefaultTimeout
	DefaultDeadAfter = rankenv.DefaultDeadAfter
	DefaultPort      = rankenv.DefaultPort
)

// Unset returns a Config with nothing set: Discover fills it all.
func Unset() Config { return rankenv.Unset() }

// Discover completes c from flags, then torchrun's, then Slurm's
// environment (rankenv.Discover).
func Discover(c Config) (Config, error) { return rankenv.Discover(c) }
