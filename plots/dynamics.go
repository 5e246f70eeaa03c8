package plots

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/runfiles"
)

// readOptional reads a Parquet file eval writes only for some attacks
// with read; nil when it is absent.
func readOptional[T any](path string, read func(string) ([]T, error)) ([]T, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	rows, err := read(path)
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	return rows, nil
}

// loadDynamics reads a run's guess_scores.parquet (extract.samples > 1)
// and memorization.parquet (extract.checkpoints), when eval wrote them.
func (r *runData) loadDynamics() error {
	var err error
	if r.GuessScores, err = readOptional(eval.GuessScoresPath(filepath.Join(r.Dir, runfiles.ScoresFile)), eval.GuessScores.ReadParquet); err != nil {
		return err
	}
	r.Memorization, err = readOptional(filepath.Join(r.Dir, runfiles.MemorizationFile), eval.ReadMemorization)
	return err
}

// memberGuesses are the member rows of guess_scores.parquet.
func (r *runData) memberGuesses() []eval.GuessScore {
	var out []eval.GuessScore
	for _, g := range r.GuessScores {
		if g.Split == splitTarget {
			out = append(out, g)
		}
	}
	return out
}

// prCurves draws the extraction benchmark's precision–recall curve of each
// run with many guesses per document: eval.PRCurve over the members'
// guesses (the curve whose recall at <= 100 wrong guesses summary.json
// holds, quoted in the legend).
func prCurves(cfg Config, runs []*runData) (*figure, error) {
	p := newPlot(cfg, "Extraction with many guesses: precision–recall", "recall (members extracted)", "precision (guesses exact)")
	added := 0
	for ri, r := range runs {
		g := r.Summary.Guesses
		if g == nil || r.GuessScores == nil {
			continue
		}
		curve := eval.PRCurve(r.memberGuesses(), g.Members.N)
		if len(curve) == 0 {
			continue
		}
		xy := make(plotter.XYs, len(curve))
		for i, q := range curve {
			xy[i] = plotter.XY{X: q.Recall, Y: q.Precision}
		}
		ln, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		ln.LineStyle.Color, ln.LineStyle.Width, ln.LineStyle.Dashes = colorAt(ri), vg.Points(1.5), dashes[ri%len(dashes)]
		p.Add(ln)
		label := fmt.Sprintf("%d guesses/doc: recall %.2f at ≤ %d wrong", g.Samples, float64(g.RecallAtMaxWrong), g.MaxWrong)
		if len(runs) > 1 {
			label = r.Label + ", " + label
		}
		p.addLegend(label, ln)
		added++
	}
	if added == 0 {
		return nil, nil
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1.05
	p.Add(hgrid())
	return p, nil
}

// memoMetrics are the curves of the memorization-over-training figure:
// columns of memorization.parquet (members' rows), drawn with error bars
// from their _lo and _hi columns.
var memoMetrics = []struct {
	label string
	value func(m *eval.Memorization) (y, lo, hi float64)
}{
	{"exact match", func(m *eval.Memorization) (float64, float64, float64) {
		return m.ExactMatch, m.ExactMatchLo, m.ExactMatchHi
	}},
	{"RougeL", func(m *eval.Memorization) (float64, float64, float64) { return m.RougeL, m.RougeLLo, m.RougeLHi }},
	{"membership AUC (loss attack)", func(m *eval.Memorization) (float64, float64, float64) { return m.LossAUC, m.LossAUCLo, m.LossAUCHi }},
}

// memorizationCurves draws exact match, RougeL and the loss attack's AUC
// of the members against the training step, from memorization.parquet
// (eval's summaries of each checkpoint): one colour per metric for one
// run; for several (a sweep: standard vs goldfish), one colour per run and
// one dash pattern per metric.
func memorizationCurves(cfg Config, runs []*runData) (*figure, error) {
	p := newPlot(cfg, "Memorization over training", "optimizer step", "rate / AUC (members)")
	added := 0
	for ri, r := range runs {
		for mi, m := range memoMetrics {
			e := &errPoints{}
			for i := range r.Memorization {
				row := &r.Memorization[i]
				y, l, h := m.value(row)
				if row.Split != splitTarget || math.IsNaN(y) {
					continue
				}
				if math.IsNaN(l) || math.IsNaN(h) {
					l, h = y, y
				}
				e.add(float64(row.Step), y, l, h)
			}
			if e.Len() == 0 {
				continue
			}
			ln, pts, err := plotter.NewLinePoints(e)
			if err != nil {
				return nil, err
			}
			bars, err := plotter.NewYErrorBars(e)
			if err != nil {
				return nil, err
			}
			c, label := colorAt(mi), m.label
			if len(runs) > 1 {
				c, label = colorAt(ri), r.Label+": "+m.label
				ln.LineStyle.Dashes = dashes[mi%len(dashes)]
			}
			ln.LineStyle.Color, ln.LineStyle.Width = c, vg.Points(1.5)
			pts.Color, bars.LineStyle.Color = c, c
			p.Add(ln, pts, bars)
			p.addLegend(label, ln, pts)
			added++
		}
	}
	if added == 0 {
		return nil, nil
	}
	p.Y.Min, p.Y.Max = 0, 1.05
	p.Add(hgrid())
	return p, nil
}
