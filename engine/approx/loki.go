package approx

import (
	"fmt"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch/ts"
)

// LokiBasis is Loki's (Singhania et al. 2024) principal basis of each
// layer's and KV head's post-rotary keys.
type LokiBasis struct {
	Layers  int `json:"layers"`
	KVHeads int `json:"kv_heads"`
	HeadDim int `json:"head_dim"`
	// Docs is the number of calibration windows, Keys the keys seen per head.
	Docs int `json:"docs"`
	Keys int `json:"keys"`
	// Vectors holds, per layer then KV head, a HeadDim × HeadDim row-major
	// matrix whose column j is the j-th principal direction (eigenvalues
	// descending). The directions are those of the uncentered second
	// moment Σ k kᵀ, the subspace that best keeps dot products with keys.
	Vectors [][][]float32 `json:"vectors"`
	// Explained is, per layer and KV head, the fraction of Σ‖k‖² in the
	// first j+1 directions.
	Explained [][][]float64 `json:"explained"`
}

// CalibrateLoki runs g over the windows (each at most the context) and
// returns the principal basis of the keys its cache stores.
func CalibrateLoki(g *model.GPT, windows [][]int32) (*LokiBasis, error) {
	c := g.Config()
	hd := c.HeadDim
	sums := make([][][]float64, c.Layers) // [layer][kvhead] hd×hd
	for l := range sums {
		sums[l] = make([][]float64, c.KVHeads)
		for h := range sums[l] {
			sums[l][h] = make([]float64, hd*hd)
		}
	}
	keys := 0
	for wi, w := range windows {
		if len(w) == 0 || len(w) > c.Context {
			return nil, fmt.Errorf("loki calibration window %d has %d tokens: want 1 to the context %d", wi, len(w), c.Context)
		}
		flat := make([]int64, len(w))
		for i, id := range w {
			if id < 0 || int(id) >= c.Vocab {
				return nil, fmt.Errorf("loki calibration window %d: token %d outside the vocabulary of %d", wi, id, c.Vocab)
			}
			flat[i] = int64(id)
		}
		cache, err := engine.NewCache(g, 1, len(w))
		if err != nil {
			return nil, err
		}
		ids, err := model.TensorOf(flat, []int64{1, int64(len(w))}, g.Device())
		if err != nil {
			cache.Drop()
			return nil, err
		}
		torchx.NoGrad(func() { cache.Forward(ids).MustDrop() })
		ids.MustDrop()
		for l := 0; l < c.Layers; l++ {
			k := cache.Keys(l).MustReshape([]int64{int64(c.KVHeads * len(w)), int64(hd)}, true)
			rows := model.RowsOf(k, c.KVHeads*len(w))
			k.MustDrop()
			for h := 0; h < c.KVHeads; h++ {
				s := sums[l][h]
				for _, row := range rows[h*len(w) : (h+1)*len(w)] {
					for i, x := range row {
						for j := i; j < hd; j++ {
							s[i*hd+j] += float64(x) * float64(row[j])
						}
					}
				}
			}
		}
		cache.Drop()
		keys += len(w)
		torchx.Collect()
	}
	b := &LokiBasis{Layers: c.Layers, KVHeads: c.KVHeads, HeadDim: hd, Docs: len(windows), Keys: keys}
	for l := range sums {
		var vl [][]float32
		var el [][]float64
		for h := range sums[l] {
			v, e, err := principal(sums[l][h], hd)
			if err != nil {
				return nil, fmt.Errorf("loki basis of layer %d head %d: %w", l, h, err)
			}
			vl, el = append(vl, v), append(el, e)
		}
		b.Vectors, b.Explained = append(b.Vectors, vl), append(b.Explained, el)
	}
	return b, nil
}

// principal eigen-decomposes the symmetric matrix whose upper triangle
// upper holds, columns ordered by descending eigenvalue, and returns them
// with the cumulative explained fractions.
func principal(upper []float64, n int) ([]float32, []float64, error) {
	sym := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			sym.SetSym(i, j, upper[i*n+j])
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(sym, true) {
		return nil, nil, fmt.Errorf("eigendecomposition did not converge")
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return vals[order[a]] > vals[order[b]] })
	out := make([]float32, n*n)
	cum := make([]float64, n)
	var total, run float64
	for _, v := range vals {
		total += max(v, 0)
	}
	for j, o := range order {
		for i := 0; i < n; i++ {
			out[i*n+j] = float32(vecs.At(i, o))
		}
		run += max(vals[o], 0)
		if total > 0 {
			cum[j] = run / total
		}
	}
	return out, cum, nil
}

// lokiLayer is layer li's projection onto the first LokiRank directions,
// [Heads, hd, rank], each query head using its KV head's basis.
type lokiLayer struct{ proj *ts.Tensor }

func (st *state) lokiProjection(li int) *ts.Tensor {
	if st.loki == nil {
		st.loki = make([]lokiLayer, st.cfg.Layers)
	}
	if p := st.loki[li].proj; p != nil {
		return p
	}
	c, r := st.cfg, st.a.LokiRank
	hd := c.HeadDim
	vals := make([]float32, 0, c.Heads*hd*r)
	for h := 0; h < c.Heads; h++ {
		m := st.a.Loki.Vectors[li][h/(c.Heads/c.KVHeads)]
		for i := 0; i < hd; i++ {
			vals = append(vals, m[i*hd:i*hd+r]...)
		}
	}
	p, err := model.TensorOf(vals, []int64{int64(c.Heads), int64(hd), int64(r)}, st.device)
	if err != nil {
		panic("model: loki projection: " + err.Error())
	}
	st.loki[li].proj = p
	return p
}

// Drop frees the projections.
func (st *state) Drop() {
	for _, l := range st.loki {
		if l.proj != nil {
			l.proj.MustDrop()
		}
	}
	st.loki = nil
}
