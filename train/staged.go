package train

// Activation checkpointing: a part's forward pass a stage at a time (the
// embedding, each block, the head; model.Pass) without gradients, keeping
// only each stage's input, then the backward pass from the loss a stage at
// a time from the last, each stage run again from its saved input with
// gradients just before its backward pass. The activations held at once
// are one stage's, not every block's, for a second forward pass of the
// blocks. ZeRO-3 (zero3.go) always trains so, gathering each stage's
// weights around it; the replicated strategies do with
// train.activation_checkpointing.

import (
	"fmt"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// stageFunc runs fn, one stage's forward (backward: its recomputation and
// backward pass), with the weights of units bound: the units are the
// strategy's (ZeRO-3 gathers them, and reduces their gradients after a
// backward stage; a replicated model holds them all along).
type stageFunc func(units []int, backward bool, fn func() error) error

// boundStages is the stageFunc of a model that holds all its weights.
func boundStages(_ []int, _ bool, fn func() error) error { return fn() }

// stagedLoss is one part's loss and backward pass (as forwardLoss's) by
// activation checkpointing, on g's stages, the units of stage i being
// {i} (0 the embedding, 1 + li block li) and heads for the head.
func stagedLoss(g *model.GPT, rows [][]int32, dropped []bool, block int, lossOf lossFunc, stage stageFunc, heads []int) (workerLoss, error) {
	var res workerLoss
	inp, tgt, _ := batchTensors(rows, block, g.Device())
	defer inp.MustDrop()
	defer tgt.MustDrop()
	dt, err := boolTensor(dropped, []int64{int64(len(rows)), int64(block)}, g.Device())
	if err != nil {
		return res, err
	}
	defer dt.MustDrop()
	pass, err := g.NewPass(int64(block))
	if err != nil {
		return res, err
	}
	defer pass.Drop()
	nb := pass.Blocks()
	xs := make([]*ts.Tensor, nb+1) // xs[i]: block i's input; xs[nb] the head's
	defer func() {
		for _, x := range xs {
			if x != nil {
				x.MustDrop()
			}
		}
	}()
	if err := stage([]int{0}, false, func() error {
		torchx.NoGrad(func() { xs[0] = pass.Embed(inp) })
		return nil
	}); err != nil {
		return res, err
	}
	for li := 0; li < nb; li++ {
		if err := stage([]int{1 + li}, false, func() error {
			torchx.NoGrad(func() { xs[li+1] = pass.Block(li, xs[li]) })
			return nil
		}); err != nil {
			return res, err
		}
	}
	var dx *ts.Tensor // the loss's gradient at the current stage's output
	defer func() {
		if dx != nil {
			dx.MustDrop()
		}
	}()
	// input runs fn on a leaf copy of x that requires grad and returns its gradient.
	input := func(x *ts.Tensor, fn func(x *ts.Tensor) error) (*ts.Tensor, error) {
		leaf := x.MustDetach(false).MustSetRequiresGrad(true, true)
		defer leaf.MustDrop()
		if err := fn(leaf); err != nil {
			return nil, err
		}
		return leaf.MustGrad(false), nil
	}
	if err := stage(heads, true, func() error {
		var err error
		dx, err = input(xs[nb], func(x *ts.Tensor) error {
			logits := pass.Head(x)
			defer logits.MustDrop()
			res = lossOf(logits, tgt, dt, countTargets(rows, dropped, block))
			return res.err
		})
		return err
	}); err != nil {
		return res, err
	}
	// backFrom runs the backward pass of y from the loss's gradient at y:
	// nothing where y needs none (LoRA's frozen embedding).
	backFrom := func(y *ts.Tensor) error {
		defer y.MustDrop()
		if !y.MustRequiresGrad() {
			return nil
		}
		s := y.MustMul(dx, false).MustSum(gotch.Float, true)
		defer s.MustDrop()
		if err := s.Backward(); err != nil {
			return fmt.Errorf("backward: %w", err)
		}
		return nil
	}
	for li := nb - 1; li >= 0; li-- {
		if err := stage([]int{1 + li}, true, func() error {
			grad, err := input(xs[li], func(x *ts.Tensor) error { return backFrom(pass.Block(li, x)) })
			if err != nil {
				return err
			}
			dx.MustDrop()
			dx = grad
			return nil
		}); err != nil {
			return res, err
		}
	}
	err = stage([]int{0}, true, func() error { return backFrom(pass.Embed(inp)) })
	return res, err
}
