package plots

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

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
		if !slices.ContainsFunc(xy, func(q plotter.XY) bool { return q != xy[0] }) {
			// One point (no member extracted: every guess at recall 0,
			// precision 0) is a line of no length, which draws nothing:
			// the figure was an empty box.
			sc, err := plotter.NewScatter(xy[:1])
			if err != nil {
				return nil, err
			}
			sc.GlyphStyle.Color, sc.GlyphStyle.Shape, sc.GlyphStyle.Radius = colorAt(ri), draw.CircleGlyph{}, vg.Points(3)
			p.Add(sc)
		}
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
	// A little below 0 on both axes: with no guess exact the whole curve
	// is at 0, and lay hidden under the axis lines.
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = -0.02, 1, -0.03, 1.05
	p.Add(hgrid())
	return p, nil
}

// memoMetrics are the curves of the memorization-over-training figure:
// columns of memorization.parquet (members' rows), drawn with error bars
// from their _lo and _hi columns. The rates go in the upper panel, the
// AUC (another kind of number) in the lower.
var memoMetrics = []struct {
	label string
	auc   bool
	value func(m *eval.Memorization) (y, lo, hi float64)
}{
	{"exact match", false, func(m *eval.Memorization) (float64, float64, float64) {
		return m.ExactMatch, m.ExactMatchLo, m.ExactMatchHi
	}},
	{"RougeL", false, func(m *eval.Memorization) (float64, float64, float64) { return m.RougeL, m.RougeLLo, m.RougeLHi }},
	{"membership AUC (loss attack)", true, func(m *eval.Memorization) (float64, float64, float64) {
		return m.LossAUC, m.LossAUCLo, m.LossAUCHi
	}},
}

// memorizationCurves draws, against the training step, the members'
// exact match and RougeL in the upper panel and the loss attack's AUC
// in the lower, from memorization.parquet (eval's summaries of each
// checkpoint): one colour per metric for one run; for several (a sweep:
// standard vs goldfish), one colour per run and one dash pattern per
// metric.
func memorizationCurves(cfg Config, runs []*runData) (*figure, error) {
	p := newPlot(cfg, "Memorization over training", "", "rate (members)")
	lower := newPlot(cfg, "", "optimizer step", "membership AUC").Plot
	added, aucs := 0, 0
	drawnRun, drawnMetric := make([]bool, len(runs)), make([]bool, len(memoMetrics))
	// Runs measured at the same steps are nudged apart on x, each with a
	// marker of its own, so that one run's points at 0 do not hide
	// another's there (a figure review's finding).
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range runs {
		for i := range r.Memorization {
			lo, hi = math.Min(lo, float64(r.Memorization[i].Step)), math.Max(hi, float64(r.Memorization[i].Step))
		}
	}
	// Runs attacked at the same steps sit side by side: 0.8 % of the
	// range (a third of a step) stacked their markers and bars. Each run
	// moves 2.5 % of the range, less where the checkpoints are closer,
	// so a step's group stays within half the gap to the next.
	steps := map[int64]bool{}
	for _, r := range runs {
		for i := range r.Memorization {
			steps[r.Memorization[i].Step] = true
		}
	}
	shift := 0.025 * (hi - lo)
	if len(steps) > 1 {
		shift = math.Min(shift, (hi-lo)/float64(len(steps)-1)/(2*float64(len(runs))))
	}
	nudge := func(ri int) float64 {
		if len(runs) < 2 || !(hi > lo) {
			return 0
		}
		return (float64(ri) - float64(len(runs)-1)/2) * shift
	}
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}}
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
				e.add(float64(row.Step)+nudge(ri), y, l, h)
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
			c := colorAt(mi)
			if len(runs) > 1 {
				c = colorAt(ri)
				ln.LineStyle.Dashes = dashes[mi%len(dashes)]
				pts.Shape = shapes[ri%len(shapes)]
			}
			ln.LineStyle.Color, ln.LineStyle.Width = c, vg.Points(1.5)
			pts.Color, bars.LineStyle.Color = c, c
			if m.auc {
				lower.Add(ln, pts, bars)
				aucs++
			} else {
				p.Add(ln, pts, bars)
			}
			if len(runs) == 1 {
				p.addLegend(m.label, ln, pts)
			}
			drawnRun[ri], drawnMetric[mi] = true, true
			added++
		}
	}
	if len(runs) > 1 && added > 0 {
		// A colour per run and a dash per metric, each named once: six
		// "run: metric" lines were too wide for two legend columns.
		for ri, r := range runs {
			if drawnRun[ri] {
				marker := &plotter.Scatter{GlyphStyle: draw.GlyphStyle{Color: colorAt(ri), Radius: vg.Points(2.5), Shape: shapes[ri%len(shapes)]}}
				p.addLegend(r.Label, legendLine(colorAt(ri), nil), marker)
			}
		}
		for mi, m := range memoMetrics {
			if drawnMetric[mi] {
				p.addLegend(m.label, legendLine(grey, dashes[mi%len(dashes)]))
			}
		}
	}
	if added == 0 {
		return nil, nil
	}
	p.Y.Min, p.Y.Max = 0, 1.05
	p.Add(hgrid())
	if aucs == 0 {
		// No lower panel (no controls, or no AUC): the step axis is this
		// one's, and its label went with the panel.
		p.X.Label.Text = "optimizer step"
		return p, nil
	}
	// One x range for both panels, so that a step lines up.
	lo, hi = math.Min(p.X.Min, lower.X.Min), math.Max(p.X.Max, lower.X.Max)
	p.X.Min, p.X.Max, lower.X.Min, lower.X.Max = lo, hi, lo, hi
	lower.Y.Min, lower.Y.Max = 0, 1.05
	chance, err := plotter.NewLine(plotter.XYs{{X: lo, Y: 0.5}, {X: hi, Y: 0.5}})
	if err != nil {
		return nil, err
	}
	// Light, thin and named where it ends: the legend's grey lines are the
	// metrics, dashed by metric, and a grey dashed chance line read as one.
	chance.LineStyle.Color, chance.LineStyle.Width = color.Gray{Y: 170}, vg.Points(0.75)
	name, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: hi, Y: 0.5}}, Labels: []string{"chance"}})
	if err != nil {
		return nil, err
	}
	name.TextStyle[0].Font.Size = vg.Points(cfg.FontSize * 0.7)
	name.TextStyle[0].Color = grey
	name.TextStyle[0].XAlign = draw.XRight
	name.Offset = vg.Point{X: vg.Points(-2), Y: vg.Points(2)}
	lower.Add(hgrid(), chance, name)
	p.lower = lower
	return p, nil
}

// legendLine is a legend thumbnail: a line of colour c and dash pattern.
func legendLine(c color.Color, dash []vg.Length) plot.Thumbnailer {
	return &plotter.Line{LineStyle: draw.LineStyle{Color: c, Width: vg.Points(1.5), Dashes: dash}}
}
