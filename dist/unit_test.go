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
