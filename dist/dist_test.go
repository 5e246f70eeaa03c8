package dist

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/internal/testrun"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/train"
)

func TestAllReduceTwoRanks(t *testing.T) {
	start := time.Now()
	out, err := launchWorkers(t, 2, "sum")
	t.Logf("%v\n%s", time.Since(start), out)
	if err != nil {
		t.Fatalf("launch: %v\n%s", err, out)
	}
	for r := 0; r < 2; r++ {
		if !strings.Contains(out, "[rank "+strconv.Itoa(r)+"] sum ok") {
			t.Errorf("rank %d did not report success:\n%s", r, out)
		}
	}
}

// One rank failing must stop the launch, name the rank, and not wait for
// the other rank's (forever blocked) barrier to time out.
func TestLaunchStopsAllWhenOneFails(t *testing.T) {
	start := time.Now()
	out, err := launchWorkers(t, 2, "fail1")
	var re *RankError
	if !errors.As(err, &re) || re.Rank != 1 {
		t.Fatalf("launch error %v, want a RankError naming rank 1\n%s", err, out)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("launch took %v to stop after rank 1 failed", d)
	}
	if lines(out, "[rank 1] worker: rank 1 fails on purpose") != 1 {
		t.Errorf("rank 1's error line missing or unprefixed:\n%s", out)
	}
}

func TestPortInUse(t *testing.T) {
	port, err := FreePort(0)
	if err != nil {
		t.Fatal(err)
	}
	l, err := listen(port)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = FreePort(port)
	if err == nil || !strings.Contains(err.Error(), "port "+strconv.Itoa(port)+" is in use") {
		t.Fatalf("FreePort(%d) on a busy port: %v", port, err)
	}
	err = LaunchExe(context.Background(), 2, os.Args[0], nil, LaunchOptions{Port: port})
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("launch on a busy port: %v", err)
	}
	// A rank whose store cannot listen says so too.
	_, err = Init(context.Background(), Config{Rank: 0, Size: 2, LocalRank: 0, Addr: "127.0.0.1", Port: port, Timeout: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("Init on a busy port: %v", err)
	}
}

// A rank killed mid-run makes its peer exit non-zero, naming it, well
// within the 60 s bound, whether it was the store's host (rank 0) or not.
func TestKilledRankStopsPeer(t *testing.T) {
	for _, victim := range []int{1, 0} {
		t.Run("kill rank "+strconv.Itoa(victim), func(t *testing.T) {
			t.Parallel() // two pairs of ranks on their own ports
			deadRank(t, victim, syscall.SIGKILL)
		})
	}
}

// A rank that stops silently (its sockets stay open, as when a machine
// hangs) must make its peer exit non-zero, naming it, within 60 s with the
// default timeouts.
func TestSilentRankStopsPeer(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the dead-rank detection (-short)")
	}
	for _, victim := range []int{1, 0} {
		t.Run("stop rank "+strconv.Itoa(victim), func(t *testing.T) {
			t.Parallel() // two pairs of ranks on their own ports
			deadRank(t, victim, syscall.SIGSTOP)
		})
	}
}

// deadRank runs two ranks of the loop worker with the default timeouts,
// sends sig to victim after a few steps and checks that the survivor exits
// non-zero naming the victim within 60 s.
func deadRank(t *testing.T, victim int, sig syscall.Signal) {
	cmds, stdouts, stderrs := startLoopRanks(t, victim)
	survivor := 1 - victim
	if err := cmds[victim].Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if sig == syscall.SIGKILL {
		_ = cmds[victim].Wait()
	} else {
		// Keep draining, as a hung machine's socket buffers would.
		go func() {
			for stdouts[victim].Scan() {
			}
		}()
	}
	done := make(chan error, 1)
	go func() { done <- cmds[survivor].Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("rank %d exited 0 after rank %d was killed", survivor, victim)
		}
		msg := stderrs[survivor].String()
		t.Logf("rank %d exited %v after %v: %s", survivor, err, time.Since(killed).Round(time.Millisecond), strings.TrimSpace(msg))
		if !strings.Contains(msg, "rank "+strconv.Itoa(victim)) {
			t.Errorf("rank %d's error does not name rank %d: %s", survivor, victim, msg)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("rank %d still running 60 s after rank %d got %v", survivor, victim, sig)
	}
}

// startLoopRanks starts two ranks of the loop worker with the default
// timeouts and returns once victim has taken 5 steps, with the survivor's
// output drained in the background so it never blocks on a full pipe. Like
// the launcher, it starts them again on another port when something else
// bound the picked one before rank 0's store could (another test run on the
// machine).
func startLoopRanks(t *testing.T, victim int) ([]*exec.Cmd, []*bufio.Scanner, []*strings.Builder) {
	t.Helper()
	survivor := 1 - victim
	for attempt := 1; ; attempt++ {
		port, err := FreePort(0)
		if err != nil {
			t.Fatal(err)
		}
		cmds := make([]*exec.Cmd, 2)
		stdouts := make([]*bufio.Scanner, 2)
		stderrs := make([]*strings.Builder, 2)
		for r := range cmds {
			c := exec.Command(os.Args[0], "-test.run=^$")
			c.Env = append(os.Environ(), workerEnv+"=loop", defaultTimeoutEnv+"=1", "RANK="+strconv.Itoa(r), "WORLD_SIZE=2",
				"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port))
			so, err := c.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			stderrs[r] = new(strings.Builder)
			c.Stderr = stderrs[r]
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Process.Kill() })
			cmds[r], stdouts[r] = c, bufio.NewScanner(so)
		}
		// Either rank ending early ends the wait: the survivor's output
		// closes when it exits, the victim's when it does.
		stepped, ended := make(chan bool, 1), make(chan struct{})
		go func() {
			for stdouts[survivor].Scan() {
			}
			close(ended)
		}()
		go func() {
			for steps := 0; steps < 5; {
				if !stdouts[victim].Scan() {
					stepped <- false
					return
				}
				if strings.HasPrefix(stdouts[victim].Text(), "step") {
					steps++
				}
			}
			stepped <- true
		}()
		survivorEnded := false
		select {
		case ok := <-stepped:
			if ok {
				return cmds, stdouts, stderrs
			}
		case <-ended:
			survivorEnded = true
		}
		// Both readers finish before Wait closes the pipes.
		for _, c := range cmds {
			_ = c.Process.Kill()
		}
		if survivorEnded {
			<-stepped
		} else {
			<-ended
		}
		for _, c := range cmds {
			_ = c.Wait()
		}
		if !strings.Contains(stderrs[0].String(), portTakenMsg) || attempt == 3 {
			t.Fatalf("rank %d stopped before 5 steps: %s", victim, stderrs[victim])
		}
		t.Logf("port %d was taken before rank 0 could bind it; starting again", port)
	}
}

// World size 2 must train like one process with the same global batch and
// seed: losses to 1e-5 relative over 20 steps, final weights to 1e-5. The
// hash-table mask keeps different numbers of targets per row, and with
// accumulation the micro-batches must be the same rows in both worlds.
// "lazy": the ranks read their rows one at a time (an EpochSource) and each
// reads only its share: rank r the rows [a*4 + 2r, a*4 + 2r + 2) of each
// micro-batch a of 4 (80 of the 160 rows), every row read once between them.
func TestTrainParity(t *testing.T) {
	if testing.Short() {
		t.Skip("trains nano models on one and two processes (-short)")
	}
	for _, tc := range []struct {
		name     string
		strategy string
		accum    int
		lazy     bool
		nproc    int
		shard    string
		// asNone is the tolerance against the same ranks unsharded
		// (losses relative, weights absolute); -1: not compared.
		asNone float64
		group  int    // train.shard_group
		arch   string // model.arch ("": llama)
	}{
		{"static", loss.StrategyStatic, 1, false, 2, "", -1, 0, ""},
		{"hash-table accum 2", loss.StrategyHashTable, 2, false, 2, "", -1, 0, ""},
		{"hash-table accum 2 lazy", loss.StrategyHashTable, 2, true, 2, "", -1, 0, ""},
		// ZeRO-1 all-reduces as unsharded ranks do and each rank applies
		// the same elementwise AdamW to its range of the weights: bit for
		// bit the unsharded run on as many ranks.
		{"shard optimizer 2 ranks", loss.StrategyHashTable, 2, false, 2, train.ShardOptimizer, 0, 0, ""},
		{"shard optimizer 4 ranks", loss.StrategyHashTable, 2, false, 4, train.ShardOptimizer, 0, 0, ""},
		// ZeRO-2's reduce-scatter ring sums in another order than Gloo's
		// all-reduce: equal to rounding.
		{"shard gradients 2 ranks", loss.StrategyHashTable, 2, false, 2, train.ShardGradients, 1e-5, 0, ""},
		{"shard gradients 4 ranks", loss.StrategyHashTable, 2, false, 4, train.ShardGradients, 1e-5, 0, ""},
		// ZeRO-3 reduce-scatters each stage's gradients as its backward
		// ends and sums a tied embedding's two gradients after the ring,
		// not inside autograd: equal to rounding.
		{"shard full 2 ranks", loss.StrategyHashTable, 2, false, 2, train.ShardFull, 1e-5, 0, ""},
		{"shard full 4 ranks", loss.StrategyHashTable, 2, false, 4, train.ShardFull, 1e-5, 0, ""},
		{"shard full 4 ranks groups of 2", loss.StrategyHashTable, 2, false, 4, train.ShardFull, 1e-5, 2, ""},
		// GPT-2: learned positions in the embedding's unit, which the tied
		// head's stage gathers but does not read; biases; an untied head.
		{"shard full 2 ranks gpt2", loss.StrategyHashTable, 2, false, 2, train.ShardFull, 1e-5, 0, "gpt2"},
		{"shard full 4 ranks groups of 2 untied", loss.StrategyHashTable, 2, false, 4, train.ShardFull, 1e-5, 2, "untied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const steps = 20
			single, multi := t.TempDir(), t.TempDir()
			src, err := newOpticks(4000, 64)
			if err != nil {
				t.Fatal(err)
			}
			cfg, mcfg, lcfg := parityRun(steps, tc.strategy, tc.accum)
			mcfg.Arch, mcfg.Untied = tc.arch, tc.arch == "untied"
			if tc.arch == "untied" {
				mcfg.Arch = ""
			}
			if err := train.Run(context.Background(), cfg, mcfg, lcfg, src, single, train.Options{}); err != nil {
				t.Fatal(err)
			}
			env := []string{"MEMO_DIST_DIR=" + multi, "MEMO_DIST_STEPS=" + strconv.Itoa(steps),
				"MEMO_DIST_MASK=" + tc.strategy, "MEMO_DIST_ACCUM=" + strconv.Itoa(tc.accum), "MEMO_DIST_SHARD=" + tc.shard,
				"MEMO_DIST_SHARD_GROUP=" + strconv.Itoa(tc.group), "MEMO_DIST_ARCH=" + tc.arch}
			reads := t.TempDir()
			if tc.lazy {
				env = append(env, "MEMO_DIST_READS="+reads)
			}
			out, err := launchWorkers(t, tc.nproc, "train", env...)
			if err != nil {
				t.Fatalf("%d ranks: %v\n%s", tc.nproc, err, out)
			}
			if parityDevice() != "cpu" { // the ranks' own word that they share the one GPU (train.rankDevice)
				t.Logf("%d of %d ranks logged sharing a GPU", strings.Count(out, "more ranks than GPUs"), tc.nproc)
			}
			tol := parityTol()
			worst, maxDiff := compareRuns(t, single, multi, steps, tol, 10*tol)
			rel := relativeWeights(t, single, multi)
			t.Logf("on %s against one process: losses agree to %.2g relative; weights to %.2g absolute, %.2g relative (L2)", parityDevice(), worst, maxDiff, rel)
			if !(rel <= tol) {
				t.Errorf("final weights differ from one process's by %.2g relative (L2), want <= %.0e", rel, tol)
			}
			if tc.asNone >= 0 {
				plain := t.TempDir()
				env[0] = "MEMO_DIST_DIR=" + plain
				if out, err := launchWorkers(t, tc.nproc, "train", append(env, "MEMO_DIST_SHARD=none", "MEMO_DIST_SHARD_GROUP=0")...); err != nil {
					t.Fatalf("%d ranks unsharded: %v\n%s", tc.nproc, err, out)
				}
				asNone := tc.asNone
				if parityDevice() != "cpu" {
					asNone = max(asNone, 10*tol) // the GPU's shape-chosen reductions, as above
				}
				worst, maxDiff := compareRuns(t, plain, multi, steps, asNone, asNone)
				rel := relativeWeights(t, plain, multi)
				t.Logf("against %d unsharded ranks: losses agree to %.2g relative; weights to %.2g absolute, %.2g relative (L2)", tc.nproc, worst, maxDiff, rel)
				// Sharding adds no more than rounding to data parallelism.
				if !(worst <= tol && rel <= tol) {
					t.Errorf("against %d unsharded ranks: losses %.2g, weights %.2g relative, want <= %.0e", tc.nproc, worst, rel, tol)
				}
			}
			if tc.lazy {
				checkShares(t, reads, 2, steps*cfg.BatchSize, cfg.BatchSize/cfg.GradAccum)
			}
		})
	}
}

// A run interrupted on one world size resumes on another and ends where an
// uninterrupted single-process run does: rank 0 alone reads the checkpoint
// and broadcasts step, data position, Adam step count, weights and moments.
func TestResumeOtherWorldSize(t *testing.T) {
	if testing.Short() {
		t.Skip("trains nano models on one and two processes (-short)")
	}
	const steps, every, stop = 20, 5, 12 // checkpoint at 10; steps 11-12 are redone
	src, err := newOpticks(4000, 64)
	if err != nil {
		t.Fatal(err)
	}
	cfg, mcfg, lcfg := parityRun(steps, loss.StrategyHashTable, 1)
	cfg.CheckpointEvery = every
	whole := t.TempDir()
	if err := train.Run(context.Background(), cfg, mcfg, lcfg, src, whole, train.Options{}); err != nil {
		t.Fatal(err)
	}
	single := func(dir string, stopAfter int) {
		if err := train.Run(context.Background(), cfg, mcfg, lcfg, src, dir, train.Options{StopAfter: stopAfter}); err != nil {
			t.Fatal(err)
		}
	}
	ranks := func(n int, shard string, group ...int) func(dir string, stopAfter int) {
		return func(dir string, stopAfter int) {
			out, err := launchWorkers(t, n, "train", "MEMO_DIST_DIR="+dir, "MEMO_DIST_STEPS="+strconv.Itoa(steps),
				"MEMO_DIST_MASK="+lcfg.Strategy, "MEMO_DIST_CHECKPOINT_EVERY="+strconv.Itoa(every),
				"MEMO_DIST_STOP_AFTER="+strconv.Itoa(stopAfter), "MEMO_DIST_SHARD="+shard,
				"MEMO_DIST_SHARD_GROUP="+strconv.Itoa(append(group, 0)[0]))
			if err != nil {
				t.Fatalf("%d ranks (shard %q): %v\n%s", n, shard, err, out)
			}
		}
	}
	pair := ranks(2, "")
	for _, tc := range []struct {
		name          string
		first, second func(dir string, stopAfter int)
	}{
		{"2 ranks then 1", pair, single},
		{"1 process then 2 ranks", single, pair},
		// A sharded checkpoint is gathered into one optimizer.safetensors:
		// it reloads on another number of ranks, sharded or not.
		{"2 ranks shard optimizer then 4 shard gradients", ranks(2, train.ShardOptimizer), ranks(4, train.ShardGradients)},
		{"4 ranks shard optimizer then 1", ranks(4, train.ShardOptimizer), single},
		{"1 process then 2 ranks shard optimizer", single, ranks(2, train.ShardOptimizer)},
		// ZeRO-3 gathers its weights into the same checkpoint.
		{"2 ranks shard full then 4 shard full in groups of 2", ranks(2, train.ShardFull), ranks(4, train.ShardFull, 2)},
		{"4 ranks shard full in groups of 2 then 1", ranks(4, train.ShardFull, 2), single},
		{"1 process then 4 ranks shard full", single, ranks(4, train.ShardFull)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.first(dir, stop)
			tc.second(dir, 0)
			worst, maxDiff := compareRuns(t, whole, dir, steps, 1e-5, 1e-5)
			t.Logf("losses agree to %.2g relative; weights to %.2g absolute", worst, maxDiff)
		})
	}
}

// A sharded run's checkpoint holds the gathered optimizer: stopped on 4
// ranks and resumed on 4, with sharding switched on or off at the resume,
// it ends bit for bit where 4 unsharded ranks run uninterrupted do (ZeRO-1
// is bit-identical to unsharded ranks), which tests the gather at the
// checkpoint and the scatter at the resume exactly.
func TestResumeShardedExact(t *testing.T) {
	if testing.Short() {
		t.Skip("trains nano models on four processes (-short)")
	}
	const steps, every, stop = 12, 5, 7 // checkpoint at 5; steps 6-7 are redone
	run := func(dir string, shard string, stopAfter int) {
		group := 0
		if s, ok := strings.CutSuffix(shard, "/2"); ok {
			shard, group = s, 2
		}
		out, err := launchWorkers(t, 4, "train", "MEMO_DIST_DIR="+dir, "MEMO_DIST_STEPS="+strconv.Itoa(steps),
			"MEMO_DIST_MASK="+loss.StrategyHashTable, "MEMO_DIST_CHECKPOINT_EVERY="+strconv.Itoa(every),
			"MEMO_DIST_STOP_AFTER="+strconv.Itoa(stopAfter), "MEMO_DIST_SHARD="+shard, "MEMO_DIST_SHARD_GROUP="+strconv.Itoa(group))
		if err != nil {
			t.Fatalf("4 ranks (shard %q): %v\n%s", shard, err, out)
		}
	}
	whole := map[string]string{}
	for _, shard := range []string{train.ShardNone, train.ShardFull, train.ShardFull + "/2"} {
		whole[shard] = t.TempDir()
		run(whole[shard], shard, 0)
	}
	// A "full" run stopped and resumed "full" (in groups of 2 or not) ends
	// bit for bit where the uninterrupted one does: the checkpoint gathers
	// its weights and moments and the resume cuts them again, exactly.
	for _, tc := range []struct{ first, second, like string }{
		{train.ShardOptimizer, train.ShardNone, train.ShardNone},
		{train.ShardNone, train.ShardOptimizer, train.ShardNone},
		{train.ShardFull, train.ShardFull, train.ShardFull},
		{train.ShardFull + "/2", train.ShardFull + "/2", train.ShardFull + "/2"},
	} {
		t.Run(tc.first+" then "+tc.second, func(t *testing.T) {
			dir := t.TempDir()
			run(dir, tc.first, stop)
			run(dir, tc.second, 0)
			compareRuns(t, whole[tc.like], dir, steps, 0, 0)
		})
	}
	// Interrupted on one rank during step 7, a "full" run saves step 7 at
	// once (the ranks agree to stop there and gather its checkpoint), and
	// resumes from it to end where the uninterrupted run does; it used to
	// keep only step 5 and redo steps 6-7.
	t.Run("full interrupted", func(t *testing.T) {
		dir := t.TempDir()
		out, err := launchWorkers(t, 4, "train", "MEMO_DIST_DIR="+dir, "MEMO_DIST_STEPS="+strconv.Itoa(steps),
			"MEMO_DIST_MASK="+loss.StrategyHashTable, "MEMO_DIST_CHECKPOINT_EVERY="+strconv.Itoa(every),
			"MEMO_DIST_INTERRUPT_AT="+strconv.Itoa(stop), "MEMO_DIST_SHARD="+train.ShardFull)
		if err == nil || !strings.Contains(out, fmt.Sprintf("interrupted at step %d of %d", stop, steps)) {
			t.Fatalf("4 ranks interrupted at step %d: %v; want each to report saving step %d:\n%s", stop, err, stop, out)
		}
		if _, err := os.Stat(filepath.Join(dir, checkpoint.DirName, checkpoint.StepName(stop), checkpoint.ModelFile)); err != nil {
			ents, _ := os.ReadDir(filepath.Join(dir, checkpoint.DirName))
			t.Fatalf("no checkpoint of step %d: %v (%v)\n%s", stop, err, ents, out)
		}
		run(dir, train.ShardFull, 0)
		compareRuns(t, whole[train.ShardFull], dir, steps, 0, 0)
	})
}

// checkShares checks the rows each of size ranks read (readsFile in dir)
// over a run of rows stream rows in micro-batches of gm: rank r reads,
// in order, the r-th contiguous gm/size rows of each micro-batch, and
// nothing else.
func checkShares(t *testing.T, dir string, size, rows, gm int) {
	t.Helper()
	micro := gm / size
	for r := 0; r < size; r++ {
		got, err := readReads(readsFile(dir, r))
		if err != nil {
			t.Fatal(err)
		}
		var want []int64
		for p := 0; p < rows; p++ {
			if in := p % gm; in >= r*micro && in < (r+1)*micro {
				want = append(want, int64(p))
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("rank %d read %d rows %v, want its %d: %v", r, len(got), got, len(want), want)
		}
		t.Logf("rank %d read %d of the %d rows", r, len(got), rows)
	}
}

// compareRuns checks that run directories a and b logged the same kept
// losses over steps (relative tolerance lossTol) and ended with the same
// weights (absolute tolerance weightTol); it returns the worst differences.
func compareRuns(t *testing.T, a, b string, steps int, lossTol, weightTol float64) (worst, maxDiff float64) {
	t.Helper()
	ma, err := runfiles.ReadMetrics(filepath.Join(a, runfiles.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	mb, err := runfiles.ReadMetrics(filepath.Join(b, runfiles.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(ma) != steps || len(mb) != steps {
		t.Fatalf("metric rows: %d in %s, %d in %s, want %d", len(ma), a, len(mb), b, steps)
	}
	for i := range ma {
		rel := math.Abs(ma[i].LossKept-mb[i].LossKept) / math.Abs(ma[i].LossKept)
		worst = math.Max(worst, rel)
		if !(rel <= lossTol) {
			t.Errorf("step %d: loss %.8g vs %.8g (relative %.2g)", i+1, ma[i].LossKept, mb[i].LossKept, rel)
		}
	}
	wa, wb := testrun.Weights(t, a), testrun.Weights(t, b)
	for name, x := range wa {
		y, ok := wb[name]
		if !ok || len(x) != len(y) {
			t.Fatalf("parameter %s missing or resized in %s", name, b)
		}
		for i := range x {
			maxDiff = math.Max(maxDiff, math.Abs(x[i]-y[i]))
		}
	}
	if !(maxDiff <= weightTol) {
		t.Errorf("final weights differ by up to %g (want <= %g)", maxDiff, weightTol)
	}
	return worst, maxDiff
}

// relativeWeights is ||a - b|| / ||a|| (L2) over all the final weights of
// run directories a and b. Rounding differences in the gradients'
// summation order move single elements by up to a few 1e-6 after 20
// steps (AdamW normalises each element's step, so one whose gradient is
// near zero moves as far as any), and a tensor that starts at zero (a
// bias) can differ by 1e-4 of its own small norm; the model as a whole
// stays within 1e-6.
func relativeWeights(t *testing.T, a, b string) float64 {
	t.Helper()
	return testrun.RelDiff(t, testrun.Weights(t, b), testrun.Weights(t, a))
}

// A picked port that something else binds before rank 0 does makes the
// launcher start the ranks again on another port, not fail the run.
func TestLaunchRetriesTakenPort(t *testing.T) {
	thief, err := listen(0)
	if err != nil {
		t.Fatal(err)
	}
	defer thief.Close()
	taken := thief.Addr().(*net.TCPAddr).Port
	var picked []int
	defer func(f func() (int, error)) { pickPort = f }(pickPort)
	pickPort = func() (int, error) {
		p := taken
		if len(picked) > 0 {
			var err error
			if p, err = FreePort(0); err != nil {
				return 0, err
			}
		}
		picked = append(picked, p)
		return p, nil
	}
	out, err := launchWorkers(t, 2, "sum")
	if err != nil {
		t.Fatalf("launch after a taken port: %v\n%s", err, out)
	}
	if len(picked) != 2 {
		t.Fatalf("ports picked: %v, want the taken one and one more\n%s", picked, out)
	}
	if !strings.Contains(out, "launch: port "+strconv.Itoa(taken)+" was taken before rank 0 could bind it") {
		t.Errorf("the retry is not reported:\n%s", out)
	}
	for r := 0; r < 2; r++ {
		if lines(out, "[rank "+strconv.Itoa(r)+"] sum ok") != 1 {
			t.Errorf("rank %d did not report success once:\n%s", r, out)
		}
	}

	// A port the caller chose is never replaced.
	err = LaunchExe(context.Background(), 2, os.Args[0], nil, LaunchOptions{Port: taken})
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("launch on a chosen busy port: %v", err)
	}
}
