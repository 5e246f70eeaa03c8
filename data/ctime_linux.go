//go:build linux

package data

import (
	"io/fs"
	"syscall"
	"time"
)

// changedAt is when fi's inode last changed: also a rename, which keeps
// the modification time (a lock moved aside this instant is new).
func changedAt(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Unix())
	}
	return fi.ModTime()
}
