package extract

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"

	"github.com/memo-research/memo/internal/parallel"
)

// stepper is a language model decoding a batch of rows in lockstep.
type stepper interface {
	// Start feeds the prompts (any lengths) and returns each row's
	// next-token logits; room is reserved for maxNew more tokens.
	Start(prompts [][]int32, maxNew int) ([][]float32, error)
	// Next appends one token to every row and returns the next logits.
	Next(tokens []int32) ([][]float32, error)
	// Reorder makes row i continue the history of row rows[i].
	Reorder(rows []int) error
	// Close frees what Start allocated.
	Close()
}

// greedyStepper is a stepper that also takes greedy decoding's argmax on
// its device (engine.Stepper and approx.Stepper do), so that each step
// reads back one id a row instead of the row's logits.
type greedyStepper interface {
	stepper
	// StartGreedy is Start returning each row's Argmax.
	StartGreedy(prompts [][]int32, maxNew int) ([]int32, error)
	// NextGreedy is Next returning each row's Argmax.
	NextGreedy(tokens []int32) ([]int32, error)
	// ContinueGreedy is engine.ContinueIDs(NextGreedy, first, n) right
	// after StartGreedy, feeding each step's argmax to the next on the
	// device.
	ContinueGreedy(first []int32, n int) ([][]int32, error)
}

// decoder turns logits into tokens with one strategy.
type decoder struct {
	cfg Config
}

// candidates are the tokens sampling may draw and their probabilities,
// most likely first (lower id first among equals), by Hugging Face's
// logits warpers applied in its order:
//
//  1. temperature: logits / T;
//  2. top-k (k > 0): keep every token whose logit is at least the k-th
//     largest (torch.topk's value; tokens tied with it all stay);
//  3. softmax over the tokens kept, renormalized;
//  4. top-p (p < 1) on that renormalized distribution: in increasing
//     probability, drop each token while the cumulative probability up to
//     and including it is <= 1 − p; the most likely token always stays.
//
// The probabilities returned sum to 1.
func (d decoder) candidates(logits []float32) (ids []int, probs []float64) {
	return d.candidatesOf(logits, nil, new(sampleScratch))
}

// sampleScratch holds the vocabulary-sized buffers of one row's sampling
// (candidatesOf, descendingOrder), reused from row to row and step to
// step through scratchPool: allocated fresh, they were 1.5 MB a row at
// 32,000 tokens, and writing into new memory cost more than the sort.
type sampleScratch struct {
	scaled, shifted, probs []float64
	heap                   []float64 // topKOrder's k largest values
	keys, keys2            []uint64
	order, order2          []int
}

var scratchPool = sync.Pool{New: func() any { return new(sampleScratch) }}

// grow is buf resized to n (its contents undefined), growing it only
// when it is too small.
func grow[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	*buf = (*buf)[:n]
	return *buf
}

// candidatesOf is candidates; shifted, when not nil, holds
// exp(logit − max logit) by token id, which at temperature 1 are the
// exponentials candidates needs (the caller computed them for the
// sequence log-probability), so they are not computed twice.
func (d decoder) candidatesOf(logits []float32, shifted []float64, sc *sampleScratch) (ids []int, probs []float64) {
	scaled := grow(&sc.scaled, len(logits))
	if t := d.cfg.Temperature; t == 1 {
		for i, v := range logits {
			scaled[i] = float64(v) // x / 1 is x: the same bits without a division
		}
	} else {
		for i, v := range logits {
			scaled[i] = float64(v) / t
		}
	}
	var order []int
	if k := d.cfg.TopK; k > 0 && k <= len(scaled)/topKSelectRatio && topKSelect {
		order = topKOrder(scaled, k, sc)
	}
	n := len(order)
	if order == nil {
		order = descendingOrderIn(scaled, sc)
		n = len(order)
		if k := d.cfg.TopK; k > 0 && k < n {
			kth := scaled[order[k-1]]
			n = k
			for n < len(order) && scaled[order[n]] >= kth {
				n++
			}
		}
	}
	ids = order[:n]
	probs = grow(&sc.probs, n)
	top := scaled[ids[0]]
	var z float64
	for i, id := range ids {
		if shifted != nil {
			probs[i] = shifted[id]
		} else {
			probs[i] = math.Exp(scaled[id] - top)
		}
		z += probs[i]
	}
	for i := range probs {
		probs[i] /= z
	}
	if d.cfg.TopP < 1 {
		// Cumulate from the least likely end, as HF does on an ascending sort.
		var cum float64
		drop := 0
		for i := n - 1; i > 0; i-- {
			cum += probs[i]
			if cum > 1-d.cfg.TopP {
				break
			}
			drop++
		}
		n -= drop
		probs = probs[:n]
		var kept float64
		for _, p := range probs {
			kept += p
		}
		for i := range probs {
			probs[i] /= kept
		}
	}
	return ids[:n], probs
}

// topKSelect lets candidatesOf find a small top-k's candidates by
// topKOrder (off in a test, to compare with the whole sort), when k is at
// most 1/topKSelectRatio of the vocabulary.
var topKSelect = true

const topKSelectRatio = 8

// topKOrder is what candidatesOf keeps of descendingOrder(x) under top-k:
// its first k indices and every later one whose value equals the k-th,
// in the same order (larger first, lower index first among equals),
// found without sorting the whole vocabulary: the k-th largest value
// through a min-heap of the k largest seen, then the indices of the
// values at least as large, sorted. nil when x holds a NaN, which
// descendingOrder orders by its comparison sort.
func topKOrder(x []float64, k int, sc *sampleScratch) []int {
	h := grow(&sc.heap, k)[:0]
	for _, v := range x {
		switch {
		case v != v:
			return nil
		case len(h) < k:
			h = append(h, v)
			for c := len(h) - 1; c > 0; { // sift up
				p := (c - 1) / 2
				if h[p] <= h[c] {
					break
				}
				h[p], h[c] = h[c], h[p]
				c = p
			}
		case v > h[0]:
			h[0] = v
			for p := 0; ; { // sift down
				c := 2*p + 1
				if c >= k {
					break
				}
				if c+1 < k && h[c+1] < h[c] {
					c++
				}
				if h[p] <= h[c] {
					break
				}
				h[p], h[c] = h[c], h[p]
				p = c
			}
		}
	}
	kth := h[0]
	order := grow(&sc.order, len(x))[:0]
	for i, v := range x {
		if v >= kth {
			order = append(order, i)
		}
	}
	// Stable, so lower indices stay first among equal values (−0 and +0
	// equal, as descendingOrder has them).
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(x[b], x[a]) })
	return order
}

// descendingOrder is the indices of x, largest value first, lower index
// first among equals: the order a stable sort by descending value gives,
// found by a least-significant-digit radix sort on the values' bits (a
// comparison sort of the vocabulary, per row and step, cost more than the
// model's step when sampling many rows). −0 and +0 are equal; with a NaN
// it falls back to the comparison sort, which puts NaNs last.
func descendingOrder(x []float64) []int { return descendingOrderIn(x, new(sampleScratch)) }

// descendingOrderIn is descendingOrder sorting in sc's buffers; the order
// returned is one of them.
func descendingOrderIn(x []float64, sc *sampleScratch) []int {
	n := len(x)
	keys, order := grow(&sc.keys, n), grow(&sc.order, n)
	for i, v := range x {
		if v != v {
			return descendingOrderCompared(x)
		}
		if v == 0 {
			v = 0 // −0 sorts with +0
		}
		b := math.Float64bits(v)
		if b>>63 == 1 { // the map to unsigned integers that keeps the order
			b = ^b
		} else {
			b |= 1 << 63
		}
		keys[i], order[i] = ^b, i // descending
	}
	keys2, order2 := grow(&sc.keys2, n), grow(&sc.order2, n)
	// Every byte's histogram in one read of the keys; a pass only permutes,
	// so the histograms hold for every pass.
	var counts [8][256]int
	for _, k := range keys {
		counts[0][byte(k)]++
		counts[1][byte(k>>8)]++
		counts[2][byte(k>>16)]++
		counts[3][byte(k>>24)]++
		counts[4][byte(k>>32)]++
		counts[5][byte(k>>40)]++
		counts[6][byte(k>>48)]++
		counts[7][byte(k>>56)]++
	}
	for b := range counts {
		shift := uint(8 * b)
		count := &counts[b]
		if count[byte(keys[0]>>shift)] == n {
			continue // every key has this byte: the pass would not move anything
		}
		sum := 0
		for v, c := range count {
			count[v] = sum
			sum += c
		}
		for i, k := range keys {
			j := count[byte(k>>shift)]
			count[byte(k>>shift)]++
			keys2[j], order2[j] = k, order[i]
		}
		keys, keys2 = keys2, keys
		order, order2 = order2, order
	}
	return order
}

// descendingOrderCompared is descendingOrder by a comparison sort.
func descendingOrderCompared(x []float64) []int {
	order := make([]int, len(x))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(x[b], x[a]) })
	return order
}

// sampleScored draws one token from the candidates with the uniform draw
// u in [0, 1) and returns it with its log-probability under the
// untruncated distribution at temperature 1 (logProbAt's, bit for bit);
// at temperature 1 the two share their exponentials.
func (d decoder) sampleScored(logits []float32, u float64) (tok int32, logProb float64) {
	sc := scratchPool.Get().(*sampleScratch)
	defer scratchPool.Put(sc)
	if d.cfg.Temperature != 1 {
		ids, probs := d.candidatesOf(logits, nil, sc)
		tok = draw(ids, probs, u)
		return tok, logProbAt(logits, tok)
	}
	shifted := grow(&sc.shifted, len(logits))
	mx, z := shiftedExps(logits, shifted)
	ids, probs := d.candidatesOf(logits, shifted, sc)
	tok = draw(ids, probs, u)
	return tok, float64(logits[tok]) - mx - math.Log(z)
}

// draw draws one of ids with probabilities probs by inverting the
// cumulative distribution in their order at u, uniform in [0, 1).
func draw(ids []int, probs []float64, u float64) int32 {
	for i, p := range probs {
		u -= p
		if u < 0 {
			return int32(ids[i])
		}
	}
	return int32(ids[len(ids)-1])
}

// sampleRNG is the generator of one document: (seed, doc_id) keyed, so a
// sample does not depend on batch composition or order.
func sampleRNG(seed, docID int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(docID)^0x73616d706c65))
}

// beamSearch keeps the width most likely continuations (by summed log
// probability; every one has n tokens, so no length penalty) of each prompt
// and returns the best. lm decodes len(prompts)·width rows, prompt p's
// beams at rows p·width … p·width+width−1.
func (d decoder) beamSearch(lm stepper, prompts [][]int32, n, width int) ([][]int32, error) {
	gs, err := d.beamGuesses(lm, prompts, n, width)
	if err != nil {
		return nil, err
	}
	return topIDs(gs), nil
}

// beamGuesses is beamSearch returning every prompt's width beams, best
// first, each with its summed log probability (Guess.LogProb; Sample is
// the beam's place).
func (d decoder) beamGuesses(lm stepper, prompts [][]int32, n, width int) ([][]Guess, error) {
	b := len(prompts)
	out := make([][]Guess, b)
	if n <= 0 || b == 0 {
		return out, nil
	}
	if dd, ok := lm.(deviceDecoder); ok && d.decodesOn(dd.Device()) {
		out, ok, err := beamGuessesOnDevice(dd, prompts, n, width)
		if err != nil || ok {
			return out, err
		}
	}
	// Each prompt runs once; its first step's candidates come from that
	// row, and Reorder then copies its cache to the prompt's beams (as
	// samples share their prompt's), instead of a prompt pass per beam.
	logits, err := lm.Start(prompts, n)
	if err != nil {
		return nil, err
	}
	defer lm.Close()
	score := make([]float64, b*width)
	seqs := make([][]int32, b*width)
	type cand struct {
		score  float64
		parent int
		tok    int32
	}
	if vocab := len(logits[0]); vocab < width {
		return nil, fmt.Errorf("beam search: vocabulary of %d tokens is smaller than %d beams", vocab, width)
	}
	for step := 0; step < n; step++ {
		parents := make([]int, b*width)
		toks := make([]int32, b*width)
		newSeqs := make([][]int32, b*width)
		newScore := make([]float64, b*width)
		// Each prompt's beams read and write only the prompt's rows, so
		// prompts expand in parallel (a log-softmax of the vocabulary per
		// beam, on the host).
		parallel.For(b, func() func(int) {
			var lp []float64
			return func(p int) {
				var cands []cand
				// At the first step all beams of a prompt are the same: expand one.
				nb := width
				if step == 0 {
					nb = 1
				}
				for j := 0; j < nb; j++ {
					r := p*width + j
					row := logits[p] // the first step: the prompt's own row
					if step > 0 {
						row = logits[r]
					}
					lp = logSoftmaxInto(grow(&lp, len(row)), row)
					for _, t := range topIndices(lp, width) {
						cands = append(cands, cand{score[r] + lp[t], r, int32(t)})
					}
				}
				sort.SliceStable(cands, func(x, y int) bool {
					if cands[x].score != cands[y].score {
						return cands[x].score > cands[y].score
					}
					if cands[x].parent != cands[y].parent {
						return cands[x].parent < cands[y].parent
					}
					return cands[x].tok < cands[y].tok
				})
				for j := 0; j < width; j++ {
					c, r := cands[j], p*width+j
					parents[r], toks[r], newScore[r] = c.parent, c.tok, c.score
					newSeqs[r] = append(append(make([]int32, 0, n), seqs[c.parent]...), c.tok)
				}
			}
		})
		seqs, score = newSeqs, newScore
		if step == n-1 {
			break
		}
		if step == 0 { // the cache holds one row per prompt so far
			for r := range parents {
				parents[r] /= width
			}
		}
		if err := lm.Reorder(parents); err != nil {
			return nil, err
		}
		if logits, err = lm.Next(toks); err != nil {
			return nil, err
		}
	}
	// Candidates were sorted, so each prompt's beams are best first.
	for p := range out {
		for j := 0; j < width; j++ {
			out[p] = append(out[p], Guess{Sample: j, IDs: seqs[p*width+j], LogProb: score[p*width+j]})
		}
	}
	return out, nil
}

// beamGuessesOnDevice is beamGuesses ranked on the stepper's device
// (engine.Stepper.ContinueBeams): the same beams but where two
// candidates' scores are within rounding, LogProb to its last bits. ok is
// false, with nothing decoded, where the stepper declined.
func beamGuessesOnDevice(lm deviceDecoder, prompts [][]int32, n, width int) (out [][]Guess, ok bool, err error) {
	if ok, err := lm.StartOnDevice(prompts, 1, n); err != nil || !ok {
		return nil, false, err
	}
	defer lm.Close()
	beams, ok, err := lm.ContinueBeams(n, width)
	if err != nil || !ok {
		return nil, false, err
	}
	out = make([][]Guess, len(prompts))
	for p := range out {
		for j := 0; j < width; j++ {
			bm := beams[p*width+j]
			out[p] = append(out[p], Guess{Sample: j, IDs: bm.IDs, LogProb: bm.LogProb})
		}
	}
	return out, true, nil
}

// logSoftmaxInto writes log softmax(l) in float64 into out (len(l)) and
// returns it.
func logSoftmaxInto(out []float64, l []float32) []float64 {
	mx, z := shiftedExps(l, nil)
	lz := mx + math.Log(z)
	for i, v := range l {
		out[i] = float64(v) - lz
	}
	return out
}

// topIndices returns the indices of the k largest values, largest first,
// lower index first among equals.
func topIndices(v []float64, k int) []int {
	idx := make([]int, 0, k+1)
	for i := range v {
		// Insertion into a short sorted list: k is a beam width.
		pos := len(idx)
		for pos > 0 && v[idx[pos-1]] < v[i] {
			pos--
		}
		if pos >= k {
			continue
		}
		idx = append(idx, 0)
		copy(idx[pos+1:], idx[pos:])
		idx[pos] = i
		if len(idx) > k {
			idx = idx[:k]
		}
	}
	return idx
}
