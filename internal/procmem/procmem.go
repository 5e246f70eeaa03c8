// Package procmem reads this process's resident memory from Linux's
// /proc/self/status, for benchmarks that report what a command held.
package procmem

import (
	"os"
	"strconv"
	"strings"
)

// RSS is the process's resident set now (VmRSS) in bytes; 0 where /proc
// does not say.
func RSS() int64 { return field("VmRSS:") }

// PeakRSS is the process's largest resident set so far (VmHWM) in bytes;
// 0 where /proc does not say.
func PeakRSS() int64 { return field("VmHWM:") }

func field(name string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == name {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
