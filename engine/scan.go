package engine

import (
	"fmt"
	"math"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
)

// GreedyMatch decides, for each window w = prefix + suffix (prefixes[i]
// the prefix length, at least 1), what greedy decoding of len(w) −
// prefix tokens after the prefix would reproduce of the suffix, from one
// teacher-forced forward pass instead of a decode loop: it returns the
// number of leading suffix tokens greedy decoding reproduces. Greedy's
// token t equals suffix[t] for every t < m exactly when, at each position
// prefix−1+t, the argmax after the true prefix and suffix[:t] is
// suffix[t] (its input up to there is then the true text), so the
// matched length m is the first t where the argmax is not the true token,
// and the whole suffix is reproduced when m = len(suffix).
//
// The argmax is taken on the device (torch.argmax: the first index among
// equal maxima, Argmax's tie rule), so only b × t ids come back to the
// host, not the logits. A NaN logit is an error: torch.argmax ranks NaN
// above every number and Argmax below, so the two could disagree.
func GreedyMatch(g *model.GPT, windows [][]int32, prefixes []int) ([]int, error) {
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
	out := make([]int, len(windows))
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
	var best []int64
	var top []float32
	torchx.NoGrad(func() {
		logits := g.ForwardWith(ids, uncached(g)) // [b, t, V]
		am := logits.MustArgmax([]int64{-1}, true, false)
		vals := logits.MustGather(2, am, false, true).MustTotype(gotch.Float, true)
		top = model.RowsOf(vals.MustView([]int64{1, -1}, true), 1)[0]
		if am.MustDevice().IsCuda() {
			am = am.MustTo(gotch.CPU, true)
		}
		best = am.MustView([]int64{-1}, true).Int64Values()
	})
	for i, w := range windows {
		p := prefixes[i]
		m := 0
		for ; p+m < len(w); m++ {
			pos := i*t + p - 1 + m
			if math.IsNaN(float64(top[pos])) {
				return nil, fmt.Errorf("greedy match: window %d: NaN logit at position %d", i, p-1+m)
			}
			if best[pos] != int64(w[p+m]) {
				break
			}
		}
		out[i] = m
	}
	return out, nil
}
