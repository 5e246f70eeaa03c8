// Package readcap reads a whole input up to a size cap, so that an endless
// source (/dev/zero, a pipe that never closes) is refused instead of read
// until memory runs out.
package readcap

import (
	"fmt"
	"io"
)

// All reads r to its end and returns its bytes, or an error naming the cap
// when r holds more than max bytes.
func All(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("longer than %s", size(max))
	}
	return b, nil
}

// size names a cap in MiB when it is a whole number of them.
func size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
