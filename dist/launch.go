package dist

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// LaunchOptions tune LaunchExe. Zero values are sensible defaults.
type LaunchOptions struct {
	// Port is the rendezvous port; 0 picks a free one.
	Port int
	// Stdout and Stderr receive the ranks' output, each line prefixed with
	// "[rank N] " (default: this process's).
	Stdout, Stderr io.Writer
	// Env is added to every rank's environment (after this process's).
	Env []string
	// Grace is how long ranks get between SIGTERM and SIGKILL when one
	// failed (default 5 s).
	Grace time.Duration
}

// Launch starts nproc copies of the running binary with arguments argv on
// loopback, like torchrun --nproc-per-node: each gets RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR=127.0.0.1 and MASTER_PORT: port, or with 0 a free
// port (bound on :0 and released just before the ranks start). Their output
// lines are prefixed with their rank. When one fails, the others are
// stopped and the error names it.
func Launch(ctx context.Context, nproc int, argv []string, port int) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("launch: find this binary: %w", err)
	}
	return LaunchExe(ctx, nproc, exe, argv, LaunchOptions{Port: port})
}

// launchedEnv marks the processes Launch starts.
const launchedEnv = "MEMO_DIST_LAUNCHED"

// Launched reports whether this process is a rank started by Launch, so a
// command that launches itself (memo run --nproc N) does not recurse.
func Launched() bool { return os.Getenv(launchedEnv) == "1" }

// FreePort returns a TCP port on 127.0.0.1 that nothing listens on, or,
// with want > 0, checks that want is free.
func FreePort(want int) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(want)))
	if err != nil {
		if want > 0 {
			return 0, fmt.Errorf("port %d on 127.0.0.1 is in use or not available (choose another port): %w", want, err)
		}
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// RankError reports the rank whose failure ended a launch.
type RankError struct {
	Rank int
	Err  error
}

func (e *RankError) Error() string { return fmt.Sprintf("rank %d failed: %v", e.Rank, e.Err) }
func (e *RankError) Unwrap() error { return e.Err }

// LaunchExe is Launch for any executable.
func LaunchExe(ctx context.Context, nproc int, exe string, argv []string, o LaunchOptions) error {
	if nproc < 1 {
		return fmt.Errorf("launch: nproc = %d: must be >= 1", nproc)
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Grace == 0 {
		o.Grace = 5 * time.Second
	}
	port, err := FreePort(o.Port)
	if err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	var outMu sync.Mutex // whole lines from different ranks never interleave
	type exit struct {
		rank int
		err  error
	}
	exits := make(chan exit, nproc)
	cmds := make([]*exec.Cmd, 0, nproc)
	pipes := make([]*sync.WaitGroup, nproc)
	stopAll := func(sig os.Signal) {
		for _, c := range cmds {
			if c.Process != nil {
				_ = c.Process.Signal(sig)
			}
		}
	}
	for r := 0; r < nproc; r++ {
		c := exec.Command(exe, argv...)
		c.Env = append(os.Environ(), o.Env...)
		c.Env = append(c.Env,
			"RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(nproc), "LOCAL_RANK="+strconv.Itoa(r),
			"LOCAL_WORLD_SIZE="+strconv.Itoa(nproc), "MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port),
			launchedEnv+"=1")
		prefix := fmt.Sprintf("[rank %d] ", r)
		so, err1 := c.StdoutPipe()
		se, err2 := c.StderrPipe()
		if err := errors.Join(err1, err2); err != nil {
			stopAll(syscall.SIGKILL)
			return fmt.Errorf("launch rank %d: %w", r, err)
		}
		if err := c.Start(); err != nil {
			stopAll(syscall.SIGKILL)
			return fmt.Errorf("launch rank %d (%s): %w", r, exe, err)
		}
		cmds = append(cmds, c)
		pipes[r] = new(sync.WaitGroup)
		pipes[r].Add(2)
		go prefixLines(so, o.Stdout, prefix, &outMu, pipes[r])
		go prefixLines(se, o.Stderr, prefix, &outMu, pipes[r])
	}
	// Wait only after a rank's pipes drain (exec's rule).
	for r, c := range cmds {
		go func(r int, c *exec.Cmd) {
			pipes[r].Wait()
			exits <- exit{r, c.Wait()}
		}(r, c)
	}
	var first error
	var killTimer <-chan time.Time
	done := 0
	for done < nproc {
		select {
		case e := <-exits:
			done++
			if e.err != nil && first == nil {
				first = &RankError{Rank: e.rank, Err: e.err}
				stopAll(syscall.SIGTERM)
				killTimer = time.After(o.Grace)
			}
		case <-ctx.Done():
			if first == nil {
				first = fmt.Errorf("launch: %w", ctx.Err())
				stopAll(syscall.SIGTERM)
				killTimer = time.After(o.Grace)
			}
		case <-killTimer:
			stopAll(syscall.SIGKILL)
		}
	}
	return first
}

// prefixLines copies r to w line by line, each line prefixed.
func prefixLines(r io.Reader, w io.Writer, prefix string, mu *sync.Mutex, wg *sync.WaitGroup) {
	defer wg.Done()
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				line = append(line, '\n')
			}
			mu.Lock()
			_, _ = io.WriteString(w, prefix)
			_, _ = w.Write(line)
			mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}
