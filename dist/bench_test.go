package dist

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/train"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// BenchmarkAllReduce measures a two-rank all-reduce (sum) on loopback: this
// process is rank 0, a copy of the test binary (benchPeer) is rank 1.
// Reported GB/s is the buffer size over the time of one all-reduce.
func BenchmarkAllReduce(b *testing.B) {
	port, err := FreePort(0)
	if err != nil {
		b.Fatal(err)
	}
	peer := exec.Command(os.Args[0], "-test.run=^$")
	peer.Env = append(os.Environ(), workerEnv+"=benchpeer", "RANK=1", "WORLD_SIZE=2",
		"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port))
	peer.Stderr = os.Stderr
	if err := peer.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = peer.Wait() }()
	g, err := Init(context.Background(), Config{Rank: 0, Size: 2, LocalRank: 0, Addr: "127.0.0.1", Port: port, Timeout: time.Minute})
	if err != nil {
		_ = peer.Process.Kill()
		b.Fatal(err)
	}
	announce := func(bytes, count int64) {
		ctl := ts.MustOfSlice([]int64{bytes, count})
		if err := g.Broadcast([]*ts.Tensor{ctl}, 0); err != nil {
			b.Fatal(err)
		}
	}
	for _, mb := range []int64{1, 4, 16, 64} {
		bytes := mb << 20
		b.Run(strconv.FormatInt(mb, 10)+"MB", func(b *testing.B) {
			x := ts.MustOnes([]int64{bytes / 4}, gotch.Float, gotch.CPU)
			defer x.MustDrop()
			announce(bytes, int64(b.N))
			b.SetBytes(bytes)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := g.AllReduceSum([]*ts.Tensor{x}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(bytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
	announce(0, 0)
	if err := g.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkStepOverhead trains the parity model for 30 steps in one
// process and on two ranks and reports the time of an optimizer step in
// each (from metrics.arrow's elapsed time, so start-up is excluded).
func BenchmarkStepOverhead(b *testing.B) {
	const steps = 30
	src, err := newOpticks(4000, 64)
	if err != nil {
		b.Fatal(err)
	}
	stepTime := func(dir string) float64 {
		m, err := runfiles.ReadMetrics(filepath.Join(dir, runfiles.MetricsFile))
		if err != nil {
			b.Fatal(err)
		}
		if len(m) != steps {
			b.Fatalf("%d metric rows, want %d", len(m), steps)
		}
		return (m[steps-1].ElapsedS - m[4].ElapsedS) / float64(steps-5) // past warm-up
	}
	var t1, t2 float64
	for i := 0; i < b.N; i++ {
		single, multi := b.TempDir(), b.TempDir()
		cfg, mcfg, lcfg := parityRun(steps, loss.StrategyStatic, 1)
		if err := train.Run(context.Background(), cfg, mcfg, lcfg, src, single, train.Options{}); err != nil {
			b.Fatal(err)
		}
		if out, err := launchWorkers(b, 2, "train", "MEMO_DIST_DIR="+multi, "MEMO_DIST_STEPS="+strconv.Itoa(steps)); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		t1 += stepTime(single)
		t2 += stepTime(multi)
	}
	b.ReportMetric(1e3*t1/float64(b.N), "ms/step-1proc")
	b.ReportMetric(1e3*t2/float64(b.N), "ms/step-2proc")
	b.ReportMetric(t2/t1, "ratio")
}
