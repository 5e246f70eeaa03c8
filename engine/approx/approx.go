// Package approx is memo's inference approximations (issue 17): KV-cache
// quantization (QuantSpec's hierarchical 8/4-bit layout), Loki and
// SiftAttention sparse attention, and QuantSpec self-speculative
// decoding. They reach decoding through one hook, engine.Approximation,
// which state implements: exact decoding (package model) reads without
// them. A new attention approximation is a case of Attend (attn.go) and
// its settings in Approx.
package approx

import (
	"fmt"
	"math"

	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
)

// Attention methods of Approx.
const (
	AttnExact = "exact"
	AttnLoki  = "loki"
	AttnSift  = "sift"
)

// Approx selects the inference approximations a Stepper decodes under
// (issue 17). The zero value, and KVBits 16 with Attention "exact", is
// memo's exact decoding, bit for bit.
//
// The approximations are simulated in fp32: a quantized cache stores the
// dequantized values, and sparse attention computes every score and then
// masks the ones it would not have read. The tokens decoded are those the
// real method would decode; KVBytes counts what it would read.
type Approx struct {
	// KVBits is 16 (exact fp32; 0 means the same), 8 or 4: the keys and
	// values entering the cache are quantized group-wise (see quantize).
	KVBits int
	// Attention is "exact" ("" means the same), "loki" or "sift"; both
	// apply to decode steps only, the prompt pass is exact, as in both
	// papers.
	Attention string
	// Loki is the PCA basis of post-rotary keys (attention "loki").
	Loki *LokiBasis
	// LokiRank is how many principal dimensions score the keys.
	LokiRank int
	// LokiTopK is the fraction (<= 1) or count (> 1) of cached tokens
	// attended at each decode step.
	LokiTopK float64
	// SiftQuantile is tau: the quantile of attention probabilities whose
	// power law over decode steps gives the threshold.
	SiftQuantile float64
	// SiftWarmup is the number of first decode steps attended exactly,
	// whose tau-quantiles the power law is fitted to (>= 2).
	SiftWarmup int
	// SiftThreshold, when not nil, replaces the fitted threshold at every
	// step (a check: −Inf keeps every token).
	SiftThreshold *float64
}

// Enabled reports whether a is not exact decoding.
func (a Approx) Enabled() bool {
	return (a.KVBits != 0 && a.KVBits != 16) || (a.Attention != "" && a.Attention != AttnExact)
}

// Check reports a setting the model cannot decode with.
func (a Approx) Check(c model.Config) error {
	switch a.KVBits {
	case 0, 16, 8, 4:
	default:
		return fmt.Errorf("kv bits %d: want 16, 8 or 4", a.KVBits)
	}
	if a.Attention != "" && a.Attention != AttnExact && (c.AttnSoftcap > 0 || c.SlidingWindow > 0) {
		return fmt.Errorf("attention %q: the sparse methods are written for plain causal attention; this %s model has soft-capped or sliding-window attention", a.Attention, c.Arch)
	}
	switch a.Attention {
	case "", AttnExact:
	case AttnLoki:
		if a.Loki == nil {
			return fmt.Errorf("loki attention without a key basis")
		}
		if a.Loki.Layers != c.Layers || a.Loki.KVHeads != c.KVHeads || a.Loki.HeadDim != c.HeadDim {
			return fmt.Errorf("loki basis of %d layers × %d kv heads × %d dims does not fit the model's %d × %d × %d",
				a.Loki.Layers, a.Loki.KVHeads, a.Loki.HeadDim, c.Layers, c.KVHeads, c.HeadDim)
		}
		if a.LokiRank < 1 || a.LokiRank > c.HeadDim {
			return fmt.Errorf("loki rank %d: want 1 to the head dimension %d", a.LokiRank, c.HeadDim)
		}
		if !(a.LokiTopK > 0) || math.IsInf(a.LokiTopK, 1) {
			return fmt.Errorf("loki top-k %v: want a fraction in (0, 1] or a count > 1", a.LokiTopK)
		}
	case AttnSift:
		if !(a.SiftQuantile > 0 && a.SiftQuantile < 1) {
			return fmt.Errorf("sift quantile %v: want 0 < tau < 1", a.SiftQuantile)
		}
		if a.SiftWarmup < 2 && a.SiftThreshold == nil {
			return fmt.Errorf("sift warm-up %d steps: want >= 2 to fit a power law", a.SiftWarmup)
		}
	default:
		return fmt.Errorf("attention %q: want exact, loki or sift", a.Attention)
	}
	return nil
}

// Stats are one row's measurements over its decode steps.
type Stats struct {
	// Steps is the number of decode steps measured (the prompt pass is not one).
	Steps int
	// MassKept is the mean, over steps, layers, heads and queries, of the
	// exact attention probability on the tokens the method attended (1
	// for exact attention and quantized caches).
	MassKept float64
	// KVBytes is the mean number of key and value bytes read per decoded
	// token, over all layers (see kvBytes).
	KVBytes float64
}

// state is a cache's approximation (an engine.Approximation): settings,
// per-row sums for Stats, and SiftAttention's warm-up quantiles.
type state struct {
	a      Approx
	cfg    model.Config
	device gotch.Device
	steps  []int
	mass   []float64 // summed per-step means
	bytes  []float64 // summed per-step totals
	// stepMass and stepBytes gather the current step over layers.
	stepMass, stepBytes []float64
	decodes             int // decode calls so far
	// logQ[row][layer][head] are the log tau-quantiles of the warm-up steps.
	logQ [][][][]float64
	loki []lokiLayer // per layer, made on first use
	// windows are each layer's sliding window (0: full), which bounds the
	// keys a decode step reads there.
	windows []int
}

func newState(a Approx, g *model.GPT, batch int) *state {
	cfg := g.Config()
	st := &state{a: a, cfg: cfg, device: g.Device(), steps: make([]int, batch), mass: make([]float64, batch),
		bytes: make([]float64, batch), stepMass: make([]float64, batch), stepBytes: make([]float64, batch),
		windows: cfg.Windows()}
	if a.Attention == AttnSift {
		st.logQ = make([][][][]float64, batch)
		for r := range st.logQ {
			st.logQ[r] = make([][][]float64, cfg.Layers)
			for l := range st.logQ[r] {
				st.logQ[r][l] = make([][]float64, cfg.Heads)
			}
		}
	}
	return st
}

// sparse reports whether decode steps use Loki or Sift.
func (st *state) sparse() bool {
	return st.a.Attention == AttnLoki || st.a.Attention == AttnSift
}

// elemBytes is the storage of one cached key or value element and the
// per-group overhead: fp32, or the quantized code plus an fp16 scale and
// an fp16 minimum per group.
func (st *state) elemBytes() (perElem, perGroup float64, group int) {
	bits := st.a.KVBits
	if bits == 0 || bits == 16 {
		return 4, 0, 1
	}
	return float64(bits) / 8, 4, quantGroup(st.cfg.HeadDim)
}

// kvBytes is the bytes read for one query of one layer attending valid
// cached tokens: keys scored in scoreDims dimensions for every token (per
// query head, shared by KVHeads/Heads of them), then full keys and values
// of the kept tokens. Exact attention reads full keys and values of every
// token once per KV head.
func (st *state) kvBytes(valid int, scoreDims int, kept float64) float64 {
	pe, pg, g := st.elemBytes()
	c := st.cfg
	row := func(dims int) float64 { return float64(dims)*pe + float64((dims+g-1)/g)*pg }
	if !st.sparse() {
		return float64(c.KVHeads) * float64(valid) * 2 * row(c.HeadDim)
	}
	share := float64(c.KVHeads) / float64(c.Heads)
	perHead := float64(valid)*row(scoreDims) + kept*2*row(c.HeadDim)
	if st.a.Attention == AttnSift { // the scores used the full keys already read
		perHead = float64(valid)*row(c.HeadDim) + kept*row(c.HeadDim)
	}
	return share * float64(c.Heads) * perHead
}

// beginStep starts a decode step's measurements (attend, at its first
// layer).
func (st *state) beginStep() {
	st.decodes++
	for r := range st.stepMass {
		st.stepMass[r], st.stepBytes[r] = 0, 0
	}
}

// addLayer records one layer's measurements of row r at a decode step.
func (st *state) addLayer(r int, mass, bytes float64) {
	st.stepMass[r] += mass / float64(st.cfg.Layers)
	st.stepBytes[r] += bytes
}

// endStep folds the step into the sums (attend, after its last layer).
func (st *state) endStep() {
	for r := range st.steps {
		st.steps[r]++
		st.mass[r] += st.stepMass[r]
		st.bytes[r] += st.stepBytes[r]
	}
}

// Reorder follows Cache.Reorder.
func (st *state) Reorder(rows []int) {
	pick := func(x []float64) []float64 {
		out := make([]float64, len(rows))
		for i, r := range rows {
			out[i] = x[r]
		}
		return out
	}
	steps := make([]int, len(rows))
	for i, r := range rows {
		steps[i] = st.steps[r]
	}
	st.steps, st.mass, st.bytes = steps, pick(st.mass), pick(st.bytes)
	// The step's sums follow the rows too: beam search and samples make
	// more rows than the prompt pass had.
	st.stepMass, st.stepBytes = pick(st.stepMass), pick(st.stepBytes)
	if st.logQ != nil {
		q := make([][][][]float64, len(rows))
		for i, r := range rows {
			q[i] = cloneQ(st.logQ[r])
		}
		st.logQ = q
	}
}

func cloneQ(x [][][]float64) [][][]float64 {
	out := make([][][]float64, len(x))
	for l := range x {
		out[l] = make([][]float64, len(x[l]))
		for h := range x[l] {
			out[l][h] = append([]float64(nil), x[l][h]...)
		}
	}
	return out
}

// stats returns each row's Stats.
func (st *state) stats() []Stats {
	out := make([]Stats, len(st.steps))
	for r, n := range st.steps {
		out[r].Steps = n
		if n > 0 {
			out[r].MassKept = st.mass[r] / float64(n)
			out[r].KVBytes = st.bytes[r] / float64(n)
		}
	}
	return out
}
