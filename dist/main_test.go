package dist

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memo-research/memo/internal/torchx"
)

// workerEnv marks a copy of this test binary started as one rank.
const workerEnv = "MEMO_DIST_TEST_WORKER"

func TestMain(m *testing.M) {
	torchx.Init(1, 1)
	if mode := os.Getenv(workerEnv); mode != "" {
		// As memo run's ranks do (signalContext): a write to the socket of
		// a rank that died is then an error the survivor reports, naming
		// the rank, not a SIGPIPE that ends it without a word. Without it
		// TestKilledRankStopsPeer failed when the survivor happened to
		// send before it read the closed connection ("signal: broken pipe
		// after 94ms", on a loaded machine).
		signal.Ignore(syscall.SIGPIPE)
		if err := runWorker(mode); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// launchWorkers runs nproc copies of this test binary in worker mode.
func launchWorkers(t testing.TB, nproc int, mode string, env ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	w := &syncWriter{b: &out}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err := LaunchExe(ctx, nproc, os.Args[0], []string{"-test.run=^$"}, LaunchOptions{
		Stdout: w, Stderr: w, Env: append([]string{workerEnv + "=" + mode}, env...)})
	return w.String(), err
}

type syncWriter struct {
	b *bytes.Buffer
}

// Launch already serialises whole lines; one writer is shared by both streams.
func (s *syncWriter) Write(p []byte) (int, error) { return s.b.Write(p) }
func (s *syncWriter) String() string              { return s.b.String() }

func lines(s string, prefix string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}
