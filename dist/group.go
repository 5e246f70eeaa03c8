package dist

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/memo-research/memo/internal/rankenv"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/train"
	"github.com/sugarme/gotch/ts"
)

// BucketBytes is the size of the flat buffers gradients are packed into
// for one all-reduce each (PyTorch DDP's default is 25 MB too).
const BucketBytes = 25 << 20

// Group is this process's membership in a data-parallel group. It
// implements train.Group. Its methods must be called from one goroutine.
type Group struct {
	cfg Config
	pg  *torchx.ProcessGroup
	// traffic tallies the bytes each collective moved (see Traffic).
	traffic map[string]*train.Traffic
}

// Init discovers this rank (see Discover) and joins the group. A world of
// size 1 needs no rendezvous and never opens a socket.
func Init(ctx context.Context, c Config) (*Group, error) {
	c, err := Discover(c)
	if err != nil {
		return nil, err
	}
	g := &Group{cfg: c}
	if c.Size == 1 {
		return g, nil
	}
	type res struct {
		pg  *torchx.ProcessGroup
		err error
	}
	done := make(chan res, 1)
	go func() {
		var r res
		if c.Backend == "nccl" {
			r.pg, r.err = torchx.NewNCCL(c.Addr, c.Port, c.Rank, c.Size, c.Timeout)
		} else {
			r.pg, r.err = torchx.NewGloo(c.Addr, c.Port, c.Rank, c.Size, c.Timeout, max(c.DeadAfter, 0), c.Iface)
		}
		done <- r
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, rankenv.Tag(c.Rank, c.Size, fmt.Errorf("join %s group at %s:%d: %w", c.Backend, c.Addr, c.Port, explain(r.err, c)))
		}
		g.pg = r.pg
	case <-ctx.Done():
		return nil, rankenv.Tag(c.Rank, c.Size, fmt.Errorf("join group at %s:%d: %w", c.Addr, c.Port, ctx.Err()))
	}
	slog.Debug("dist: joined", "rank", c.Rank, "size", c.Size, "backend", c.Backend, "addr", c.Addr, "port", c.Port, "from", c.Source)
	return g, nil
}

// portTakenMsg follows "port N" when rank 0's store could not bind its
// port. The launcher looks for it in rank 0's output to start the ranks
// again on another port (see LaunchExe).
const portTakenMsg = "is already in use (choose another MASTER_PORT)"

// explain turns libtorch's socket errors into what the user should do.
func explain(err error, c Config) error {
	m := err.Error()
	switch {
	case strings.Contains(m, "in use"):
		return fmt.Errorf("port %d %s: %w", c.Port, portTakenMsg, err)
	case strings.Contains(m, "imed out") || strings.Contains(m, "imeout"):
		return fmt.Errorf("not all %d ranks arrived within %v (are they all started, with the same MASTER_ADDR/MASTER_PORT?): %w", c.Size, c.Timeout, err)
	}
	return err
}

// Rank is this process's rank in [0, Size()).
func (g *Group) Rank() int { return g.cfg.Rank }

// Size is the number of processes.
func (g *Group) Size() int { return g.cfg.Size }

// LocalRank is this process's index on its machine.
func (g *Group) LocalRank() int { return g.cfg.LocalRank }

// Config is the resolved configuration.
func (g *Group) Config() Config { return g.cfg }

// AllReduceMean replaces each tensor by its mean over the ranks, in place:
// the tensors are packed per dtype into BucketBytes buffers, summed (Gloo
// has no average) and divided by Size().
func (g *Group) AllReduceMean(t []*ts.Tensor) error {
	if g.pg == nil {
		return nil
	}
	g.count("all-reduce", "", t, -1)
	return g.fault("all-reduce", g.pg.AllReduce(t, true, BucketBytes))
}

// AllReduceSum replaces each tensor by its sum over the ranks, in place.
func (g *Group) AllReduceSum(t []*ts.Tensor) error {
	if g.pg == nil {
		return nil
	}
	g.count("all-reduce", "", t, -1)
	return g.fault("all-reduce", g.pg.AllReduce(t, false, BucketBytes))
}

// Broadcast copies root's tensors into every rank's, in place.
func (g *Group) Broadcast(t []*ts.Tensor, root int) error {
	if root < 0 || root >= g.cfg.Size {
		return fmt.Errorf("broadcast root %d: must be in [0, %d)", root, g.cfg.Size)
	}
	if g.pg == nil {
		return nil
	}
	return g.fault("broadcast", g.pg.Broadcast(t, root, BucketBytes))
}

// Barrier returns once every rank has reached it.
func (g *Group) Barrier() error {
	if g.pg == nil {
		return nil
	}
	return g.fault("barrier", g.pg.Barrier())
}

// Close leaves the group after a barrier, so that rank 0's store outlives
// the others' last requests. Do not call it after a failed collective: a
// broken group is left to the process's exit.
func (g *Group) Close() error {
	if g.pg == nil {
		return nil
	}
	err := g.Barrier()
	if err == nil {
		g.pg.Close()
	}
	g.pg = nil
	return err
}

// heartbeatWait is how long a failed rank watches its peers' heartbeats
// (bumped every second) to tell which one is gone.
const heartbeatWait = 2500 * time.Millisecond

// fault names the rank that most likely caused a failed collective.
func (g *Group) fault(op string, err error) error {
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), torchx.NoHeartbeat) {
		// The collective was ended by a silent peer and says which; asking
		// the store again could hang on a stopped rank 0.
		return rankenv.Tag(g.cfg.Rank, g.cfg.Size, fmt.Errorf("%s failed: %w", op, err))
	}
	who := "a peer"
	if silent, ok := g.pg.SilentRanks(heartbeatWait); !ok {
		who = fmt.Sprintf("rank 0 (its store at %s:%d is unreachable)", g.cfg.Addr, g.cfg.Port)
	} else if len(silent) > 0 {
		s := make([]string, len(silent))
		for i, r := range silent {
			s[i] = fmt.Sprint(r)
		}
		who = "rank " + strings.Join(s, ", rank ")
	}
	return rankenv.Tag(g.cfg.Rank, g.cfg.Size, fmt.Errorf("%s failed, %s stopped responding: %w", op, who, err))
}
