package rankenv

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memo-research/memo/internal/badinput"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestTasksOnNode(t *testing.T) {
	for _, c := range []struct {
		list       string
		node, want int
		bad        bool
	}{
		{list: "2", node: 0, want: 2},
		{list: "2(x3),1", node: 2, want: 2},
		{list: "2(x3),1", node: 3, want: 1},
		{list: "2(x3),1", node: 4, bad: true},
		{list: "x", node: 0, bad: true},
		{list: "2(xz)", node: 0, bad: true},
	} {
		got, err := TasksOnNode(c.list, c.node)
		if c.bad != (err != nil) || (!c.bad && got != c.want) {
			t.Errorf("TasksOnNode(%q, %d) = %d, %v; want %d (error: %v)", c.list, c.node, got, err, c.want, c.bad)
		}
	}
}

// The threads a process takes when not told: all of its CPUs alone (as
// before: a plain `memo run` is unchanged), its share when ranks share a
// node, no more than SLURM_CPUS_PER_TASK.
func TestThreads(t *testing.T) {
	step := map[string]string{"SLURM_STEP_ID": "0", "SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_STEP_TASKS_PER_NODE": "2", "SLURM_NODEID": "0", "SLURM_JOB_ID": "7"}
	for _, c := range []struct {
		name string
		env  map[string]string
		cpus int
		want int
		from string
	}{
		{"single", nil, 2, 2, "affinity"},
		{"single, many cores", nil, 64, 64, "affinity"},
		{"srun -n2 on 2 cores", step, 2, 1, "affinity/2 local ranks"},
		{"srun -n2 -c 3 on 16 cores", merge(step, map[string]string{"SLURM_CPUS_PER_TASK": "3"}), 16, 3, "SLURM_CPUS_PER_TASK"},
		{"srun -n2 on two nodes of 8", merge(step, map[string]string{"SLURM_STEP_TASKS_PER_NODE": "1(x2)"}), 8, 8, "affinity"},
		{"torchrun 4 local ranks", map[string]string{"RANK": "0", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4"}, 16, 4, "affinity/4 local ranks"},
		{"batch shell -c 4", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_CPUS_PER_TASK": "4"}, 8, 4, "SLURM_CPUS_PER_TASK"},
		{"one CPU, two ranks", step, 1, 1, "affinity/2 local ranks"},
		// Unbound (task/none): the mask is the node, the allocation is not.
		{"array task -c1 unbound on 2 cores", map[string]string{"SLURM_JOB_ID": "9", "SLURM_CPUS_ON_NODE": "1"}, 2, 1, "SLURM_CPUS_ON_NODE"},
		{"srun -n2 unbound, 4 of 16 cores", merge(step, map[string]string{"SLURM_CPUS_ON_NODE": "4"}), 16, 2, "SLURM_CPUS_ON_NODE/2 local ranks"},
		{"allocation above the mask", map[string]string{"SLURM_JOB_ID": "9", "SLURM_CPUS_ON_NODE": "8"}, 2, 2, "affinity"},
		{"bad SLURM_CPUS_ON_NODE ignored", map[string]string{"SLURM_JOB_ID": "9", "SLURM_CPUS_ON_NODE": "x"}, 2, 2, "affinity"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := discover(Unset(), envOf(c.env))
			if err != nil {
				t.Fatal(err)
			}
			n, from := threads(cfg, c.cpus, envOf(c.env))
			if n != c.want || from != c.from {
				t.Errorf("threads = %d (%s), want %d (%s)", n, from, c.want, c.from)
			}
		})
	}
	cfg, _ := discover(Unset(), envOf(step))
	j := jobOf(cfg, 1, "x", envOf(merge(step, map[string]string{"SLURM_ARRAY_JOB_ID": "5", "SLURM_ARRAY_TASK_ID": "1"})))
	if j.Launcher != "slurm" || j.WorldSize != 2 || j.LocalSize != 2 || j.JobID != "7" || j.ArrayJobID != "5" || j.ArrayTaskID != "1" || j.StepID != "0" {
		t.Errorf("job = %+v", j)
	}
}

func merge(a, b map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

// Two launches of two ranks each start at once with the same derived port
// (two array tasks whose ids hash alike): the second rank 0 moves to the
// next free port, and each rank 1 finds its own rank 0 there, turned away
// by the other's.
func TestMeetPicksAnotherPort(t *testing.T) {
	ctx := context.Background()
	// Both launches are steps of job 42 given no port: the same span.
	env := envOf(map[string]string{"SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_ID": "42"})
	ca, err := discover(Unset(), env)
	if err != nil {
		t.Fatal(err)
	}
	ca.Addr = "127.0.0.1"
	cb := ca
	cb.Size = 3 // another world: another token, turned away by the first
	first := derivedPort(env)
	la, err := lead(ca, 5*time.Second, env)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := lead(cb, 5*time.Second, env)
	if err != nil {
		t.Fatal(err)
	}
	if la.Port() != first || lb.Port() == first {
		t.Fatalf("ports %d and %d; want %d for the first and another for the second", la.Port(), lb.Port(), first)
	}
	type res struct {
		v   Verdict
		err error
	}
	follower := func(c Config, rank int) chan res {
		ch := make(chan res, 1)
		c.Rank = rank
		go func() {
			v, err := follow(ctx, c, 5*time.Second, env)
			ch <- res{v, err}
		}()
		return ch
	}
	fa := follower(ca, 1)
	fb1, fb2 := follower(cb, 1), follower(cb, 2)
	if err := la.Release(Verdict{Kind: "train"}); err != nil {
		t.Fatal(err)
	}
	if err := lb.Release(Verdict{Kind: "fail", Code: 2, Msg: "bad spec"}); err != nil {
		t.Fatal(err)
	}
	if r := <-fa; r.err != nil || r.v.Kind != "train" || r.v.Port != la.Port() {
		t.Errorf("launch a's rank 1: %+v, %v; want train on %d", r.v, r.err, la.Port())
	}
	for _, ch := range []chan res{fb1, fb2} {
		if r := <-ch; r.err != nil || r.v.Kind != "fail" || r.v.Code != 2 || r.v.Msg != "bad spec" {
			t.Errorf("launch b's rank: %+v, %v; want its rank 0's failure", r.v, r.err)
		}
	}
	// The meeting's port is free again for the c10d store.
	l, err := net.Listen("tcp", ":"+strconv.Itoa(la.Port()))
	if err != nil {
		t.Fatalf("port %d after the meeting: %v", la.Port(), err)
	}
	l.Close()
}

// A given port is the only one tried: taken by another program, rank 0
// says so as bad input, and rank 1 stops trying it at once rather than
// waiting its minute and blaming rank 0.
func TestMeetGivenPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // a server that is not memo's rank 0
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = conn.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			conn.Close()
		}
	}()
	p := l.Addr().(*net.TCPAddr).Port
	c := Config{Rank: 0, Size: 2, Port: p, PortSet: true, Addr: "127.0.0.1", Source: "slurm"}
	_, err = lead(c, time.Second, envOf(nil))
	if err == nil || !strings.Contains(err.Error(), "port "+strconv.Itoa(p)+" is in use") || !badinput.Is(err) {
		t.Fatalf("lead on a taken port: %v; want bad input naming port %d", err, p)
	}
	c.Rank = 1
	start := time.Now()
	_, err = follow(context.Background(), c, time.Minute, envOf(nil))
	if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "rank 1 of 2: rendezvous port "+strconv.Itoa(p)+" at 127.0.0.1 answers, but not as this launch's rank 0") {
		t.Fatalf("follow on a port another program holds: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("follow gave up after %v; want well within its minute", d)
	}
}

// A rank 1 whose rank 0 never comes gives up after its wait; one whose
// rank 0 dies while it waits says so at once.
func TestFollowWithoutRank0(t *testing.T) {
	c := Config{Rank: 1, Size: 2, Addr: "127.0.0.1", Source: "slurm"}
	env := envOf(map[string]string{"SLURM_JOB_ID": "99"})
	start := time.Now()
	_, err := follow(context.Background(), c, 300*time.Millisecond, env)
	if err == nil || !strings.Contains(err.Error(), "rank 0 did not answer") || time.Since(start) > 10*time.Second {
		t.Fatalf("follow without rank 0: %v after %v", err, time.Since(start))
	}
	c0 := c
	c0.Rank = 0
	ld, err := lead(c0, time.Second, env)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := follow(context.Background(), c, 5*time.Second, env); done <- err }()
	<-ld.joined
	ld.l.Close()
	ld.mu.Lock()
	for _, conn := range ld.conns {
		conn.Close() // rank 0 killed
	}
	ld.mu.Unlock()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "rank 0 ended") {
		t.Fatalf("rank 0 gone: %v", err)
	}
}

// Only the first Release counts: a second, while the first still waits
// for ranks to meet, returns at once rather than waiting and sending a
// verdict of its own.
func TestReleaseOnce(t *testing.T) {
	env := envOf(map[string]string{"SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_ID": "43"})
	c, err := discover(Unset(), env)
	if err != nil {
		t.Fatal(err)
	}
	c.Addr = "127.0.0.1"
	ld, err := lead(c, 2*time.Second, env) // rank 1 never comes: the first Release waits 2 s
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { first <- ld.Release(Verdict{Kind: "skip"}) }()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := ld.Release(Verdict{Kind: "skip"}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("a second Release took %v: it waited as the first does", d)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

// An interrupted rank 0 stops waiting for the ranks that have not met
// (an environment probe saw SIGTERM answered only when the minute's wait
// ran out, past Slurm's 30 s grace): its train verdict becomes a failure
// with code 130 for the ranks that met, and Release returns at once with
// context.Canceled.
func TestReleaseStopsOnInterrupt(t *testing.T) {
	env := envOf(map[string]string{"SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_NTASKS": "3", "SLURM_JOB_ID": "44"})
	c, err := discover(Unset(), env)
	if err != nil {
		t.Fatal(err)
	}
	c.Addr = "127.0.0.1"
	ld, err := lead(c, time.Minute, env) // rank 2 never comes
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		v   Verdict
		err error
	}
	got := make(chan res, 1)
	c1 := c
	c1.Rank = 1
	go func() {
		v, err := follow(context.Background(), c1, 10*time.Second, env)
		got <- res{v, err}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ld.mu.Lock()
		n := len(ld.conns)
		ld.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("rank 1 did not meet rank 0")
		}
	}
	stop := make(chan struct{})
	ld.StopOn(stop)
	time.AfterFunc(200*time.Millisecond, func() { close(stop) })
	start := time.Now()
	if err := ld.Release(Verdict{Kind: "train"}); !errors.Is(err, context.Canceled) || time.Since(start) > 10*time.Second {
		t.Errorf("Release after an interrupt: %v after %v; want context.Canceled at once", err, time.Since(start))
	}
	if r := <-got; r.err != nil || r.v.Kind != "fail" || r.v.Code != 130 || !strings.Contains(r.v.Msg, "interrupted") {
		t.Errorf("rank 1 heard %+v, %v; want a failure with code 130", r.v, r.err)
	}
}

// A failure waits its full time whatever StopOn says: rank 0's deferred
// failure runs after its context was cancelled on the way out, and a
// rank that joins late must still hear it (a review found Release
// returning at once and the late rank saying rank 0 did not answer).
func TestReleaseFailureWaitsAfterStop(t *testing.T) {
	env := envOf(map[string]string{"SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_ID": "45"})
	c, err := discover(Unset(), env)
	if err != nil {
		t.Fatal(err)
	}
	c.Addr = "127.0.0.1"
	ld, err := lead(c, 5*time.Second, env)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	close(stop)
	ld.StopOn(stop)
	got := make(chan error, 1)
	var heard Verdict
	go func() {
		time.Sleep(300 * time.Millisecond) // joins after Release began
		c1 := c
		c1.Rank = 1
		v, err := follow(context.Background(), c1, 5*time.Second, env)
		heard = v
		got <- err
	}()
	if err := ld.Release(Verdict{Kind: "fail", Code: 2, Msg: "bad spec"}); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil || heard.Kind != "fail" || heard.Code != 2 {
		t.Errorf("a rank joining late heard %+v, %v; want rank 0's failure", heard, err)
	}
}
