package train

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Micro-batches and ranks combine their loss sums by adding field by field;
// the all-reduce carries them as a vector and must read back the same fields.
func TestLossSums(t *testing.T) {
	a := lossSums{kept: 0.5, allCE: 10, allN: 4, droppedCE: 3, droppedN: 1}
	b := lossSums{kept: 0.25, allCE: 2, allN: 2}
	cases := []struct {
		name string
		in   []lossSums
		want lossSums
	}{
		{"none", nil, lossSums{}},
		{"one", []lossSums{a}, a},
		{"two", []lossSums{a, b}, lossSums{kept: 0.75, allCE: 12, allN: 6, droppedCE: 3, droppedN: 1}},
	}
	for _, c := range cases {
		var s lossSums
		for _, x := range c.in {
			s.add(x)
		}
		if s != c.want {
			t.Errorf("%s: sum %+v, want %+v", c.name, s, c.want)
		}
		if got := lossSumsOf(s.vector()); got != s {
			t.Errorf("%s: lossSumsOf(vector()) = %+v, want %+v", c.name, got, s)
		}
	}
	if r := ratio(b.droppedCE, b.droppedN); !math.IsNaN(r) {
		t.Errorf("ratio over no dropped targets = %v, want NaN", r)
	}
}

// randomPart is a part of block-token rows with padding and a goldfish
// mask drawn from r, its targets and mask as tensors, and float32 logits
// over v that require gradients (NaN everywhere with poison).
func randomPart(r *rand.Rand, rows, block, v int, poison bool) (ids [][]int32, dropped []bool, logits, tgt, dt *ts.Tensor) {
	ids = make([][]int32, rows)
	for i := range ids {
		ids[i] = make([]int32, block+1)
		for j := range ids[i] {
			switch {
			case r.IntN(6) == 0:
				ids[i][j] = PadID
			default:
				ids[i][j] = int32(r.IntN(v))
			}
		}
	}
	dropped = make([]bool, rows*block)
	for i := range dropped {
		dropped[i] = r.IntN(3) == 0
	}
	vals := make([]float32, rows*block*v)
	for i := range vals {
		vals[i] = float32(r.NormFloat64())
		if poison {
			vals[i] = float32(math.NaN())
		}
	}
	inp, tgt, _ := batchTensors(ids, block, gotch.CPU)
	inp.MustDrop()
	dt, err := boolTensor(dropped, []int64{int64(rows), int64(block)}, gotch.CPU)
	if err != nil {
		panic(err)
	}
	logits = ts.MustOfSlice(vals).MustView([]int64{int64(rows), int64(block), int64(v)}, true).MustSetRequiresGrad(true, true)
	return ids, dropped, logits, tgt, dt
}

// The host's target counts are the loss masks' (which MaskedCrossEntropy
// counts on the device), and the loss given them is the same, bit for bit.
func TestCountTargetsMatchesLossMasks(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 1))
	for _, rows := range []int{1, 3, 8} {
		ids, dropped, logits, tgt, dt := randomPart(r, rows, 12, 17, false)
		n := countTargets(ids, dropped, 12)
		ls, err := MaskedCrossEntropy(logits, tgt, dt, PadID)
		if err != nil {
			t.Fatal(err)
		}
		if n.kept != ls.NKept || n.dropped != ls.NDropped {
			t.Errorf("%d rows: host counts %+v, the masks' %d kept and %d dropped", rows, n, ls.NKept, ls.NDropped)
		}
		gl, err := goldfishTerms(logits, tgt, dt, PadID, &n)
		if err != nil {
			t.Fatal(err)
		}
		got := gl.partStats(gl.stats.Float64Values())
		keptVal := ls.Kept.Float64Values()[0]
		if got.keptMean != keptVal || !sameFloat(got.allMean, ls.All) || !sameFloat(got.droppedMean, ls.Dropped) {
			t.Errorf("%d rows: statistics %+v, MaskedCrossEntropy's kept %v all %v dropped %v", rows, got, keptVal, ls.All, ls.Dropped)
		}
		for _, x := range []*ts.Tensor{ls.Kept, gl.kept, gl.stats, logits, tgt, dt} {
			x.MustDrop()
		}
	}
}

func sameFloat(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

// stepSums adds two micro-batches of two parts each, read at once, into
// what reading each part on its own after its loss gives (the step's
// arithmetic before the read moved), and names a non-finite loss.
func TestStepSums(t *testing.T) {
	const block, v, accum = 10, 13, 2
	r := rand.New(rand.NewPCG(3, 9))
	var want lossSums
	parts := make([][]workerLoss, accum)
	nKept := make([]int64, accum)
	defer func() { dropStats(parts) }()
	for a := range parts {
		type part struct {
			ids             [][]int32
			dropped         []bool
			logits, tgt, dt *ts.Tensor
		}
		ps := make([]part, 2)
		for i := range ps {
			p := &ps[i]
			p.ids, p.dropped, p.logits, p.tgt, p.dt = randomPart(r, 2+i, block, v, false)
			nKept[a] += countTargets(p.ids, p.dropped, block).kept
		}
		var share lossSums
		for _, p := range ps {
			ls, err := MaskedCrossEntropy(p.logits, p.tgt, p.dt, PadID)
			if err != nil {
				t.Fatal(err)
			}
			share.add(partStats{targetCounts{ls.NKept, ls.NDropped}, ls.Kept.Float64Values()[0], ls.All, ls.Dropped}.sums())
			ls.Kept.MustDrop()
			res := lossBackward(p.logits, p.tgt, p.dt, countTargets(p.ids, p.dropped, block), nKept[a], accum)
			if res.err != nil {
				t.Fatal(res.err)
			}
			if g := p.logits.MustGrad(false); !g.MustDefined() {
				t.Errorf("micro-batch %d: no gradient reached the logits", a)
			}
			parts[a] = append(parts[a], res)
		}
		share.kept /= float64(nKept[a])
		want.add(share)
	}
	got, err := stepSums(parts, nKept)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("stepSums %+v, want %+v", got, want)
	}

	ids, dropped, logits, tgt, dt := randomPart(r, 2, block, v, true)
	n := countTargets(ids, dropped, block)
	bad := [][]workerLoss{{lossBackward(logits, tgt, dt, n, n.kept, 1)}}
	defer dropStats(bad)
	if _, err := stepSums(bad, []int64{n.kept}); err == nil || !strings.Contains(err.Error(), "loss is NaN") {
		t.Errorf("NaN logits: error %v, want loss is NaN", err)
	}
}
