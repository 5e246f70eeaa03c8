//go:build !linux

package experiments

import "syscall"

// interruptWhenParentDies has no kernel support outside Linux: a sweep
// killed outright leaves its runs to finish on their own.
func interruptWhenParentDies() *syscall.SysProcAttr { return nil }
