package model

import (
	"slices"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch/ts"
)

// The stages in a row are Forward, bit for bit, and each stage reads only
// the parameters whose Layer is its own (the head also the embedding, when
// tied): a stage run with every other parameter emptied gives the same
// output. (How train groups them, train's stageUnits, is tested there.)
func TestPassStagesAreForward(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"llama tied", Config{Preset: "nano", Vocab: 97, Seed: 1}},
		{"llama untied", Config{Preset: "nano", Vocab: 97, Seed: 2, Untied: true}},
		{"gpt2 learned positions", Config{Arch: "gpt2", Preset: "nano", Vocab: 97, Seed: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newTest(t, tc.cfg)
			for _, p := range g.Params() {
				if p.Layer < AfterBlocks || p.Layer >= g.Config().Layers {
					t.Fatalf("%s: layer %d of %d", p.Name, p.Layer, g.Config().Layers)
				}
			}
			ids := ts.MustOfSlice([]int64{1, 5, 9, 2, 7, 7, 3, 0, 4, 8, 6, 1}).MustView([]int64{2, 6}, true)
			defer ids.MustDrop()
			var want *ts.Tensor
			torchx.NoGrad(func() { want = g.Forward(ids) })
			defer want.MustDrop()

			// Keep every weight, then empty all but the layers a stage reads.
			saved := make([]*ts.Tensor, len(g.Params()))
			all := make([]*ts.Tensor, len(g.Params()))
			for i, p := range g.Params() {
				saved[i] = p.Tensor.MustDetach(false).MustMulScalar(ts.FloatScalar(1), true)
				all[i] = p.Tensor
			}
			only := func(layers ...int) {
				t.Helper()
				if err := torchx.ReleaseData(all); err != nil {
					t.Fatal(err)
				}
				var ps, src []*ts.Tensor
				for i, p := range g.Params() {
					if slices.Contains(layers, p.Layer) {
						ps, src = append(ps, all[i]), append(src, saved[i])
					}
				}
				if err := torchx.SetData(ps, src); err != nil {
					t.Fatal(err)
				}
			}
			p, err := g.NewPass(6)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Drop()
			var got *ts.Tensor
			torchx.NoGrad(func() {
				only(BeforeBlocks)
				x := p.Embed(ids)
				for li := 0; li < p.Blocks(); li++ {
					only(li)
					y := p.Block(li, x)
					x.MustDrop()
					x = y
				}
				if tc.cfg.Untied {
					only(AfterBlocks)
				} else {
					only(AfterBlocks, BeforeBlocks)
				}
				got = p.Head(x)
				x.MustDrop()
			})
			defer got.MustDrop()
			if !got.MustEqual(want, false) {
				d := got.MustSub(want, false).MustAbs(true).MustMax(true)
				t.Fatalf("staged logits differ from Forward's by up to %g", d.Float64Values()[0])
			}
			if _, err := g.NewPass(int64(g.Config().Context) + 1); err == nil {
				t.Fatal("a pass longer than the context: want an error")
			}
		})
	}
}

// InitValues streams the very values New puts in each weight, in Params order.
func TestInitValuesAreNew(t *testing.T) {
	for _, cfg := range []Config{
		{Preset: "nano", Vocab: 97, Seed: 5},
		{Arch: "gemma2", Preset: "nano", Vocab: 97, Seed: 6},
		{Arch: "gpt2", Preset: "nano", Vocab: 97, Seed: 7, Untied: true},
	} {
		g := newTest(t, cfg)
		n := 0
		err := InitValues(cfg, func(i int, vals []float32) error {
			want := g.Params()[i].Tensor.MustView([]int64{-1}, false)
			got := ts.MustOfSlice(vals)
			defer got.MustDrop()
			defer want.MustDrop()
			if !got.MustEqual(want, false) {
				t.Errorf("%s %s: streamed values differ from New's", cfg.Arch, g.Params()[i].Name)
			}
			n++
			return nil
		})
		if err != nil || n != len(g.Params()) {
			t.Fatalf("%s: %d weights streamed of %d, err %v", cfg.Arch, n, len(g.Params()), err)
		}
	}
}
