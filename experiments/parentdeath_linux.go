package experiments

import "syscall"

// interruptWhenParentDies asks the kernel to send the child SIGINT, which
// memo takes as Ctrl-C (save, exit 130), when the sweep dies.
func interruptWhenParentDies() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGINT}
}
