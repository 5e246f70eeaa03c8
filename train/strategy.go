package train

// A strategy is how a run holds its weights, gradients and optimizer state
// over its workers and ranks: the parts of a step that differ between
// train.shard = none (replicated), optimizer and gradients (ZeRO-1/2) and
// full (ZeRO-3). The one loop (step.go, validate.go) reads and masks the
// batch, sums the losses, schedules the learning rate and validates; it
// asks the strategy where the weights of a forward come from
// (forwardBackward, eval), how the gradients are reduced (reduce), clipped
// (clip) and applied (update), and what a checkpoint sees (withWeights).
//
// A new strategy is one file: a type with these methods and an init that
// registers it under its name. Where the pieces filed beside this one plug
// in:
//
//   - DP-SGD is not a strategy but a step of its own (dpStep, which
//     trainStep hands over to): each Poisson-sampled row's gradient is
//     taken alone and clipped to C, the clipped gradients are summed,
//     rank 0 alone adds the Gaussian noise to its sum before the
//     all-reduce (the noise goes in once over all ranks), and the sum is
//     divided by the expected batch q·N. It needs train.shard = "none".
//   - LoRA selects the trainable parameters (loop.trainable): the
//     optimizer, the gradients every strategy reduces and clips, and its
//     update see only those; the frozen weights get no gradient.

import (
	"fmt"
	"sort"

	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch/ts"
)

type strategy interface {
	// bindWhole gives rank 0's parameters whole storage to read a
	// checkpoint or train.init_from into (a no-op where they have it).
	bindWhole() error
	// start fills this rank's weights once rank 0's state is broadcast:
	// loaded says whether rank 0 read them (else they are the seed's).
	start(loaded bool) error
	// zeroGrads clears the gradients a step accumulates.
	zeroGrads()
	// forwardBackward runs the forward pass of rows (this rank's share of
	// one micro-batch; dropped is its goldfish mask, block decisions a
	// row) and the backward pass of lossOf on the logits of each part it
	// splits them into, accumulating the gradients; it returns each
	// part's loss in order.
	forwardBackward(rows [][]int32, dropped []bool, lossOf lossFunc) ([]workerLoss, error)
	// reduce sums the step's accumulated gradients over workers and ranks
	// into the gradients this rank updates.
	reduce() error
	// clip scales those gradients so that their global L2 norm is at most
	// max (0: no clipping) and returns the norm before.
	clip(max float64) (float64, error)
	// update takes the optimizer step with learning rate lr and gives
	// every rank the weights its next forward needs.
	update(lr float64) error
	// eval is the CE sum and target count of rows without gradients, one
	// per part in order (the loop adds them in that order). Every rank
	// calls it equally often, rows possibly empty: gathered weights need
	// every rank at each gather.
	eval(rows [][]int32) ([]evalSum, error)
	// withWeights runs fn, a checkpoint, with rank 0's model holding the
	// whole weights; every rank calls it.
	withWeights(fn func() error) error
	// stateBytes fills the weight and gradient bytes this rank keeps.
	stateBytes(out *StateBytes)
	// drop frees the strategy's state.
	drop()
}

// lossFunc is the loss of one part of a micro-batch from its logits,
// targets and dropped-target mask (n: the part's target counts, from the
// host: countTargets), with its backward pass run.
type lossFunc func(logits, tgt, dropped *ts.Tensor, n targetCounts) workerLoss

// evalSum is one part's CE sum and target count in validation.
type evalSum struct{ sum, n float64 }

// strategies are the registered strategies by train.shard value.
var strategies = map[string]func(l *loop) (strategy, error){}

// registerStrategy makes build the strategy of train.shard = name.
func registerStrategy(name string, build func(l *loop) (strategy, error)) {
	if _, dup := strategies[name]; dup {
		panic("train: strategy " + name + " registered twice")
	}
	strategies[name] = build
}

// newStrategy builds the strategy of l.cfg, once l.g and l.opt are set.
func (l *loop) newStrategy() (strategy, error) {
	if len(l.lora) > 0 {
		return newLoRAStrategy(l) // lora.go
	}
	name := shardName(l.cfg.Shard)
	build, ok := strategies[name]
	if !ok {
		names := make([]string, 0, len(strategies))
		for n := range strategies {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("train.shard = %q: no such strategy (have %v)", name, names)
	}
	return build(l)
}

// trainable is the parameters the optimizer updates: all of them, or a
// LoRA run's adapters (lora.go).
func (l *loop) trainable(g *model.GPT) []model.Param {
	if len(l.lora) > 0 {
		return l.lora[0].Params()
	}
	return g.Params()
}
