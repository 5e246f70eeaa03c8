package dist

import (
	"net"
	"strconv"
	"testing"
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
