//go:build !linux

package data

import (
	"io/fs"
	"time"
)

// changedAt is fi's modification time where the inode's change time is
// not read (changedAt on Linux).
func changedAt(fi fs.FileInfo) time.Time { return fi.ModTime() }
