package engine

import (
	"errors"
	"fmt"
	"math"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Match is what greedy decoding would reproduce of one window's suffix.
type Match struct {
	// Len is how many leading suffix tokens greedy decoding reproduces.
	Len int
	// Margin is how near the verdict came to flipping, in logits: the
	// least of the argmax's lead over the runner-up at each reproduced
	// position and, where the suffix is not reproduced whole, its lead
	// over the true token at the first position that is not. 0 is a tie.
	// Generation computes the same logits in another order (a KV cache,
	// other kernels), so it can reach another Len only where Margin is
	// within that order's rounding. +Inf for a window without a suffix.
	Margin float32
}

// GreedyMatch decides, for each window w = prefix + suffix (prefixes[i]
// the prefix length, at least 1), what greedy decoding of len(w) −
// prefix tokens after the prefix would reproduce of the suffix, from one
// teacher-forced forward pass instead of a decode loop: it returns the
// number of leading suffix tokens greedy decoding reproduces and how near
// that was to another answer (Match). Greedy's
// token t equals suffix[t] for every t < m exactly when, at each position
// prefix−1+t, the argmax after the true prefix and suffix[:t] is
// suffix[t] (its input up to there is then the true text), so the
// matched length m is the first t where the argmax is not the true token,
// and the whole suffix is reproduced when m = len(suffix).
//
// The argmax is taken on the device (torch.argmax: the first index among
// equal maxima, Argmax's tie rule), and so are the three logits a margin
// needs at each deciding position, so only b × t ids and three values a
// decided position come back to the host, not the logits. A NaN logit is
// an error: torch.argmax ranks NaN above every number and Argmax below,
// so the two could disagree.
func GreedyMatch(g *model.GPT, windows [][]int32, prefixes []int) ([]Match, error) {
	cfg := g.Config()
	vocab := cfg.Vocab
	if len(prefixes) != len(windows) {
		return nil, fmt.Errorf("greedy match: %d prefix lengths for %d windows", len(prefixes), len(windows))
	}
	t := 0
	for i, w := range windows {
		if prefixes[i] < 1 || prefixes[i] > len(w) {
			return nil, fmt.Errorf("greedy match: window %d of %d tokens: prefix of %d outside [1, %d]", i, len(w), prefixes[i], len(w))
		}
		t = max(t, len(w)-1)
		for j, id := range w {
			if id < 0 || int(id) >= vocab {
				return nil, fmt.Errorf("greedy match: window %d token %d = %d: outside the model's vocabulary [0, %d)", i, j, id, vocab)
			}
		}
	}
	out := make([]Match, len(windows))
	for i := range out {
		out[i].Margin = float32(math.Inf(1))
	}
	if t <= 0 || len(windows) == 0 {
		return out, nil // no window has a suffix
	}
	if t > cfg.Context {
		return nil, fmt.Errorf("greedy match: window of %d tokens exceeds the model context %d", t+1, cfg.Context)
	}
	b := len(windows)
	// Right-padded, as the scoring pass: causal attention keeps the
	// padding after a position out of its logits.
	in := make([]int64, b*t)
	for i, w := range windows {
		for j := 0; j < min(len(w)-1, t); j++ {
			in[i*t+j] = int64(w[j])
		}
	}
	ids, err := model.TensorOf(in, []int64{int64(b), int64(t)}, g.Device())
	if err != nil {
		return nil, fmt.Errorf("greedy match: %w", err)
	}
	defer ids.MustDrop()
	// The matched lengths from the argmax alone; then, at the positions
	// that decided them (each reproduced one and the first that is not),
	// the values the margins need: the argmax's logit, the runner-up's
	// and the true token's. Most windows of a scan are decided at their
	// first position, so this reads a few rows of the logits, not all.
	var decided []int64 // flat positions i·t + p − 1 + j
	var vals []float32  // at each: the argmax's, the true token's and the second largest logit
	torchx.NoGrad(func() {
		logits := g.ForwardWith(ids, uncached(g)) // [b, t, V]
		defer logits.MustDrop()
		am := logits.MustArgmax([]int64{-1}, false, false)
		if am.MustDevice().IsCuda() {
			am = am.MustTo(gotch.CPU, true)
		}
		best := am.MustView([]int64{-1}, true).Int64Values()
		var pick []int64 // the argmax and true token at each decided position
		for i, w := range windows {
			p := prefixes[i]
			for ; p+out[i].Len < len(w); out[i].Len++ {
				pos := i*t + p - 1 + out[i].Len
				truth := int64(w[p+out[i].Len])
				decided, pick = append(decided, int64(pos)), append(pick, best[pos], truth)
				if best[pos] != truth {
					break
				}
			}
		}
		n := int64(len(decided))
		if n == 0 {
			return // no window has a suffix
		}
		at, e1 := model.TensorOf(decided, []int64{n}, g.Device())
		which, e2 := model.TensorOf(pick, []int64{n, 2}, g.Device())
		if err = errors.Join(e1, e2); err != nil {
			for _, x := range []*ts.Tensor{at, which} {
				if x != nil {
					x.MustDrop()
				}
			}
			return
		}
		rows := logits.MustReshape([]int64{int64(b * t), -1}, false).MustIndexSelect(0, at, true)
		at.MustDrop()
		two, twoIDs := rows.MustTopk(2, -1, true, true, false)
		twoIDs.MustDrop()
		second := two.MustNarrow(1, 1, 1, true)
		both := rows.MustGather(1, which, false, true)
		which.MustDrop()
		cols := ts.MustCat([]*ts.Tensor{both, second}, 1).MustTotype(gotch.Float, true)
		both.MustDrop()
		second.MustDrop()
		vals = model.RowsOf(cols.MustView([]int64{1, -1}, true), 1)[0]
	})
	if err != nil {
		return nil, fmt.Errorf("greedy match: %w", err)
	}
	k := 0
	for i, w := range windows {
		p := prefixes[i]
		m := &out[i]
		for j := 0; j <= m.Len && p+j < len(w); j, k = j+1, k+1 {
			top, truth, second := vals[3*k], vals[3*k+1], vals[3*k+2]
			if math.IsNaN(float64(top)) {
				return nil, fmt.Errorf("greedy match: window %d: NaN logit at position %d", i, p-1+j)
			}
			if j < m.Len { // the true token led
				m.Margin = min(m.Margin, top-second)
			} else { // it trailed the argmax
				m.Margin = min(m.Margin, top-truth)
			}
		}
	}
	return out, nil
}
