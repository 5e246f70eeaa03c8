package plots

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/provenance"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/loss"
)

// synthRun describes a synthetic run directory: how many targets are
// memorized and how well the loss separates members from non-members.
type synthRun struct {
	name      string
	k         int
	h         int // goldfish context width; 0: 13
	preset    string
	targets   int
	exact     int            // targets extracted exactly
	rouge     float64        // mean target RougeL
	reps      []int          // repetition count per target, cycled
	exactReps func(int) bool // overrides exact: memorized at this repetition count
	steps     int
	params    int64 // the model's parameter count, as extract records it
	// unattacked marks the last controls as skipped by the attack.
	unattacked int
	dp         *provenance.DPRecord // summary.json's dp: trained with DP-SGD
}

// synthSpecs holds each synthetic run's spec by directory: what
// experiments.ReadPlotsSpec reads from the config.toml of a real run.
var synthSpecs sync.Map

// readSynthSpec is the SpecReader of synthetic runs.
func readSynthSpec(dir string) (*RunSpec, error) {
	if s, ok := synthSpecs.Load(filepath.Clean(dir)); ok {
		return s.(*RunSpec), nil
	}
	return nil, nil
}

func writeSynthRun(t *testing.T, dir string, s synthRun, seed uint64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h := s.h
	if h == 0 {
		h = 13
	}
	synthSpecs.Store(filepath.Clean(dir), &RunSpec{
		Goldfish: loss.Config{Strategy: loss.StrategyHashTable, K: s.k, H: h},
		Model:    s.preset,
		Value: func(key string) any {
			switch key {
			case "goldfish.k":
				return s.k
			case "goldfish.h":
				return h
			case "model.preset":
				return s.preset
			}
			return nil
		},
	})
	rng := rand.New(rand.NewPCG(seed, 7))
	// The scores and summary are eval's own output for these rows, so the
	// report is tested against what eval really writes.
	var rows []eval.Score
	sep := 1.5 * float64(s.exact+1) / float64(s.targets+1)
	for i := 0; i < 2*s.targets; i++ {
		split, reps := "target", 1
		if len(s.reps) > 0 {
			reps = s.reps[i%len(s.reps)]
		}
		exact := i < s.exact
		if s.exactReps != nil {
			exact = s.exactReps(reps)
		}
		rouge := math.Min(1, math.Max(0, s.rouge+0.1*rng.NormFloat64()))
		if exact {
			rouge = 1
		}
		loss := 3 - sep + 0.5*rng.NormFloat64()
		if i >= s.targets {
			split, exact, reps, rouge, loss = "control", false, 0, math.Max(0, 0.25+0.08*rng.NormFloat64()), 3+0.5*rng.NormFloat64()
		}
		status := eval.StatusOK
		if i >= 2*s.targets-s.unattacked {
			status, exact, rouge = "too short", false, math.NaN()
		}
		nan := math.NaN()
		rows = append(rows, eval.Score{
			DocID: int64(i), Split: split, Title: fmt.Sprintf("doc %d", i), Status: status, Repetitions: reps,
			Match:  eval.Match{Exact: exact, TokenAccuracy: nan},
			RougeL: rouge, RougeLPrecision: nan, RougeLRecall: nan, Rouge1: nan, Rouge2: nan,
			Loss: loss, ZlibRatio: loss / 400, MinK: nan, RefLoss: nan, RefDiff: nan,
			// The newer statistics, each pointing its own way: Min-K%++ and
			// ReCaLL higher for members, the gradient norm lower.
			MinKPP: 3 - loss + 0.3*rng.NormFloat64(), PExtract: -2 * loss,
			Stats: map[string]float64{"recall": 1 + (3-loss)/10 + 0.03*rng.NormFloat64(), "grad_norm": loss + 0.3*rng.NormFloat64()},
		})
		if exact {
			rows[len(rows)-1].PExtract = 0
		}
	}
	sum := eval.Summarize(rows, eval.DefaultConfig(), loss.Config{Strategy: loss.StrategyHashTable, K: s.k, H: 13})
	sum.ModelParams = s.params
	sum.DP = s.dp
	if err := eval.WriteResults(rows, sum, filepath.Join(dir, "scores.parquet"), filepath.Join(dir, "summary.json")); err != nil {
		t.Fatal(err)
	}

	// metrics.arrow through train's own writer; losses rounded to float32
	// as the synthetic curves always were.
	var metrics []runfiles.Metric
	for st := 1; st <= s.steps; st++ {
		base := 0.2 + 8*math.Exp(-float64(st)/60) + 0.15*rng.NormFloat64()
		kept, dropped := base, float32(math.NaN())
		if s.k > 0 {
			dropped = float32(base + 2.5*(1-math.Exp(-float64(st)/100)))
			kept = base
		}
		all := kept
		if s.k > 0 {
			all = kept*(1-1/float64(s.k)) + float64(dropped)/float64(s.k)
		}
		val := math.NaN()
		if st%100 == 0 {
			val = base + 1.5
		}
		metrics = append(metrics, runfiles.Metric{Step: int64(st), LossKept: float64(float32(kept)), LossAll: float64(float32(all)),
			LossDropped: float64(dropped), LR: 1e-3, GradNorm: math.NaN(), TokensPerS: math.NaN(), ValLoss: val, ElapsedS: math.NaN()})
	}
	if err := runfiles.WriteMetrics(filepath.Join(dir, runfiles.MetricsFile), metrics); err != nil {
		t.Fatal(err)
	}
}

type synthPoint struct {
	Name   string         `json:"name"`
	Dir    string         `json:"dir"`
	Values map[string]any `json:"values"`
}

func writeSweepIndex(t *testing.T, dir, name string, axes []string, pts []synthPoint) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"name": name, "axes": axes, "points": pts})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sweep.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
