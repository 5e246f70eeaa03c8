package extract

import (
	"context"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"
)

// opticksDocs returns n passages of Newton's Opticks of length bytes each,
// tokenized as bytes (vocabulary 256): real text without a tokenizer build.
func opticksDocs(t testing.TB, n, length int) []data.Doc {
	t.Helper()
	raw := data.Opticks()
	text := strings.Join(strings.Fields(string(raw[20000:])), " ")
	var docs []data.Doc
	for i := 0; i < n; i++ {
		s := text[i*5000 : i*5000+length]
		ids := make([]int32, len(s))
		for j := range s {
			ids[j] = int32(s[j])
		}
		docs = append(docs, data.Doc{ID: int64(i), Title: "opticks-" + string(rune('a'+i)), Text: s, IDs: ids, Split: "target", Repetitions: 1})
	}
	return docs
}

func newModel(t testing.TB, cfg model.Config) *model.GPT {
	t.Helper()
	vs := nn.NewVarStore(gotch.CPU)
	g, err := model.New(vs.Root(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// memorize trains g with Adam on the rows (all of one length) until the
// mean loss falls below target or steps run out; it returns the last loss.
func memorize(t testing.TB, g *model.GPT, rows [][]int32, steps int, target float64) float64 {
	t.Helper()
	// Grad mode is per OS thread in libtorch: stay on one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b, n := len(rows), len(rows[0])-1
	in := make([]int64, 0, b*n)
	tg := make([]int64, 0, b*n)
	for _, r := range rows {
		for j := 0; j < n; j++ {
			in = append(in, int64(r[j]))
			tg = append(tg, int64(r[j+1]))
		}
	}
	inT := ts.MustOfSlice(in).MustView([]int64{int64(b), int64(n)}, true)
	tgT := ts.MustOfSlice(tg)
	params := g.Params()
	var m, v []*ts.Tensor
	for _, p := range params {
		m = append(m, p.Tensor.MustZerosLike(false))
		v = append(v, p.Tensor.MustZerosLike(false))
	}
	const lr, b1, b2, eps = 3e-3, 0.9, 0.99, 1e-8
	last := math.Inf(1)
	for step := 1; step <= steps && last > target; step++ {
		logits := g.Forward(inT)
		flat := logits.MustView([]int64{-1, int64(g.Config().Vocab)}, true)
		w := ts.NewTensor()
		l, err := flat.CrossEntropyLoss(tgT, w, ts.ReductionMean, -100, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		l.MustBackward()
		last = l.Float64Values()[0]
		ts.NoGrad(func() {
			for i, p := range params {
				gr := p.Tensor.MustGrad(false)
				m[i].MustLerp_(gr, ts.FloatScalar(1-b1))
				g2 := gr.MustMul(gr, false)
				v[i].MustLerp_(g2, ts.FloatScalar(1-b2))
				den := v[i].MustDivScalar(ts.FloatScalar(1-math.Pow(b2, float64(step))), false).MustSqrt(true).MustAddScalar(ts.FloatScalar(eps), true)
				upd := m[i].MustDiv(den, false).MustMulScalar(ts.FloatScalar(-lr/(1-math.Pow(b1, float64(step)))), true)
				p.Tensor.MustAdd_(upd)
				for _, x := range []*ts.Tensor{g2, den, upd} {
					x.MustDrop()
				}
				gr.MustZero_()
				gr.MustDrop()
			}
		})
		for _, x := range []*ts.Tensor{flat, w, l} {
			x.MustDrop()
		}
		torchx.Collect()
	}
	return last
}

// generateAll is decodeAll's exact best guess per attacked prompt (nil for
// prompts not attacked): what an attack writes as generated_ids.
func generateAll(ctx context.Context, g *model.GPT, cfg Config, prompts []Prompt, useCache bool) ([][]int32, error) {
	gs, _, err := decodeAll(ctx, g, cfg, prompts, useCache, nil)
	if err != nil {
		return nil, err
	}
	return topIDs(gs), nil
}
