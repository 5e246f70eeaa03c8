package train

// train.shard = "optimizer" (ZeRO-1) and "gradients" (ZeRO-2): every rank
// runs the whole model as the replicated strategy does, but keeps and
// updates only its range of the AdamW state (the optimizer's shardPlan);
// the updated weights are all-gathered. ZeRO-2 reduce-scatters the
// gradients, each rank receiving the sum over its range alone.

import (
	"fmt"
)

func init() {
	build := func(l *loop) (strategy, error) { return &shardedOptimizer{replicated{l: l}}, nil }
	registerStrategy(ShardOptimizer, build)
	registerStrategy(ShardGradients, build)
}

// shardedOptimizer is the strategy of train.shard = "optimizer" and
// "gradients".
type shardedOptimizer struct{ replicated }

// scatters says whether the gradients are reduce-scattered (ZeRO-2)
// rather than all-reduced.
func (s *shardedOptimizer) scatters() bool { return s.l.opt.plan.mode == ShardGradients }

func (s *shardedOptimizer) reduce() error {
	if !s.scatters() {
		return s.replicated.reduce()
	}
	if err := s.collect(); err != nil {
		return err
	}
	// Each rank's share is already normalised by the global kept count:
	// the sums over its range are the global batch's gradient there.
	l := s.l
	if err := l.sharder.ShardReduceScatter(s.gs, l.opt.plan.units[0].per, Among{}); err != nil {
		return fmt.Errorf("reduce-scatter gradients: %w", err)
	}
	return nil
}

func (s *shardedOptimizer) clip(max float64) (float64, error) {
	if !s.scatters() {
		return s.replicated.clip(max)
	}
	return clipShard(s.l.opt.plan, s.gs, max, s.l.group)
}

// update steps this rank's range of the weights and gives every rank all.
func (s *shardedOptimizer) update(lr float64) error {
	l := s.l
	l.opt.update(s.gs, lr)
	s.dropGrads()
	if err := l.sharder.ShardAllGather(paramTensors(l.opt.params), l.opt.plan.units[0].per, Among{}); err != nil {
		return fmt.Errorf("all-gather updated weights: %w", err)
	}
	return nil
}
