package dist

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// defaultTimeoutEnv makes a worker use the default timeouts.
const defaultTimeoutEnv = "MEMO_DIST_TEST_DEFAULT_TIMEOUT"

// runWorker is one rank of a multi-process test.
func runWorker(mode string) error {
	c := Config{Rank: -1, LocalRank: -1, Timeout: 30 * time.Second}
	if os.Getenv(defaultTimeoutEnv) != "" {
		c.Timeout = 0 // what memo run uses
	}
	g, err := Init(context.Background(), c)
	if err != nil {
		return err
	}
	switch mode {
	case "sum":
		return workerSum(g)
	case "fail1":
		if g.Rank() == 1 {
			return fmt.Errorf("rank 1 fails on purpose")
		}
		// Block in a collective that rank 1 never joins: the launcher
		// must stop this rank.
		return g.Barrier()
	case "loop":
		return workerLoop(g)
	case "train":
		return workerTrain(g)
	case "benchpeer":
		return benchPeer(g)
	}
	return fmt.Errorf("unknown worker mode %q", mode)
}

// workerSum checks sums, means and broadcasts of tensors of several shapes
// and dtypes, and a buffer larger than one bucket.
func workerSum(g *Group) error {
	r := float64(g.Rank())
	n := float64(g.Size())
	a := ts.MustFull([]int64{3, 4}, ts.FloatScalar(r+1), gotch.Float, gotch.CPU)
	b := ts.MustOfSlice([]float64{r, 10 * r, -r})
	big := ts.MustFull([]int64{BucketBytes/4 + 1000}, ts.FloatScalar(r+0.5), gotch.Float, gotch.CPU)
	i := ts.MustOfSlice([]int64{int64(g.Rank()) + 1, 7})
	if err := g.AllReduceSum([]*ts.Tensor{a, b, big, i}); err != nil {
		return err
	}
	sumR := n * (n - 1) / 2 // sum of ranks
	want := map[string]struct {
		t *ts.Tensor
		v float64
	}{"a": {a, sumR + n}, "b[1]": {b, 10 * sumR}, "big": {big, sumR + n/2}, "i[1]": {i, 7 * n}}
	for name, w := range want {
		vals := w.t.Float64Values()
		idx := 0
		if name == "b[1]" || name == "i[1]" {
			idx = 1
		}
		if vals[idx] != w.v || vals[len(vals)-1] != vals[len(vals)-1] {
			return fmt.Errorf("sum of %s: got %v, want %v", name, vals[idx], w.v)
		}
		if name == "big" && vals[len(vals)-1] != w.v {
			return fmt.Errorf("sum of big tail: got %v, want %v", vals[len(vals)-1], w.v)
		}
	}
	m := ts.MustFull([]int64{5}, ts.FloatScalar(r), gotch.Double, gotch.CPU)
	if err := g.AllReduceMean([]*ts.Tensor{m}); err != nil {
		return err
	}
	if got := m.Float64Values()[4]; math.Abs(got-sumR/n) > 1e-12 {
		return fmt.Errorf("mean: got %v, want %v", got, sumR/n)
	}
	if err := g.AllReduceMean([]*ts.Tensor{i}); err == nil {
		return fmt.Errorf("mean of an integer tensor did not fail")
	}
	c := ts.MustFull([]int64{2, 2}, ts.FloatScalar(100+r), gotch.Float, gotch.CPU)
	if err := g.Broadcast([]*ts.Tensor{c}, 1); err != nil {
		return err
	}
	if got := c.Float64Values()[3]; got != 101 {
		return fmt.Errorf("broadcast from rank 1: got %v, want 101", got)
	}
	fmt.Println("sum ok")
	return g.Close()
}

// workerLoop all-reduces forever, printing its progress, until a peer dies.
func workerLoop(g *Group) error {
	x := ts.MustOnes([]int64{1 << 18}, gotch.Float, gotch.CPU)
	for step := 0; ; step++ {
		if err := g.AllReduceMean([]*ts.Tensor{x}); err != nil {
			return err
		}
		fmt.Println("step", step)
		time.Sleep(20 * time.Millisecond)
		torchx.Collect()
	}
}

// benchPeer mirrors BenchmarkAllReduce's rank 0: a broadcast [bytes, count]
// announces count all-reduces of that size; bytes 0 ends.
func benchPeer(g *Group) error {
	for {
		ctl := ts.MustZeros([]int64{2}, gotch.Int64, gotch.CPU)
		if err := g.Broadcast([]*ts.Tensor{ctl}, 0); err != nil {
			return err
		}
		v := ctl.Int64Values()
		if v[0] == 0 {
			return g.Close()
		}
		x := ts.MustZeros([]int64{v[0] / 4}, gotch.Float, gotch.CPU)
		for k := int64(0); k < v[1]; k++ {
			if err := g.AllReduceSum([]*ts.Tensor{x}); err != nil {
				return err
			}
		}
		x.MustDrop()
		torchx.Collect()
	}
}

func envInt(k string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return n
	}
	return def
}
