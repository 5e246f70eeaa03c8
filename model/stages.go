package model

// The forward pass one stage at a time, for training that holds only a
// shard of the weights (ZeRO-3, train.shard = "full"): the caller gathers
// the weights a stage reads, runs it, and frees them before the next; it
// runs each stage's backward on its own the same way (recomputing the
// stage from its saved input). A stage is the embedding, one block, or the
// head (final norm and LM head). Forward is these stages in a row. Each
// parameter's stage is its Param.Layer.

import (
	"fmt"

	"github.com/sugarme/gotch/ts"
)

// Where a parameter lies outside the blocks (Param.Layer).
const (
	// BeforeBlocks is the embedding stage's: the token embedding and
	// learned positions. A tied LM head reads the embedding too.
	BeforeBlocks = -1
	// AfterBlocks is the head stage's: the final norm and an untied head.
	AfterBlocks = -2
)

// layerOf is Param.Layer for the weight in slot s.
func layerOf(s slot) int {
	switch {
	case s.layer >= 0:
		return s.layer
	case s.mod == modEmbed || s.mod == modPositions:
		return BeforeBlocks
	}
	return AfterBlocks
}

// Pass is one forward pass over sequences of a fixed length, run a stage at
// a time. Each stage reads only the parameters whose Layer is its own
// (and the head the embedding, when tied), so the others may be empty
// while it runs; how to group and gather them is the caller's (train's
// ZeRO-3).
type Pass struct {
	g  *GPT
	t  int64
	in *inputs
}

// NewPass prepares a pass over positions 0..t-1 of every row; Drop frees it.
func (g *GPT) NewPass(t int64) (*Pass, error) {
	if t < 1 || t > int64(g.cfg.Context) {
		return nil, fmt.Errorf("model: a pass over %d positions: want 1..context %d", t, g.cfg.Context)
	}
	// The learned positions are a weight of unit 0, read in Embed when
	// it is present, not here.
	return &Pass{g: g, t: t, in: g.maskInputs(t)}, nil
}

// Drop frees the pass's masks and rotary rows.
func (p *Pass) Drop() { p.in.drop() }

// Blocks is the number of block stages.
func (p *Pass) Blocks() int { return len(p.g.blocks) }

// Embed is stage 0: ids [B,T] to the first block's input [B,T,d].
func (p *Pass) Embed(ids *ts.Tensor) *ts.Tensor {
	var pos *ts.Tensor
	if pe := p.g.top[modPositions].w; pe != nil {
		pos = pe.MustNarrow(0, 0, p.t, false)
		defer pos.MustDrop()
	}
	return p.g.embed(ids, pos)
}

// Block is block li's stage: its input x [B,T,d] to its output.
func (p *Pass) Block(li int, x *ts.Tensor) *ts.Tensor {
	return settle(p.g.block(li, x, nil, p.in, nil, false))
}

// Head is the last stage: the last block's output [B,T,d] to logits
// [B,T,V] for the training loss, as ForwardForLoss gives them.
func (p *Pass) Head(x *ts.Tensor) *ts.Tensor {
	return p.g.head(x, p.g.Backend(), false, p.g.lossLogits())
}
