package dist

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

func listen(port int) (net.Listener, error) {
	return net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
}

func TestLaunchedMarksRanks(t *testing.T) {
	t.Setenv(launchedEnv, "")
	if Launched() {
		t.Fatal("Launched() true outside a launch")
	}
	t.Setenv(launchedEnv, "1")
	if !Launched() {
		t.Fatal("Launched() false with the marker set")
	}
}

// FreePort picks below the kernel's ephemeral range, where Gloo's pairs and
// outgoing connections cannot take the port before rank 0 binds it.
func TestFreePortAvoidsEphemeralRange(t *testing.T) {
	lo, hi := pickRange()
	if hi <= lo {
		t.Skipf("no room below the ephemeral range (%d..%d)", lo, hi)
	}
	for range 20 {
		p, err := FreePort(0)
		if err != nil {
			t.Fatal(err)
		}
		if p < lo || p >= hi {
			t.Fatalf("FreePort(0) = %d, want a port in [%d, %d)", p, lo, hi)
		}
	}
}

// TestLaunchInterruptLetsRanksSave: an interrupted launch (Ctrl-C,
// scancel's SIGTERM) gives its ranks time to save and exit on their own;
// it killed them Grace (5 s) after, mid-way through rank 0's checkpoint
// of any model past the base preset. Here the ranks take 2 s to "save",
// twice Grace.
func TestLaunchInterruptLetsRanksSave(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out strings.Builder
	script := `trap 'sleep 2; echo saved; exit 130' TERM; echo up; while :; do sleep 0.1; done`
	time.AfterFunc(500*time.Millisecond, cancel)
	err := LaunchExe(ctx, 2, "/bin/sh", []string{"-c", script}, LaunchOptions{Stdout: &out, Stderr: &out, Grace: time.Second})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("launch: %v, want context.Canceled", err)
	}
	if n := strings.Count(out.String(), "saved"); n != 2 {
		t.Errorf("%d ranks saved, want 2:\n%s", n, out.String())
	}
}
