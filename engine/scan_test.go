package engine

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
)

// TestGreedyMatchMargins checks GreedyMatch's lengths and margins against
// each window's logits worked through on the host, one window a pass:
// suffixes that are greedy's own continuation (reproduced whole), the same
// with one token changed (reproduced up to it) and random ones, after
// prompts of two lengths (a padded batch).
func TestGreedyMatchMargins(t *testing.T) {
	g := newTest(t, model.Config{Preset: "nano", Vocab: 61, Context: 32, Seed: 5})
	rng := rand.New(rand.NewPCG(3, 4))
	const suffix = 8
	var prompts [][]int32
	for i := 0; i < 6; i++ {
		p := make([]int32, 4+4*(i%2))
		for j := range p {
			p[j] = int32(rng.IntN(61))
		}
		prompts = append(prompts, p)
	}
	gen, err := Generate(g, prompts, suffix, GenOptions{UseCache: true})
	if err != nil {
		t.Fatal(err)
	}
	var windows [][]int32
	var prefixes []int
	for i, p := range prompts {
		whole := append(slices.Clone(p), gen[i]...)
		changed := slices.Clone(whole)
		at := len(p) + 1 + i%(suffix-1)
		changed[at] = (changed[at] + 1) % 61
		random := slices.Clone(p)
		for range suffix {
			random = append(random, int32(rng.IntN(61)))
		}
		windows = append(windows, whole, changed, random)
		prefixes = append(prefixes, len(p), len(p), len(p))
	}
	got, err := GreedyMatch(g, windows, prefixes)
	if err != nil {
		t.Fatal(err)
	}
	var whole, partial int
	for i, w := range windows {
		want := hostMatch(t, g, w, prefixes[i])
		if got[i].Len != want.Len || math.Abs(float64(got[i].Margin-want.Margin)) > 1e-4 {
			t.Errorf("window %d: GreedyMatch %+v, on the host %+v", i, got[i], want)
		}
		switch {
		case want.Len == suffix:
			whole++
		case want.Len > 0:
			partial++
		}
		if !(want.Margin >= 0) || math.IsInf(float64(want.Margin), 0) {
			t.Errorf("window %d: margin %v, want a finite lead", i, want.Margin)
		}
	}
	if whole < 6 || partial < 4 {
		t.Errorf("%d windows reproduced whole, %d in part: the test needs both", whole, partial)
	}
}

// hostMatch is GreedyMatch of one window from its own forward pass, the
// argmax, runner-up and true token's logit read on the host.
func hostMatch(t *testing.T, g *model.GPT, w []int32, prefix int) Match {
	t.Helper()
	in := make([]int64, len(w)-1)
	for j := range in {
		in[j] = int64(w[j])
	}
	x, err := model.TensorOf(in, []int64{1, int64(len(in))}, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]float32
	torchx.NoGrad(func() {
		logits := g.ForwardWith(x, uncached(g))
		rows = model.RowsOf(logits.MustView([]int64{int64(len(in)), -1}, true), len(in))
	})
	x.MustDrop()
	m := Match{Margin: float32(math.Inf(1))}
	for ; prefix+m.Len < len(w); m.Len++ {
		row := rows[prefix-1+m.Len]
		best := Argmax(row)
		desc := slices.Clone(row)
		slices.SortFunc(desc, func(a, b float32) int { return cmp.Compare(b, a) })
		truth := w[prefix+m.Len]
		lead := desc[0] - desc[1]
		if best != truth {
			lead = desc[0] - row[truth]
		}
		m.Margin = min(m.Margin, lead)
		if best != truth {
			break
		}
	}
	return m
}
