package extract

import (
	"cmp"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/sugarme/gotch"
)

// Guess is one continuation of a prompt.
type Guess struct {
	// Sample is the draw it came from (its random stream), or the beam's
	// place in beam search.
	Sample int
	IDs    []int32
	// LogProb is the sum over the generated tokens of the model's own log
	// probability of each given the prompt and the tokens before it, under
	// its untruncated distribution at temperature 1 (natural log): the
	// confidence the extraction benchmark ranks guesses by. It is not the
	// probability of drawing the guess under temperature, top-k and top-p.
	// Greedy decoding's guess has none (0): nothing ranks or records it,
	// and its log-softmax over the vocabulary cost a tenth of a decode step.
	LogProb float64
}

// guessRNG is the generator of draw j of a document. Draw 0 is
// sampleRNG's stream, so one sample per prompt draws what it always drew;
// draw j > 0 moves the stream selector by j times an odd constant (the
// golden ratio's bits), which keeps the streams of nearby documents and
// draws apart.
func guessRNG(seed, docID int64, j int) *rand.Rand {
	if j == 0 {
		return sampleRNG(seed, docID)
	}
	return rand.New(rand.NewPCG(uint64(seed), (uint64(docID)^0x73616d706c65)+uint64(j)*0x9e3779b97f4a7c15))
}

// guesses continues each prompt by n tokens per guesses times: greedy
// (per must be 1) or sampling, where row p·per+j draws with rngs[p·per+j].
// The prompts run once; with per > 1 the cache is then expanded to the
// per rows of each prompt (Reorder with more rows than prompts), so the
// prompt's keys and values are computed once and copied, not recomputed.
func (d decoder) guesses(lm stepper, prompts [][]int32, n, per int, rngs []*rand.Rand) ([][]Guess, error) {
	out := make([][]Guess, len(prompts))
	if n <= 0 || len(prompts) == 0 {
		return out, nil
	}
	if gl, ok := lm.(greedyStepper); ok && d.cfg.Decoding == DecodeGreedy && per == 1 {
		return greedyGuesses(gl, prompts, n)
	}
	var draws [][]float64 // row r's uniform draw at each step, taken before any decoding
	if d.cfg.Decoding == DecodeSample {
		draws = uniforms(rngs, n)
		if ds, ok := lm.(deviceDecoder); ok && d.decodesOn(ds.Device()) {
			out, ok, err := d.guessesOnDevice(ds, prompts, n, per, draws)
			if err != nil || ok {
				return out, err
			}
		}
	}
	logits, err := lm.Start(prompts, n)
	if err != nil {
		return nil, err
	}
	defer lm.Close()
	rows := len(prompts) * per
	if per > 1 {
		src := make([]int, rows)
		wide := make([][]float32, rows)
		for r := range src {
			src[r], wide[r] = r/per, logits[r/per]
		}
		if err := lm.Reorder(src); err != nil {
			return nil, err
		}
		logits = wide
	}
	lps := make([]float64, rows)
	pick := engine.Greedy // greedy's one guess has no log-probability: nothing ranks or records it
	if d.cfg.Decoding == DecodeSample {
		steps := make([]int, rows) // each row's tokens drawn so far: pick runs rows in parallel, each its own
		pick = func(r int, l []float32) int32 {
			t, lp := d.sampleScored(l, draws[r][steps[r]])
			steps[r]++
			lps[r] += lp
			return t
		}
	}
	seqs, err := engine.Continue(lm.Next, logits, n, pick)
	if err != nil {
		return nil, err
	}
	for p := range out {
		for j := 0; j < per; j++ {
			out[p] = append(out[p], Guess{Sample: j, IDs: seqs[p*per+j], LogProb: lps[p*per+j]})
		}
	}
	return out, nil
}

// deviceDecoder is a stepper that can also choose its tokens on its
// model's device (engine.Stepper, approx.Stepper): StartOnDevice is Start
// followed by Reorder's expansion of each prompt into per rows, keeping
// the logits on the device; ContinueSampled draws n tokens a row there,
// and ContinueBeams runs beam search there.
type deviceDecoder interface {
	stepper
	StartOnDevice(prompts [][]int32, per, maxNew int) (bool, error)
	ContinueSampled(n int, w engine.Warpers, u [][]float64) ([]engine.Sampled, bool, error)
	ContinueBeams(n, width int) ([]engine.Beam, bool, error)
	Device() gotch.Device
}

// decodesOn reports whether extract.decode_on sends the choices of a
// model on dev (sampling's draws, beam search's ranks, p_extract) to that
// device: "device" always, "host" never, "auto" on a GPU.
func (d decoder) decodesOn(dev gotch.Device) bool {
	switch d.cfg.DecodeOn {
	case OnDevice:
		return true
	case OnHost:
		return false
	}
	return dev.IsCuda()
}

// guessesOnDevice is guesses' sampling on the stepper's device, with the
// rows' draws: the same tokens as the host's (but where rounding moves a
// cumulative probability across a draw) and each guess's LogProb summed
// over its tokens in the same order. ok is false, with nothing decoded,
// where the stepper declined (guesses then samples on the host).
func (d decoder) guessesOnDevice(lm deviceDecoder, prompts [][]int32, n, per int, draws [][]float64) (out [][]Guess, ok bool, err error) {
	if ok, err := lm.StartOnDevice(prompts, per, n); err != nil || !ok {
		return nil, false, err
	}
	defer lm.Close()
	rows, ok, err := lm.ContinueSampled(n, d.warpers(), draws)
	if err != nil || !ok {
		return nil, false, err
	}
	out = make([][]Guess, len(prompts))
	for p := range out {
		for j := 0; j < per; j++ {
			row := rows[p*per+j]
			var lp float64
			for _, v := range row.LogProbs {
				lp += v
			}
			out[p] = append(out[p], Guess{Sample: j, IDs: row.IDs, LogProb: lp})
		}
	}
	return out, true, nil
}

// warpers are the config's temperature, top-k and top-p, for the device.
func (d decoder) warpers() engine.Warpers {
	return engine.Warpers{Temperature: d.cfg.Temperature, TopK: d.cfg.TopK, TopP: d.cfg.TopP}
}

// uniforms are n draws of each generator in turn, what sampling's steps
// take from them one at a time.
func uniforms(rngs []*rand.Rand, n int) [][]float64 {
	out := make([][]float64, len(rngs))
	for r, rng := range rngs {
		out[r] = make([]float64, n)
		for j := range out[r] {
			out[r][j] = rng.Float64()
		}
	}
	return out
}

// greedyGuesses is guesses' greedy decoding on a stepper that takes the
// argmax on its device: the same tokens as engine.Greedy over the logits,
// with the ids read back once after the prompt pass and once at the end
// instead of b rows of logits a step.
func greedyGuesses(lm greedyStepper, prompts [][]int32, n int) ([][]Guess, error) {
	first, err := lm.StartGreedy(prompts, n)
	if err != nil {
		return nil, err
	}
	defer lm.Close()
	seqs, err := lm.ContinueGreedy(first, n)
	if err != nil {
		return nil, err
	}
	out := make([][]Guess, len(prompts))
	for p, ids := range seqs {
		out[p] = []Guess{{IDs: ids}}
	}
	return out, nil
}

// logProbAt is log softmax(logits)[tok] in float64.
func logProbAt(logits []float32, tok int32) float64 {
	mx, z := shiftedExps(logits, nil)
	return float64(logits[tok]) - mx - math.Log(z)
}

// shiftedExps returns the largest logit and the sum, in token order, of
// exp(logit − largest) in float64: a log-softmax's normalizer. With dst
// not nil it also stores each exponential there, by token.
func shiftedExps(logits []float32, dst []float64) (mx, z float64) {
	mx = maxLogit(logits)
	for i, v := range logits {
		e := math.Exp(float64(v) - mx)
		if dst != nil {
			dst[i] = e
		}
		z += e
	}
	return mx, z
}

// maxLogit is the fold of math.Max over logits from −Inf, value for value
// (+Inf over NaN, NaN over numbers, +0 over −0), with one comparison a
// logit: math.Max's special cases, checked on each of a vocabulary's
// values, cost as much as the exponentials after it.
func maxLogit(logits []float32) float64 {
	mx, nan := math.Inf(-1), false
	for _, v := range logits {
		if f := float64(v); f > mx {
			mx = f
		} else if f != f {
			nan = true
		}
	}
	switch {
	case math.IsInf(mx, 1):
		return mx
	case nan:
		return math.NaN()
	case mx == 0: // math.Max(−0, +0) is +0
		for _, v := range logits {
			if v == 0 && !math.Signbit(float64(v)) {
				return 0
			}
		}
	}
	return mx
}

// rankGuesses orders guesses by LogProb, highest first; equal ones keep the
// lower Sample first, so the order is deterministic.
func rankGuesses(gs []Guess) {
	slices.SortStableFunc(gs, func(a, b Guess) int {
		if c := cmp.Compare(b.LogProb, a.LogProb); c != 0 {
			return c
		}
		return cmp.Compare(a.Sample, b.Sample)
	})
}

// topIDs is each prompt's first guess.
func topIDs(gs [][]Guess) [][]int32 {
	out := make([][]int32, len(gs))
	for i, g := range gs {
		if len(g) > 0 {
			out[i] = g[0].IDs
		}
	}
	return out
}

// writeGuesses writes the guesses of an attack with extract.samples > 1
// beside its completions (runfiles.GuessesPath). With one guess per prompt it
// writes none and removes one an earlier attack left there, so that eval
// never scores another attack's guesses.
func writeGuesses(completions string, cfg Config, tok *data.Tokenizer, prompts []Prompt, gs [][]Guess) error {
	path := runfiles.GuessesPath(completions)
	if cfg.Samples <= 1 {
		return atomicfile.RemoveStale(path)
	}
	var rows []runfiles.Guess
	for i, p := range prompts {
		for rank, g := range gs[i] {
			_, text := scoredTexts(tok, nil, g.IDs)
			rows = append(rows, runfiles.Guess{DocID: p.Doc.ID, Split: p.Doc.Split, Rank: rank, Sample: g.Sample,
				Generated: g.IDs, GeneratedText: text, SeqLogProb: g.LogProb})
		}
	}
	if err := runfiles.WriteGuesses(path, rows); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	slog.Info("extract: guesses", "out", path, "rows", len(rows), "per_prompt", cfg.Samples)
	return nil
}
