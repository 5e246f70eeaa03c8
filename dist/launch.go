package dist

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// LaunchOptions tune LaunchExe. Zero values are sensible defaults.
type LaunchOptions struct {
	// Port is the rendezvous port; 0 picks a free one, and another if
	// rank 0 finds it taken.
	Port int
	// Stdout and Stderr receive the ranks' output, each line prefixed with
	// "[rank N] " (default: this process's).
	Stdout, Stderr io.Writer
	// Env is added to every rank's environment (after this process's).
	Env []string
	// Grace is how long ranks get between SIGTERM and SIGKILL when one
	// failed (default 5 s).
	Grace time.Duration
	// InterruptGrace is how long ranks get between SIGTERM and SIGKILL
	// when the launch itself is interrupted (ctx done: Ctrl-C, scancel's
	// SIGTERM): rank 0 saves a checkpoint then, which for a large model
	// takes far longer than Grace (default 10 minutes; Slurm's own
	// KillWait bounds it on a cluster).
	InterruptGrace time.Duration
}

// Launch starts nproc copies of the running binary with arguments argv on
// loopback, like torchrun --nproc-per-node: each gets RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR=127.0.0.1 and MASTER_PORT: port, or with 0 a free
// port (see FreePort). Their output lines are prefixed with their rank. When
// one fails, the others are stopped and the error names it. When a port
// Launch picked was taken before rank 0 could bind it, the ranks start
// again on another, at most four times in all.
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

// FreePort returns a TCP port that nothing on this machine listens on, or,
// with want > 0, checks that want is free. A port it picks lies below the
// kernel's ephemeral range where there is room: Gloo's pairs and every
// outgoing connection take their ports from that range, so a port picked
// there can be taken between this check and rank 0's bind.
func FreePort(want int) (int, error) {
	if want > 0 {
		if err := portFree(want); err != nil {
			return 0, fmt.Errorf("port %d is in use or not available (choose another port): %w", want, err)
		}
		return want, nil
	}
	lo, hi := pickRange()
	for range 64 {
		if hi <= lo {
			break
		}
		p := lo + rand.IntN(hi-lo)
		if portFree(p) == nil {
			return p, nil
		}
	}
	// No room below the ephemeral range, or all tries busy: let the kernel
	// choose.
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// portFree checks that port can be bound on every address, as rank 0's
// store binds it ([::] or 0.0.0.0).
func portFree(port int) error {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return err
	}
	return l.Close()
}

// pickRange is [lo, hi): the ports FreePort picks from, below the kernel's
// ephemeral range (/proc/sys/net/ipv4/ip_local_port_range; Linux's default
// starts at 32768) and above 20000, clear of the common services' ports.
func pickRange() (lo, hi int) {
	const floor = 20000
	hi = 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				hi = v
			}
		}
	}
	return floor, hi
}

// launchAttempts bounds how often LaunchExe starts the ranks again because
// a port it picked was taken before rank 0 could bind it.
const launchAttempts = 4

// pickPort is FreePort(0), replaced in tests to hand out a taken port.
var pickPort = func() (int, error) { return FreePort(0) }

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
	if o.InterruptGrace == 0 {
		o.InterruptGrace = 10 * time.Minute
	}
	if o.Port > 0 {
		if _, err := FreePort(o.Port); err != nil {
			return fmt.Errorf("launch: %w", err)
		}
		_, err := launchOnce(ctx, nproc, exe, argv, o, o.Port)
		return err
	}
	// A port picked here is free now, but something else can bind it
	// before rank 0 does. When rank 0 says so, nothing has run past the
	// rendezvous yet, so the ranks start again on another port.
	for attempt := 1; ; attempt++ {
		port, err := pickPort()
		if err != nil {
			return fmt.Errorf("launch: %w", err)
		}
		taken, err := launchOnce(ctx, nproc, exe, argv, o, port)
		if !taken || attempt == launchAttempts || ctx.Err() != nil {
			return err
		}
		fmt.Fprintf(o.Stderr, "launch: port %d was taken before rank 0 could bind it; starting the %d ranks again on another port (attempt %d of %d)\n",
			port, nproc, attempt+1, launchAttempts)
	}
}

// launchOnce runs the ranks on port until all have exited. taken reports
// that rank 0 failed because its store could not bind port.
func launchOnce(ctx context.Context, nproc int, exe string, argv []string, o LaunchOptions, port int) (taken bool, err error) {
	var portTaken atomic.Bool
	takenLine := fmt.Sprintf("port %d %s", port, portTakenMsg)
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
			return false, fmt.Errorf("launch rank %d: %w", r, err)
		}
		if err := c.Start(); err != nil {
			stopAll(syscall.SIGKILL)
			return false, fmt.Errorf("launch rank %d (%s): %w", r, exe, err)
		}
		cmds = append(cmds, c)
		pipes[r] = new(sync.WaitGroup)
		pipes[r].Add(2)
		var watch func(line []byte)
		if r == 0 {
			watch = func(line []byte) {
				if bytes.Contains(line, []byte(takenLine)) {
					portTaken.Store(true)
				}
			}
		}
		go prefixLines(so, o.Stdout, prefix, &outMu, pipes[r], watch)
		go prefixLines(se, o.Stderr, prefix, &outMu, pipes[r], watch)
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
	interrupted := ctx.Done()
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
		case <-interrupted:
			// Once: a closed channel is always ready, and the loop spun.
			interrupted = nil
			if first == nil {
				// The ranks save and exit 130 on SIGTERM; their exits,
				// which follow, arm no shorter timer.
				first = fmt.Errorf("launch: %w", ctx.Err())
				stopAll(syscall.SIGTERM)
				killTimer = time.After(o.InterruptGrace)
			}
		case <-killTimer:
			stopAll(syscall.SIGKILL)
		}
	}
	var re *RankError
	return errors.As(first, &re) && re.Rank == 0 && portTaken.Load(), first
}

// prefixLines copies r to w line by line, each line prefixed, and shows
// each line to watch when it is not nil.
func prefixLines(r io.Reader, w io.Writer, prefix string, mu *sync.Mutex, wg *sync.WaitGroup, watch func([]byte)) {
	defer wg.Done()
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				line = append(line, '\n')
			}
			if watch != nil {
				watch(line)
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
