package extract

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/precision"
	"github.com/sugarme/gotch/ts"
)

// tiedModel is a small random model whose embedding rows 8 to 15 (its
// output rows too: the embedding is tied) are zero, so that those eight
// tokens' logits are exactly 0 at every step: ties that sampling must
// order lower id first, as the host does.
func tiedModel(t *testing.T) *model.GPT {
	t.Helper()
	g := newModel(t, model.Config{Preset: "nano", Vocab: 256, Context: 64, Seed: 5})
	torchx.NoGrad(func() {
		w := g.Params()[0].Tensor.MustNarrow(0, 8, 8, false)
		w.MustZero_()
		w.MustDrop()
	})
	return g
}

// Sampling on the device (engine.Stepper's StartOnDevice and
// ContinueSampled) must draw the tokens the host sampler draws with the
// same random streams, and sum the same log-probabilities to within
// rounding, for every warper: temperatures, top-k (1, 3, 40, with ties at
// the k-th), top-p, both together, one and several samples a prompt,
// exactly and under a quantized cache.
func TestDeviceSamplingMatchesHost(t *testing.T) {
	g := tiedModel(t)
	prompts := [][]int32{[]int32("Of the Refractions"), []int32("Light is"), []int32("x")}
	const n = 12
	type warp struct {
		temp float64
		k    int
		p    float64
	}
	warps := []warp{{1, 0, 1}, {0.7, 0, 1}, {1.6, 0, 1}, {1, 1, 1}, {1, 3, 1}, {0.8, 40, 1}, {1, 0, 0.9}, {1, 0, 0.3}, {1.3, 40, 0.8}, {1, 200, 0.95}, {1, 0, 1e-17}}
	agree, total, tied := 0, 0, 0
	for name, mk := range exactAndKV8(t, g) {
		for i, w := range warps {
			for _, per := range []int{1, 3} {
				cfg := DefaultConfig()
				cfg.Decoding, cfg.Temperature, cfg.TopK, cfg.TopP = DecodeSample, w.temp, w.k, w.p
				rngsOf := func() []*rand.Rand {
					var rs []*rand.Rand
					for p := range prompts {
						for j := 0; j < per; j++ {
							rs = append(rs, guessRNG(int64(i), int64(p), j))
						}
					}
					return rs
				}
				host := cfg
				host.DecodeOn = OnHost
				want, err := decoder{cfg: host}.guesses(mk(), prompts, n, per, rngsOf())
				if err != nil {
					t.Fatal(err)
				}
				dev := cfg
				dev.DecodeOn = OnDevice
				lm, ok := mk().(deviceDecoder)
				if !ok {
					t.Fatalf("%s: the stepper does not sample on the device", name)
				}
				got, ok, err := decoder{cfg: dev}.guessesOnDevice(lm, prompts, n, per, uniforms(rngsOf(), n))
				if err != nil || !ok {
					t.Fatalf("%s, %+v: the device path declined (%v)", name, w, err)
				}
				for p := range want {
					for j := range want[p] {
						a, b := got[p][j], want[p][j]
						total++
						for _, id := range b.IDs {
							if id >= 8 && id < 16 {
								tied++
							}
						}
						if slices.Equal(a.IDs, b.IDs) && a.Sample == b.Sample && math.Abs(a.LogProb-b.LogProb) <= 1e-9*math.Max(1, math.Abs(b.LogProb)) {
							agree++
							continue
						}
						t.Errorf("%s, %+v, %d a prompt, prompt %d sample %d: device %v (log p %.15g), host %v (%.15g)", name, w, per, p, j, a.IDs, a.LogProb, b.IDs, b.LogProb)
					}
				}
			}
		}
	}
	if agree != total || total != 2*len(warps)*len(prompts)*4 {
		t.Errorf("%d of %d guesses agree", agree, total)
	}
	if tied == 0 {
		t.Error("no guess drew one of the eight tied tokens: the test does not exercise ties")
	}
	t.Logf("%d of %d guesses agree; %d tokens drawn among the tied", agree, total, tied)
}

// With extract.decode_on auto, a CPU model samples on the host (the same
// bits as before the device sampler existed); a logits row with a NaN
// (here every row: a NaN in the final norm's gain) makes the device path
// decline, and guesses falls back to the host's draws.
func TestDeviceSamplingDeclines(t *testing.T) {
	g := tiedModel(t)
	st := engine.NewStepper(g, true)
	if (decoder{cfg: DefaultConfig()}).decodesOn(st.Device()) {
		t.Error("decode_on auto samples a CPU model on the device")
	}
	if ok, err := engine.NewStepper(g, false).StartOnDevice([][]int32{{1}}, 1, 2); ok || err != nil {
		t.Errorf("StartOnDevice without the cache: ok %v, %v; want it to decline", ok, err)
	}
	if _, _, err := st.ContinueSampled(2, engine.Warpers{Temperature: 1, TopP: 1}, [][]float64{{0.5, 0.5}}); err == nil {
		t.Error("ContinueSampled before StartOnDevice: no error")
	}
	if ok, err := st.StartOnDevice([][]int32{{1}, {2}}, 2, 2); !ok || err != nil {
		t.Fatalf("StartOnDevice: %v, %v", ok, err)
	}
	if _, _, err := st.ContinueSampled(2, engine.Warpers{Temperature: 1, TopP: 1}, [][]float64{{0.5, 0.5}}); err == nil {
		t.Error("ContinueSampled with one row of draws for four rows: no error")
	}
	st.Close()

	norm := g.Params()[len(g.Params())-1]
	torchx.NoGrad(func() {
		one := norm.Tensor.MustNarrow(0, 3, 1, false)
		one.MustFill_(ts.FloatScalar(math.NaN()))
		one.MustDrop()
	})
	// Top-k 1 keeps no NaN token: the draw must still not index before
	// the candidates (a gather at −1 fails; on a GPU it ends the process).
	for _, w := range []engine.Warpers{{Temperature: 1, TopP: 1}, {Temperature: 1, TopK: 1, TopP: 1}, {Temperature: 1, TopK: 40, TopP: 0.9}} {
		if ok, err := st.StartOnDevice([][]int32{{1}}, 1, 3); !ok || err != nil {
			t.Fatalf("StartOnDevice: %v, %v", ok, err)
		}
		if rows, ok, err := st.ContinueSampled(3, w, [][]float64{{0.1, 0.2, 0.3}}); ok || err != nil || rows != nil {
			t.Errorf("NaN logits, %+v: ContinueSampled gave %v, ok %v, %v; want it to decline", w, rows, ok, err)
		}
		st.Close()
	}
	cfg := DefaultConfig()
	cfg.Decoding = DecodeSample
	rngs := func() []*rand.Rand { return []*rand.Rand{guessRNG(1, 0, 0)} }
	host := cfg
	host.DecodeOn = OnHost
	want, err := decoder{cfg: host}.guesses(engine.NewStepper(g, true), [][]int32{{1, 2}}, 3, 1, rngs())
	if err != nil {
		t.Fatal(err)
	}
	cfg.DecodeOn = OnDevice
	got, err := decoder{cfg: cfg}.guesses(engine.NewStepper(g, true), [][]int32{{1, 2}}, 3, 1, rngs())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("NaN logits: device path gave %v, host %v", got, want)
	}
}

// Top-k on the device orders only k+64 tokens of the vocabulary; where
// more than that tie with the k-th (here all 256: the embedding, tied to
// the output, is zero, so every logit is exactly 0, and top-k keeps every
// token) it declines, and the guesses are the host's.
func TestDeviceSamplingDeclinesTiesPastTopK(t *testing.T) {
	g := newModel(t, model.Config{Preset: "nano", Vocab: 256, Context: 64, Seed: 5})
	torchx.NoGrad(func() { g.Params()[0].Tensor.MustZero_() })
	for _, w := range []engine.Warpers{{Temperature: 1, TopK: 1, TopP: 1}, {Temperature: 0.7, TopK: 40, TopP: 0.9}} {
		st := engine.NewStepper(g, true)
		if ok, err := st.StartOnDevice([][]int32{{1, 2}, {3}}, 2, 4); !ok || err != nil {
			t.Fatalf("StartOnDevice: %v, %v", ok, err)
		}
		u := [][]float64{{0.1, 0.5, 0.9, 0.3}, {0.2, 0.4, 0.6, 0.8}, {0, 0.99, 0.5, 0.5}, {0.7, 0.7, 0.7, 0.7}}
		if rows, ok, err := st.ContinueSampled(4, w, u); ok || err != nil || rows != nil {
			t.Errorf("%+v: ContinueSampled gave %v, ok %v, %v; want it to decline", w, rows, ok, err)
		}
		st.Close()

		cfg := DefaultConfig()
		cfg.Decoding, cfg.Temperature, cfg.TopK, cfg.TopP = DecodeSample, w.Temperature, w.TopK, w.TopP
		rngs := func() []*rand.Rand {
			return []*rand.Rand{guessRNG(1, 0, 0), guessRNG(1, 0, 1), guessRNG(1, 1, 0), guessRNG(1, 1, 1)}
		}
		host := cfg
		host.DecodeOn = OnHost
		want, err := decoder{cfg: host}.guesses(engine.NewStepper(g, true), [][]int32{{1, 2}, {3}}, 4, 2, rngs())
		if err != nil {
			t.Fatal(err)
		}
		cfg.DecodeOn = OnDevice
		got, err := decoder{cfg: cfg}.guesses(engine.NewStepper(g, true), [][]int32{{1, 2}, {3}}, 4, 2, rngs())
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%+v: device path gave %v, host %v", w, got, want)
		}
		past := 0 // tokens drawn that the first k+64 of the order do not hold
		for _, gs := range want {
			for _, gu := range gs {
				for _, id := range gu.IDs {
					if int(id) >= w.TopK+64 {
						past++
					}
				}
			}
		}
		if past == 0 {
			t.Errorf("%+v: no token drawn past the first %d: the test does not reach the ties top-k keeps", w, w.TopK+64)
		}
	}
}

// The scoring pass's p_extract computed on the device (extract.decode_on
// device: greedy's argmax check and sampling's warped probabilities,
// one value a position read back) must be the host's from the copied
// logits: greedy's bit for bit, with suffixes that greedy decoding
// reproduces and ones it does not; sampling's within rounding, for
// top-k and top-p settings that drop true tokens (−Inf) and ones that
// keep them. Every other score is the same bits.
func TestDeviceScoringMatchesHost(t *testing.T) {
	docs := opticksDocs(t, 4, 48)
	g := newModel(t, model.Config{Preset: "nano", Vocab: 256, Context: 64, Seed: 21})
	memorize(t, g, [][]int32{docs[0].IDs, docs[1].IDs}, 120, 0.3)
	type scheme struct {
		decoding string
		temp     float64
		k        int
		p        float64
	}
	var zero, inf, finite int
	for _, sc := range []scheme{{DecodeGreedy, 1, 0, 1}, {DecodeSample, 1, 0, 1}, {DecodeSample, 0.9, 8, 0.95}, {DecodeSample, 1.2, 0, 0.5}, {DecodeSample, 0.7, 1, 1}} {
		for _, suffix := range []int{4, 16} {
			cfg := DefaultConfig()
			cfg.Mode, cfg.Prefix, cfg.Suffix = ModeFixed, 16, suffix
			cfg.Decoding, cfg.Temperature, cfg.TopK, cfg.TopP = sc.decoding, sc.temp, sc.k, sc.p
			cfg.BatchSize = 3 // two batches
			prompts := BuildPrompts(cfg, docs, 48)
			cfg.DecodeOn = OnHost
			want, err := scoreAll(context.Background(), g, cfg, prompts)
			if err != nil {
				t.Fatal(err)
			}
			cfg.DecodeOn = OnDevice
			if opt := (decoder{cfg: cfg}).spanOptions(g.Device()); opt.Logits {
				t.Fatalf("%+v: the device sampler still copies the logits", sc)
			}
			got, err := scoreAll(context.Background(), g, cfg, prompts)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				a, b := got[i], want[i]
				if !reflect.DeepEqual(a.losses, b.losses) || math.Float64bits(a.minKPP) != math.Float64bits(b.minKPP) {
					t.Errorf("%+v doc %d: losses or Min-K%%++ differ", sc, i)
				}
				same := math.Float64bits(a.pExtract) == math.Float64bits(b.pExtract)
				if sc.decoding == DecodeSample && !math.IsInf(b.pExtract, 0) {
					same = math.Abs(a.pExtract-b.pExtract) <= 1e-9*math.Max(1, math.Abs(b.pExtract))
				}
				if !same {
					t.Errorf("%+v, suffix %d, doc %d: p_extract %.15g on the device, %.15g on the host", sc, suffix, i, a.pExtract, b.pExtract)
				}
				switch {
				case b.pExtract == 0:
					zero++
				case math.IsInf(b.pExtract, -1):
					inf++
				default:
					finite++
				}
			}
		}
	}
	if zero == 0 || inf == 0 || finite == 0 {
		t.Errorf("p_extract 0 in %d cases, −Inf in %d, in between in %d: want each at least once", zero, inf, finite)
	}
	t.Logf("p_extract 0 in %d cases, −Inf in %d, in between in %d", zero, inf, finite)
}

// Beam search ranked on the device (engine.Stepper.ContinueBeams) must
// keep the beams the host's search keeps, best first, with their summed
// log-probabilities to rounding, at widths 1, 2 and 4, in float32 and in
// bfloat16, whose logits tie often among a beam's most likely tokens;
// under an approximation the device path declines and the host's beams
// come back.
func TestDeviceBeamsMatchHost(t *testing.T) {
	for _, prec := range []string{precision.FP32, precision.BF16} {
		g := tiedModel(t)
		if err := precision.Set(g, prec, false); err != nil {
			t.Fatal(err)
		}
		t.Run(prec, func(t *testing.T) { deviceBeamsMatchHost(t, g) })
	}
	t.Run("tied at the top", func(t *testing.T) { deviceBeamsMatchHost(t, topTiedModel(t)) })
}

// topTiedModel is tiedModel with its final norm's gain zero but in one
// dimension, where the embedding (the output rows too) holds +1 for
// tokens 16 to 23 and −1 for tokens 24 to 31, the rest staying near 0:
// every step's eight most likely tokens tie (16 to 23 where that
// dimension of the last hidden state is positive, 24 to 31 where it is
// negative), so a beam's candidates are decided by the tie rule alone.
func topTiedModel(t *testing.T) *model.GPT {
	g := tiedModel(t)
	ps := g.Params()
	torchx.NoGrad(func() {
		gain := ps[len(ps)-1].Tensor
		gain.MustFill_(ts.FloatScalar(0))
		one := gain.MustNarrow(0, 0, 1, false)
		one.MustFill_(ts.FloatScalar(1))
		one.MustDrop()
		for _, r := range []struct {
			from int64
			v    float64
		}{{16, 1}, {24, -1}} {
			cell := ps[0].Tensor.MustNarrow(0, r.from, 8, false).MustNarrow(1, 0, 1, true)
			cell.MustFill_(ts.FloatScalar(r.v))
			cell.MustDrop()
		}
	})
	return g
}

func deviceBeamsMatchHost(t *testing.T, g *model.GPT) {
	prompts := [][]int32{[]int32("Of the Refractions"), []int32("Light is"), []int32("x")}
	const n = 10
	for name, mk := range exactAndKV8(t, g) {
		for _, width := range []int{1, 2, 4} {
			cfg := DefaultConfig()
			cfg.Decoding, cfg.Beams = DecodeBeam, width
			cfg.DecodeOn = OnHost
			want, err := decoder{cfg: cfg}.beamGuesses(mk(), prompts, n, width)
			if err != nil {
				t.Fatal(err)
			}
			lm := mk().(deviceDecoder)
			got, ok, err := beamGuessesOnDevice(lm, prompts, n, width)
			if err != nil {
				t.Fatal(err)
			}
			if name == "kv8" {
				if ok {
					t.Errorf("kv8, width %d: beam search on the device under an approximation", width)
				}
				cfg.DecodeOn = OnDevice
				if got, err = (decoder{cfg: cfg}).beamGuesses(mk(), prompts, n, width); err != nil {
					t.Fatal(err)
				}
			} else if !ok {
				t.Fatalf("width %d: the device path declined", width)
			}
			for p := range want {
				for j := range want[p] {
					a, b := got[p][j], want[p][j]
					if !slices.Equal(a.IDs, b.IDs) || a.Sample != b.Sample || math.Abs(a.LogProb-b.LogProb) > 1e-9*math.Max(1, math.Abs(b.LogProb)) {
						t.Errorf("%s, width %d, prompt %d beam %d: device %v (%.15g), host %v (%.15g)", name, width, p, j, a.IDs, a.LogProb, b.IDs, b.LogProb)
					}
				}
			}
		}
	}
}
