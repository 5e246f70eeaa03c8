package train

// DP-SGD's two primitives (Abadi et al. 2016, arXiv 1607.00133, as Opacus
// runs it): Poisson sampling of a step's rows, and the clipped, noised sum
// of their per-row gradients. They are called by the training loop's DP
// strategy; this file does not touch the optimizer or the step.

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
)

// dpStream names the random streams DP-SGD draws from, so that the rows a
// step samples and the noise it adds are independent and each a function
// of (seed, step) alone: a resumed run draws what the uninterrupted run
// would have drawn, with no generator state in the checkpoint.
const (
	dpStreamSample uint64 = 0x6470_7361_6d70 // "dpsamp"
	dpStreamNoise  uint64 = 0x6470_6e6f_6973 // "dpnois"
)

// stepRNG is the generator of one step's draws of one stream.
func stepRNG(seed int64, step int64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed)^stream, uint64(step)))
}

// PoissonSample is the rows of a dataset of n that step draws with rate q:
// each row independently with probability q (what the RDP accountant of
// the sampled Gaussian mechanism assumes), in increasing order. The batch
// size is random (mean q·n) and may be 0. The gaps between drawn rows are
// geometric, so the cost is O(q·n), not O(n). Deterministic in (seed,
// step).
func PoissonSample(n int64, q float64, seed, step int64) ([]int64, error) {
	if n < 0 || !(q > 0 && q <= 1) {
		return nil, fmt.Errorf("poisson sample of %d rows at rate %v: want n >= 0 and q in (0, 1]", n, q)
	}
	if q == 1 {
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(i)
		}
		return out, nil
	}
	rng := stepRNG(seed, step, dpStreamSample)
	out := make([]int64, 0, int(math.Min(float64(n), q*float64(n)*1.2+16)))
	l1q := math.Log1p(-q)
	// The number of rows skipped before the next draw is Geometric(q):
	// floor(log U / log(1−q)) with U uniform in (0, 1].
	for i := int64(-1); ; {
		u := 1 - rng.Float64() // (0, 1]
		skip := math.Floor(math.Log(u) / l1q)
		if skip >= float64(n) { // also guards the int conversion
			break
		}
		i += int64(skip) + 1
		if i >= n {
			break
		}
		out = append(out, i)
	}
	return out, nil
}

// RowModel is what DP-SGD's per-row passes run: the logits of a batch of
// token ids for the loss (ForwardForLoss), on a device. A *model.GPT is
// one, and so is a LoRA run's *model.LoRA, whose forward passes adapt the
// weights and whose backward passes reach its adapters alone (the base is
// frozen).
type RowModel interface {
	ForwardForLoss(ids *ts.Tensor) *ts.Tensor
	Device() gotch.Device
}

// DPRow is one training row of a DP-SGD step: block+1 token ids and the
// goldfish mask of its block targets (true: dropped).
type DPRow struct {
	IDs     []int32
	Dropped []bool
}

// DPStats describes one clipped sum, for the step's metrics.
type DPStats struct {
	// Rows is the number of rows summed; Clipped how many had a gradient
	// norm above the clipping norm.
	Rows, Clipped int
	// MeanNorm is the mean of the per-row gradient norms before clipping.
	MeanNorm float64
	// sums are the rows' loss statistics (kept: the CE summed over kept
	// targets), for the step's metrics.
	sums lossSums
}

// ClippedNoisedSum is DP-SGD's gradient for one logical batch:
//
//	Σ_i clip(∇θ L_i, C) + N(0, σ²C²·I),   clip(g, C) = g · min(1, C/(‖g‖₂ + 1e-6))
//
// over rows (Opacus's clipping factor, the 1e-6 included), where L_i is
// row i's goldfish loss: its cross-entropy averaged over its kept targets
// (a row with none contributes nothing). The per-row gradients come from
// micro-batches of one row, a forward and backward pass each (gotch has
// no vmap). clip = +Inf clips nothing (the factor is exactly 1); sigma = 0
// adds no noise, and then the sum is the gradient that backward
// accumulates over the same rows one at a time (to the last bits libtorch's
// CPU backward itself varies by from pass to pass). The noise is drawn in Go from (seed, step), so
// it is the same on every device and after a resume.
//
// It returns one tensor per parameter (same shape, float32, on the
// parameters' device), owned by the caller, who divides by the expected
// batch size (q·N, as Opacus does under Poisson sampling) and writes it
// into .grad; params' own gradients are left zeroed. params are those that
// train (all of them, or a LoRA model's adapters), and g the model whose
// forward pass reaches them (a *model.GPT, or a *model.LoRA).
func ClippedNoisedSum(g RowModel, params []model.Param, rows []DPRow, block int, clip, sigma float64, seed, step int64) ([]*ts.Tensor, DPStats, error) {
	var st DPStats
	if !(clip > 0) || !(sigma >= 0) || math.IsInf(sigma, 0) {
		return nil, st, fmt.Errorf("DP-SGD: clipping norm %v and noise multiplier %v: want C > 0 and σ >= 0 finite", clip, sigma)
	}
	dev := g.Device()
	sum := make([]*ts.Tensor, len(params))
	for i, p := range params {
		sum[i] = p.Tensor.MustZerosLike(false).MustDetach(true)
	}
	fail := func(err error) ([]*ts.Tensor, DPStats, error) {
		for _, s := range sum {
			s.MustDrop()
		}
		return nil, st, err
	}
	for r, row := range rows {
		if len(row.IDs) != block+1 || len(row.Dropped) != block {
			return fail(fmt.Errorf("DP-SGD row %d: %d ids and %d mask entries, want %d and %d", r, len(row.IDs), len(row.Dropped), block+1, block))
		}
		zeroGrads(params)
		ls, err := rowBackward(g, row, block)
		if err != nil {
			return fail(fmt.Errorf("DP-SGD row %d: %w", r, err))
		}
		st.sums.add(ls.sums())
		if ls.kept == 0 {
			continue // a row whose targets are all dropped or padding
		}
		gs, err := grads(params)
		if err != nil {
			return fail(fmt.Errorf("DP-SGD row %d: %w", r, err))
		}
		norm := gradNorm(gs)
		factor := math.Min(1, clip/(norm+1e-6))
		st.Rows++
		st.MeanNorm += norm
		if factor < 1 {
			st.Clipped++
		}
		torchx.NoGrad(func() {
			for i, gr := range gs {
				if factor == 1 {
					torchx.Add_(sum[i], gr)
				} else {
					scaled := gr.MustMulScalar(ts.FloatScalar(factor), false)
					torchx.Add_(sum[i], scaled)
					scaled.MustDrop()
				}
				gr.MustDrop()
			}
		})
	}
	zeroGrads(params)
	if st.Rows > 0 {
		st.MeanNorm /= float64(st.Rows)
	}
	if sigma > 0 {
		if err := addNoise(sum, sigma*clip, stepRNG(seed, step, dpStreamNoise), dev); err != nil {
			return fail(err)
		}
	}
	return sum, st, nil
}

// rowBackward runs the forward and backward pass of one row's goldfish
// loss (the mean cross-entropy over its kept targets), accumulating into
// the parameters' gradients, and returns its statistics (kept mean 0 when
// it kept no target, and then no backward pass).
func rowBackward(g RowModel, row DPRow, block int) (partStats, error) {
	res := rowsLoss(g, [][]int32{row.IDs}, row.Dropped, block, func(logits, tgt, dt *ts.Tensor, n targetCounts) workerLoss {
		return termsBackward(logits, tgt, dt, n, func(kept *ts.Tensor) error {
			if n.kept == 0 {
				return nil // nothing kept: no gradient, not a zero one
			}
			return kept.Backward()
		})
	})
	if res.stats != nil {
		defer res.stats.MustDrop()
	}
	if res.err != nil {
		return partStats{}, res.err
	}
	return res.partStats(res.stats.Float64Values()), nil
}

// gradNorm is the global L2 norm of gs, summed in float64.
func gradNorm(gs []*ts.Tensor) float64 {
	var tot float64
	torchx.NoGrad(func() {
		for _, g := range gs {
			s := g.MustSquare(false).MustSum(gotch.Double, true)
			tot += s.Float64Values()[0]
			s.MustDrop()
		}
	})
	return math.Sqrt(tot)
}

// addNoise adds N(0, std²) to every element of ts, drawn from rng in
// parameter order.
func addNoise(sum []*ts.Tensor, std float64, rng *rand.Rand, dev gotch.Device) error {
	for _, s := range sum {
		n := s.Numel()
		vals := make([]float32, n)
		for j := range vals {
			vals[j] = float32(std * rng.NormFloat64())
		}
		t, err := torchx.TensorOf(vals, s.MustSize())
		if err != nil {
			return fmt.Errorf("DP-SGD noise: %w", err)
		}
		t = toDevice(t, dev)
		torchx.NoGrad(func() { torchx.Add_(s, t) })
		t.MustDrop()
	}
	return nil
}
