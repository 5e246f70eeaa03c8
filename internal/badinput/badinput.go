// Package badinput marks errors caused by what the user gave memo (a file,
// a flag, a run directory) rather than by the machine or a library, so that
// the command line can keep its exit-code contract (2 for bad input, 1 for
// failures) without every stage knowing about exit codes.
package badinput

import (
	"errors"
	"fmt"
	"io/fs"
)

// Error is an error marked as bad input; its message is the wrapped one.
type Error struct{ err error }

func (e *Error) Error() string { return e.err.Error() }
func (e *Error) Unwrap() error { return e.err }

// Wrap marks err as bad input (nil stays nil).
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	return &Error{err}
}

// Errorf is fmt.Errorf marked as bad input.
func Errorf(format string, args ...any) error { return &Error{fmt.Errorf(format, args...)} }

// Is reports whether err, or an error it wraps, is marked as bad input.
func Is(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// PathCause is err without the operation and path an *fs.PathError adds,
// for a message that names the path itself (or a path the user never gave,
// such as a temporary name): "x.toml: no such file or directory", not
// "x.toml: open x.toml: no such file or directory". Other errors,
// wrapped path errors among them, are returned as they are: a wrapper's
// words say which file inside the path failed and what to do, and the
// innermost cause alone read as if the path the user named were missing.
func PathCause(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}
