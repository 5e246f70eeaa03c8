package extract

import (
	"math"
	"reflect"
	"testing"
)

// markov is a stepper whose next-token distribution depends only on the
// last token: a model small enough to work beam search out by hand.
type markov struct {
	table [][]float64 // probabilities by last token
	last  []int32
}

func (m *markov) logits() [][]float32 {
	out := make([][]float32, len(m.last))
	for i, l := range m.last {
		for _, p := range m.table[l] {
			out[i] = append(out[i], float32(math.Log(p)))
		}
	}
	return out
}
func (m *markov) Start(prompts [][]int32, _ int) ([][]float32, error) {
	m.last = nil
	for _, p := range prompts {
		m.last = append(m.last, p[len(p)-1])
	}
	return m.logits(), nil
}
func (m *markov) Next(t []int32) ([][]float32, error) {
	m.last = append([]int32(nil), t...)
	return m.logits(), nil
}
func (m *markov) Reorder(rows []int) error {
	last := make([]int32, len(rows))
	for i, r := range rows {
		last[i] = m.last[r]
	}
	m.last = last
	return nil
}
func (m *markov) Close() {}

// From 0: 1 (0.6) or 2 (0.4). From 1: uniform. From 2: 0 with 0.9.
var toy = [][]float64{{0.0001, 0.6, 0.3999}, {1.0 / 3, 1.0 / 3, 1.0 / 3}, {0.9, 0.05, 0.05}}

func TestBeamBeatsGreedyByHand(t *testing.T) {
	d := decoder{cfg: DefaultConfig()}
	prompts := [][]int32{{2, 0}, {0}}
	gs, err := d.guesses(&markov{table: toy}, prompts, 2, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	greedy := topIDs(gs)
	// Greedy takes 1 (0.6), then the three-way tie goes to the lowest id: p = 0.2.
	if want := [][]int32{{1, 0}, {1, 0}}; !reflect.DeepEqual(greedy, want) {
		t.Errorf("greedy %v, want %v", greedy, want)
	}
	// Two beams keep 2 (0.4) alive, and 2 → 0 gives 0.36 > 0.2.
	beam, err := d.beamSearch(&markov{table: toy}, prompts, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]int32{{2, 0}, {2, 0}}; !reflect.DeepEqual(beam, want) {
		t.Errorf("beam %v, want %v", beam, want)
	}
	// Width 1 is greedy.
	b1, _ := d.beamSearch(&markov{table: toy}, prompts, 2, 1)
	if !reflect.DeepEqual(b1, greedy) {
		t.Errorf("beam width 1 %v, want greedy %v", b1, greedy)
	}
}

func TestSampling(t *testing.T) {
	logits := []float32{0, 2, 1, -1}
	cfg := DefaultConfig()
	cfg.Decoding = DecodeSample
	count := func(c Config, n int) []int {
		d := decoder{cfg: c}
		rng := sampleRNG(9, 1)
		hits := make([]int, len(logits))
		for range n {
			tok, _ := d.sampleScored(logits, rng.Float64())
			hits[tok]++
		}
		return hits
	}
	// top-k 1 and a tiny top-p are greedy.
	k1 := cfg
	k1.TopK = 1
	if h := count(k1, 200); h[1] != 200 {
		t.Errorf("top_k=1 drew %v, want only token 1", h)
	}
	p0 := cfg
	p0.TopP = 0.01
	if h := count(p0, 200); h[1] != 200 {
		t.Errorf("top_p=0.01 drew %v, want only token 1", h)
	}
	// top-k 2 never draws the two least likely tokens.
	k2 := cfg
	k2.TopK = 2
	if h := count(k2, 2000); h[0] != 0 || h[3] != 0 || h[2] == 0 {
		t.Errorf("top_k=2 drew %v, want tokens 1 and 2 only", h)
	}
	// Plain sampling follows the softmax: p(1) = e²/(1+e²+e+e⁻¹) ≈ 0.64.
	h := count(cfg, 20000)
	if f := float64(h[1]) / 20000; math.Abs(f-0.6439) > 0.02 {
		t.Errorf("token 1 drawn %.3f of the time, want about 0.644 (%v)", f, h)
	}
	// Same seed and document, same draws.
	if a, b := count(cfg, 50), count(cfg, 50); !reflect.DeepEqual(a, b) {
		t.Errorf("same seed drew %v then %v", a, b)
	}
}

func TestTopIndices(t *testing.T) {
	v := []float64{0.1, 0.5, 0.5, -1, 0.9}
	if got := topIndices(v, 3); !reflect.DeepEqual(got, []int{4, 1, 2}) {
		t.Errorf("topIndices = %v, want [4 1 2]", got)
	}
	if got := topIndices(v, 10); len(got) != 5 {
		t.Errorf("k > len: %v", got)
	}
}

// TestTopKThenTopPByHand: top-k, renormalize, then top-p on what is left,
// as Hugging Face's TopKLogitsWarper then TopPLogitsWarper do. Worked by
// hand from the probabilities.
func TestTopKThenTopPByHand(t *testing.T) {
	logp := func(ps ...float64) []float32 {
		out := make([]float32, len(ps))
		for i, p := range ps {
			out[i] = float32(math.Log(p))
		}
		return out
	}
	e := math.E
	for _, tc := range []struct {
		name      string
		logits    []float32
		topK      int
		topP      float64
		temp      float64
		wantIDs   []int
		wantProbs []float64
	}{
		// No limit: the softmax itself, most likely first.
		{"all", logp(0.1, 0.4, 0.2, 0.3), 0, 1, 1, []int{1, 3, 2, 0}, []float64{0.4, 0.3, 0.2, 0.1}},
		// top-k 2 keeps 0.4 and 0.3, renormalized to 4/7 and 3/7.
		{"top-k only", logp(0.4, 0.3, 0.2, 0.1), 2, 1, 1, []int{0, 1}, []float64{4.0 / 7, 3.0 / 7}},
		// Renormalized 4/7 ≈ 0.571 already reaches 0.55: token 0 alone. On
		// the whole distribution (0.4 < 0.55) token 1 would have stayed.
		{"top-p after top-k", logp(0.4, 0.3, 0.2, 0.1), 2, 0.55, 1, []int{0}, []float64{1}},
		// 4/7 < 0.6: both stay.
		{"top-p keeps both", logp(0.4, 0.3, 0.2, 0.1), 2, 0.6, 1, []int{0, 1}, []float64{4.0 / 7, 3.0 / 7}},
		// top-k 3: 4/9, 3/9, 2/9; ascending cumulative 2/9 <= 1 − 0.7 drops
		// token 2, 5/9 does not: tokens 0 and 1, renormalized again.
		{"top-k 3, top-p 0.7", logp(0.4, 0.3, 0.2, 0.1), 3, 0.7, 1, []int{0, 1}, []float64{4.0 / 7, 3.0 / 7}},
		// Logits 2, 1, 1, 0 with top-k 2: the k-th logit is 1 and both
		// tokens at 1 stay (torch.topk's value is the cut): e/(e+2), 1/(e+2) twice.
		{"top-k ties stay", []float32{2, 1, 1, 0}, 2, 1, 1, []int{0, 1, 2}, []float64{e / (e + 2), 1 / (e + 2), 1 / (e + 2)}},
		// Then top-p 0.7: ascending cumulative 1/(e+2) ≈ 0.212 <= 0.3 drops
		// the later of the tied pair (id 2), 0.424 does not: e/(e+1), 1/(e+1).
		{"top-k ties then top-p", []float32{2, 1, 1, 0}, 2, 0.7, 1, []int{0, 1}, []float64{e / (e + 1), 1 / (e + 1)}},
		// Temperature 2 before top-k: logits 2, 0, −2 become 1, 0, −1.
		{"temperature first", []float32{2, 0, -2}, 2, 1, 2, []int{0, 1}, []float64{e / (e + 1), 1 / (e + 1)}},
		// A tiny top-p keeps the most likely token however small.
		{"top-p tiny", logp(0.25, 0.25, 0.25, 0.25), 0, 0.01, 1, []int{0}, []float64{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Decoding, cfg.TopK, cfg.TopP, cfg.Temperature = DecodeSample, tc.topK, tc.topP, tc.temp
			ids, probs := decoder{cfg: cfg}.candidates(tc.logits)
			if !reflect.DeepEqual(ids, tc.wantIDs) {
				t.Fatalf("ids %v, want %v", ids, tc.wantIDs)
			}
			for i := range probs {
				if math.Abs(probs[i]-tc.wantProbs[i]) > 1e-6 {
					t.Errorf("probs %v, want %v", probs, tc.wantProbs)
					break
				}
			}
		})
	}
}
