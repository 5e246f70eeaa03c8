package rankenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/memo-research/memo/internal/badinput"
)

// A meeting is how the ranks of one `memo run` started by a launcher (srun,
// torchrun) agree on what to do before they train together: rank 0 runs the
// single-process stages before training (data) while the others wait on a
// TCP connection to it, then tells them to train (on which port), that
// there is nothing to train, or that it failed (with its exit code, so
// that only rank 0 prints the error). The same connection finds the port:
// with none given, rank 0 listens on the first free port of DerivedPort's
// span and the others try the span until a rank 0 of their own launch
// (same job, step and world size) answers. Rank 0 serves the c10d store on
// the port it met on, once the meeting is over.
//
// The protocol is lines of text: a follower sends "memo-meet <token>
// <rank>"; the leader answers "ok" or "other" (another launch), and later
// one verdict: "train <port>", "skip" or "fail <code> <message>".

// Verdict is what rank 0 told the others.
type Verdict struct {
	Kind string // "train", "skip" or "fail"
	Port int    // train: the c10d store's port
	Code int    // fail: rank 0's exit code
	Msg  string // fail: rank 0's error
}

// Leader is rank 0's side of the meeting.
type Leader struct {
	l     net.Listener
	port  int
	size  int
	token string
	wait  time.Duration

	mu     sync.Mutex
	conns  map[int]net.Conn
	joined chan struct{} // closed when every rank has met
	// done refuses joins once the verdict goes out; released makes only
	// the first Release count.
	done, released bool
	// stop ends Release's wait for the ranks early (StopOn).
	stop <-chan struct{}
}

// stopFor is the channel that ends the wait for verdict v: StopOn's for a
// train verdict, none for the others. A failure or a skip waits its full
// time, so that a rank joining late still hears it: rank 0's deferred
// failure runs after its context is cancelled on the way out.
func (ld *Leader) stopFor(v Verdict) <-chan struct{} {
	if v.Kind == "train" {
		return ld.stop
	}
	return nil
}

// StopOn makes Release of a train verdict stop waiting for the ranks
// that have not met when done closes (an interrupted rank 0: Slurm's
// SIGTERM grace is 30 s, the wait a minute): the verdict becomes a
// failure with exit code 130 for the ranks that met, and Release returns
// context.Canceled.
func (ld *Leader) StopOn(done <-chan struct{}) { ld.stop = done }

// candidates are the ports a meeting may use: the one given, or the span
// after the derived one.
func candidates(c Config, env func(string) (string, bool)) []int {
	if c.PortSet {
		return []int{c.Port}
	}
	base := derivedPort(env)
	ps := make([]int, PortSpan)
	for i := range ps {
		ps[i] = base + i
	}
	return ps
}

// Lead opens rank 0's side of the meeting. wait bounds how long Release
// waits for ranks that have not met yet.
func Lead(c Config, wait time.Duration) (*Leader, error) {
	return lead(c, wait, os.LookupEnv)
}

func lead(c Config, wait time.Duration, env func(string) (string, bool)) (*Leader, error) {
	var errs []error
	for _, p := range candidates(c, env) {
		l, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(p)))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ld := &Leader{l: l, port: p, size: c.Size, token: meetToken(c, env), wait: wait,
			conns: map[int]net.Conn{}, joined: make(chan struct{})}
		go ld.accept()
		return ld, nil
	}
	if c.PortSet {
		// The port the user gave is taken: bad input, as a port out of
		// range is, and every rank is told it (exit 2).
		return nil, badinput.Errorf("rendezvous port %d is in use or not available (choose another MASTER_PORT or --master-port): %w", c.Port, errors.Join(errs...))
	}
	return nil, fmt.Errorf("no free rendezvous port in %d..%d (set MASTER_PORT or --master-port): %w", candidates(c, env)[0], candidates(c, env)[PortSpan-1], errs[len(errs)-1])
}

// Port is the port rank 0 met on.
func (ld *Leader) Port() int { return ld.port }

func (ld *Leader) accept() {
	for {
		conn, err := ld.l.Accept()
		if err != nil {
			return // closed
		}
		go ld.greet(conn)
	}
}

func (ld *Leader) greet(conn net.Conn) {
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	f := strings.Fields(line)
	rank := -1
	if err == nil && len(f) == 3 && f[0] == "memo-meet" && f[1] == ld.token {
		rank, _ = strconv.Atoi(f[2])
	}
	ld.mu.Lock()
	defer ld.mu.Unlock()
	if rank < 1 || rank >= ld.size || ld.conns[rank] != nil || ld.done {
		_, _ = conn.Write([]byte("other\n"))
		conn.Close()
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	if _, err := conn.Write([]byte("ok\n")); err != nil {
		conn.Close()
		return
	}
	ld.conns[rank] = conn
	if len(ld.conns) == ld.size-1 {
		close(ld.joined)
	}
}

// Release ends the meeting with v (a "train" verdict gets the meeting's
// port) and closes the port, so that the c10d store can serve on it. It
// waits for the ranks that have not met yet, up to the wait Lead was
// given, so that each hears the verdict, a failure too; only the first
// call does anything.
func (ld *Leader) Release(v Verdict) error {
	// Claimed under the lock, so that two callers at once cannot both
	// send a verdict (done is set only after the wait, for the joins).
	ld.mu.Lock()
	if ld.released {
		ld.mu.Unlock()
		return nil
	}
	ld.released = true
	ld.mu.Unlock()
	var missing error
	select {
	case <-ld.joined:
	case <-time.After(ld.wait):
	case <-ld.stopFor(v):
		missing = context.Canceled
		v = Verdict{Kind: "fail", Code: 130, Msg: "rank 0 was interrupted before training began"}
	}
	ld.mu.Lock()
	ld.done = true
	conns := ld.conns
	ld.mu.Unlock()
	ld.l.Close()
	if missing == nil && v.Kind == "train" && len(conns) < ld.size-1 {
		var absent []string
		for r := 1; r < ld.size; r++ {
			if conns[r] == nil {
				absent = append(absent, strconv.Itoa(r))
			}
		}
		missing = fmt.Errorf("rank %s of %d did not reach rank 0 on port %d within %v (are they all started, with the same MASTER_ADDR/MASTER_PORT?)",
			strings.Join(absent, ", rank "), ld.size, ld.port, ld.wait)
		v = Verdict{Kind: "fail", Code: 1, Msg: missing.Error()}
	}
	var line string
	switch v.Kind {
	case "train":
		line = fmt.Sprintf("train %d\n", ld.port)
	case "skip":
		line = "skip\n"
	default:
		line = fmt.Sprintf("fail %d %s\n", v.Code, strings.ReplaceAll(v.Msg, "\n", "; "))
	}
	var wg sync.WaitGroup
	for _, conn := range conns {
		wg.Add(1)
		go func(conn net.Conn) {
			defer wg.Done()
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := conn.Write([]byte(line)); err != nil {
				return
			}
			// Let the follower close first, so that the port's closed
			// connections wait out TIME_WAIT on its side, not on the port
			// the store is about to listen on.
			_, _ = conn.Read(make([]byte, 1))
		}(conn)
	}
	wg.Wait()
	return missing
}

// Follow is the side of a rank > 0: it finds its rank 0 (trying the
// candidate ports until one answers for this launch, for up to wait), then
// waits, as long as rank 0 lives, for its verdict.
func Follow(ctx context.Context, c Config, wait time.Duration) (Verdict, error) {
	return follow(ctx, c, wait, os.LookupEnv)
}

func follow(ctx context.Context, c Config, wait time.Duration, env func(string) (string, bool)) (Verdict, error) {
	token := meetToken(c, env)
	ports := candidates(c, env)
	deadline := time.Now().Add(wait)
	foreign := 0 // answers in a row on a given port that were not rank 0's
	for {
		for _, p := range ports {
			if err := ctx.Err(); err != nil {
				return Verdict{}, err
			}
			v, ok, answered, err := try(ctx, c, p, token)
			if ok {
				return v, err
			}
			// Something else listens on the one port given: rank 0 cannot
			// listen there and says so; waiting out the minute would only
			// blame rank 0 for not answering.
			if answered {
				foreign++
			} else {
				foreign = 0
			}
			if c.PortSet && foreign >= foreignAnswers {
				return Verdict{}, Tag(c.Rank, c.Size, badinput.Errorf("rendezvous port %d at %s answers, but not as this launch's rank 0: another program or launch holds it (choose another MASTER_PORT or --master-port)", p, c.Addr))
			}
		}
		if time.Now().After(deadline) {
			return Verdict{}, Tag(c.Rank, c.Size, fmt.Errorf("rank 0 did not answer at %s on port %s within %v (is it started, with the same MASTER_ADDR/MASTER_PORT?)",
				c.Addr, portRange(ports), wait))
		}
		select {
		case <-ctx.Done():
			return Verdict{}, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func portRange(ps []int) string {
	if len(ps) == 1 {
		return strconv.Itoa(ps[0])
	}
	return fmt.Sprintf("%d..%d", ps[0], ps[len(ps)-1])
}

// foreignAnswers is how many connections in a row to a given port must
// be answered by something other than this launch's rank 0 before a
// follower gives up on it.
const foreignAnswers = 3

// try meets rank 0 on port p; ok is false when nothing of this launch
// answers there, and answered then says whether something else took the
// connection (a refused one is rank 0 not listening yet).
func try(ctx context.Context, c Config, p int, token string) (v Verdict, ok, answered bool, err error) {
	d := net.Dialer{Timeout: 2 * time.Second, KeepAlive: 15 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(c.Addr, strconv.Itoa(p)))
	if err != nil {
		return v, false, false, nil
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(conn, "memo-meet %s %d\n", token, c.Rank); err != nil {
		return v, false, true, nil
	}
	br := bufio.NewReader(conn)
	if line, err := br.ReadString('\n'); err != nil || line != "ok\n" {
		return v, false, ctx.Err() == nil, nil
	}
	// Met: wait as long as rank 0 works (keepalives find a dead host).
	_ = conn.SetDeadline(time.Time{})
	line, err := br.ReadString('\n')
	if err != nil {
		if ctx.Err() != nil {
			return v, true, true, ctx.Err()
		}
		return v, true, true, Tag(c.Rank, c.Size, errors.New("rank 0 ended before training started, without a word (see its output)"))
	}
	v, ok, err = parseVerdict(strings.TrimSuffix(line, "\n"))
	return v, ok, true, err
}

func parseVerdict(line string) (Verdict, bool, error) {
	kind, rest, _ := strings.Cut(line, " ")
	switch kind {
	case "train":
		p, err := strconv.Atoi(rest)
		if err == nil && p > 0 && p < 65536 {
			return Verdict{Kind: kind, Port: p}, true, nil
		}
	case "skip":
		return Verdict{Kind: kind}, true, nil
	case "fail":
		code, msg, _ := strings.Cut(rest, " ")
		n, err := strconv.Atoi(code)
		if err == nil {
			return Verdict{Kind: kind, Code: n, Msg: msg}, true, nil
		}
	}
	return Verdict{}, true, fmt.Errorf("rank 0 answered %q, not a verdict", line)
}
