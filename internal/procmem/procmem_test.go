package procmem

import (
	"runtime"
	"testing"
)

// Touching 64 MiB shows in the resident set, and the peak is never below
// the current figure.
func TestRSSGrowsWithTouchedMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/status")
	}
	before := RSS()
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	after := RSS()
	if before <= 0 || after-before < 48<<20 {
		t.Errorf("RSS %d B before and %d B after touching 64 MiB", before, after)
	}
	if p := PeakRSS(); p < after {
		t.Errorf("peak %d B below the current %d B", p, after)
	}
	runtime.KeepAlive(buf)
}
