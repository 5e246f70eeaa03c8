package plots

import (
	"errors"

	"github.com/memo-research/memo/loss"
)

// RunSpec is what the tables and figures take from a run's spec (its
// config.toml): the loss it trained with, a name for its model and the
// value of any key a sweep column names.
type RunSpec struct {
	// Goldfish is the run's [goldfish] table.
	Goldfish loss.Config
	// Model names the model in legends and tables: its preset, an
	// imported model's directory, or its width and depth.
	Model string
	// MatchSupervisedTokens is train.match_supervised_tokens: a
	// standard-loss run stopped at goldfish k's supervised-token count.
	MatchSupervisedTokens int
	// Value is the value of a dotted key of the spec ("goldfish.k"), nil
	// when the spec has no such key.
	Value func(key string) any
}

// ErrStaleRun is a SpecReader's error for a run that is not its sweep
// point's as the sweep's spec now stands: the report leaves it out, with a
// warning, as it leaves out a point that has not finished.
var ErrStaleRun = errors.New("run made from an older version of the sweep's spec")

// ErrUnfinishedRun is a SpecReader's error for a run a stage of which
// stopped or is running again (its manifest says failed or running): its
// files may hold an earlier attempt's attack beside a newer training.
var ErrUnfinishedRun = errors.New("the run has not finished")

// ErrNoPoint is Report's error for a sweep none of whose points can be
// reported (errors.Is): memo report --require-all calls it a failure of
// the points, not bad input.
var ErrNoPoint = errors.New("no sweep point can be reported")

// noPointError is ErrNoPoint with its own message.
type noPointError string

func (e noPointError) Error() string        { return string(e) }
func (e noPointError) Is(target error) bool { return target == ErrNoPoint }

// SpecReader reads the spec of a run directory, nil when it has none.
// memo's is experiments.ReadPlotsSpec, the one reader of a run's
// config.toml; plots cannot import experiments, which draws its figures
// through plots, so the caller hands it in.
type SpecReader func(runDir string) (*RunSpec, error)
