package dist

import (
	"fmt"
	"sort"

	"github.com/memo-research/memo/train"
	"github.com/sugarme/gotch/ts"
)

// ShardChunk is how many elements per rank one round of a sharded
// collective moves (BucketBytes of float32): its scratch memory is
// Size() × ShardChunk elements.
const ShardChunk = BucketBytes / 4

// The sharded collectives (train.shard) read their tensors as one flat
// vector in list order, of which rank r owns [r*shard, (r+1)*shard); see
// torchx.ProcessGroup.ShardAllGather.

// ShardAllGather copies every rank's owned range of t into every rank's t,
// among the ranks among names (all of them when it names none).
func (g *Group) ShardAllGather(t []*ts.Tensor, shard int64, among train.Among) error {
	if g.pg == nil {
		return nil
	}
	g.count("all-gather", among.Scope, t, float64(g.ringSize(among)-1)*float64(shard))
	return g.fault("all-gather", g.pg.ShardAllGather(t, shard, ShardChunk, among.Ranks))
}

// ShardReduceScatter sums the ranks' t into this rank's owned range; the
// rest of t is left holding partial sums.
func (g *Group) ShardReduceScatter(t []*ts.Tensor, shard int64, among train.Among) error {
	if g.pg == nil {
		return nil
	}
	g.count("reduce-scatter", among.Scope, t, float64(g.ringSize(among)-1)*float64(shard))
	return g.fault("reduce-scatter", g.pg.ShardReduceScatter(t, shard, ShardChunk, among.Ranks))
}

// ringSize is how many ranks a sharded collective among runs over.
func (g *Group) ringSize(among train.Among) int {
	if among.Ranks == nil {
		return g.cfg.Size
	}
	return len(among.Ranks)
}

// ShardGather copies each rank's local vector into root's full tensors (at
// the range that rank owns: slots[rank], or its rank for nil slots); the
// other ranks pass full = nil.
func (g *Group) ShardGather(full []*ts.Tensor, local *ts.Tensor, shard int64, root int, slots []int) error {
	if g.pg == nil {
		return fmt.Errorf("gather shards: a group of one process has no shards")
	}
	return g.fault("gather shards", g.pg.ShardGather(full, local, shard, root, slots))
}

// ShardScatter copies root's full tensors' owned range of each rank into
// that rank's local vector.
func (g *Group) ShardScatter(full []*ts.Tensor, local *ts.Tensor, shard int64, root int, slots []int) error {
	if g.pg == nil {
		return fmt.Errorf("scatter shards: a group of one process has no shards")
	}
	return g.fault("scatter shards", g.pg.ShardScatter(full, local, shard, root, slots))
}

// count adds one call of collective op on t to the traffic tally, with
// sentElems the elements this rank sends under the collective's schedule.
func (g *Group) count(op, scope string, t []*ts.Tensor, sentElems float64) {
	if g.traffic == nil {
		g.traffic = map[string]*train.Traffic{}
	}
	key := op + "/" + scope
	c := g.traffic[key]
	if c == nil {
		c = &train.Traffic{Op: op, Scope: scope}
		g.traffic[key] = c
	}
	var payload, elem int64
	for _, x := range t {
		n := int64(x.Numel())
		payload += n * int64(x.DType().Size())
		elem = int64(x.DType().Size())
	}
	c.Calls++
	c.PayloadBytes += payload
	if sentElems < 0 { // all-reduce: a ring sends 2(N-1)/N of the payload
		n := float64(g.cfg.Size)
		c.SentBytes += 2 * (n - 1) / n * float64(payload)
	} else {
		c.SentBytes += sentElems * float64(elem)
	}
}

// Traffic is this rank's tally of the collectives it took part in since it
// joined, one entry per collective, by name.
func (g *Group) Traffic() []train.Traffic {
	out := make([]train.Traffic, 0, len(g.traffic))
	for _, c := range g.traffic {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Op != out[j].Op {
			return out[i].Op < out[j].Op
		}
		return out[i].Scope < out[j].Scope
	})
	return out
}
