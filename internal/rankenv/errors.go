package rankenv

import (
	"errors"
	"fmt"
)

// RankError is an error of one rank of a launch of several, which says
// whose it is: a launcher (srun -n 2, torchrun) prints every rank's last
// line, and the same line from two ranks does not say which failed.
type RankError struct {
	Rank, Size int
	Err        error
}

func (e *RankError) Error() string {
	return fmt.Sprintf("rank %d of %d: %v", e.Rank, e.Size, e.Err)
}

func (e *RankError) Unwrap() error { return e.Err }

// Tag returns err as an error of rank of size, or err itself when it is
// nil or already says whose it is (an error wrapped on its way up keeps the
// innermost rank's name, once).
func Tag(rank, size int, err error) error {
	if err == nil || Tagged(err) {
		return err
	}
	return &RankError{Rank: rank, Size: size, Err: err}
}

// Tagged reports whether err, or an error it wraps, names its rank.
func Tagged(err error) bool {
	var re *RankError
	return errors.As(err, &re)
}
