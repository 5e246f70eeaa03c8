package plots

import (
	"fmt"
	"math"

	"github.com/memo-research/memo/eval"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// thresholdVsParams plots each run's repetition threshold (eval's) against
// its parameter count: colour is the loss (standard, goldfish), solid
// circles exact match and dashed squares RougeL >= 0.5, bars the threshold's
// interval. A threshold above the largest count tested is drawn at twice
// that count, on a row labelled "> max". nil without two model sizes.
func thresholdVsParams(cfg Config, runs []*runData) (*figure, error) {
	rows := thresholdRows(runs)
	sizes, maxReps, minReps := map[int64]bool{}, 0, math.MaxInt
	for _, w := range rows {
		if w.params > 0 {
			sizes[w.params] = true
		}
		maxReps = max(maxReps, w.t.MaxRepetitions)
	}
	if len(sizes) < 2 {
		return nil, nil
	}
	for _, r := range runs {
		for _, b := range r.Summary.ByRepetitions {
			if b.N > 0 && b.Repetitions > 0 {
				minReps = min(minReps, b.Repetitions)
			}
		}
	}
	above := 2 * float64(maxReps)
	y := func(v *int) float64 {
		if v == nil {
			return above
		}
		return float64(*v)
	}
	var losses []string
	seen := map[string]bool{}
	for _, w := range rows {
		if !seen[w.loss] {
			seen[w.loss] = true
			losses = append(losses, w.loss)
		}
	}
	p := newPlot(cfg, "Repetitions until half the targets are extracted", "parameters", "repetitions (pointwise Wilson 95 % CI)")
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	var ticks plot.ConstantTicks
	for r := minReps; r <= maxReps; r *= 2 {
		ticks = append(ticks, plot.Tick{Value: float64(r), Label: fmt.Sprint(r)})
	}
	ticks = append(ticks, plot.Tick{Value: above, Label: fmt.Sprintf("> %d", maxReps)})
	p.Y.Tick.Marker = ticks
	// One tick per model size, named by its preset.
	var xt plot.ConstantTicks
	named := map[int64]bool{}
	minP, maxP := int64(math.MaxInt64), int64(0)
	for _, w := range rows {
		if w.params > 0 && !named[w.params] {
			named[w.params] = true
			minP, maxP = min(minP, w.params), max(maxP, w.params)
			xt = append(xt, plot.Tick{Value: float64(w.params), Label: fmt.Sprintf("%s\n%.3gM", w.model, float64(w.params)/1e6)})
		}
	}
	p.X.Tick.Marker = xt
	p.X.Min, p.X.Max = float64(minP)/1.6, float64(maxP)*1.6
	measures := []struct {
		name  string
		get   func(*eval.RepetitionThreshold) eval.Threshold
		shape draw.GlyphDrawer
		open  draw.GlyphDrawer // the censored points' shape
		dash  []vg.Length
		nudge float64
	}{
		{"exact match", func(t *eval.RepetitionThreshold) eval.Threshold { return t.ExactMatch }, draw.CircleGlyph{}, draw.RingGlyph{}, nil, -1},
		{"RougeL ≥ 0.5", func(t *eval.RepetitionThreshold) eval.Threshold { return t.RougeL }, draw.SquareGlyph{}, draw.BoxGlyph{}, dashes[1], 1},
	}
	for li, l := range losses {
		for _, m := range measures {
			// A threshold past every count tested is censored: drawn as the
			// measure's open shape (ring, box) at "> max", joined to no
			// measured one (a line into it would draw a slope the data do
			// not have).
			pts, censored := &errPoints{}, &errPoints{}
			for _, w := range rows {
				if w.loss != l || w.params <= 0 {
					continue
				}
				t := m.get(w.t)
				x := float64(w.params) * math.Pow(2, 0.06*seriesOffset(li, len(losses), m.nudge))
				into := pts
				if t.Repetitions == nil {
					into = censored
				}
				into.add(x, y(t.Repetitions), y(t.CI[0]), y(t.CI[1]))
			}
			label := l + ", " + m.name
			if pts.Len() > 0 {
				if err := addErrSeries(p, pts, colorAt(li), m.dash, m.shape, label); err != nil {
					return nil, err
				}
			}
			if censored.Len() > 0 {
				sc, bars, err := scatterBars(censored)
				if err != nil {
					return nil, err
				}
				sc.GlyphStyle = draw.GlyphStyle{Color: colorAt(li), Radius: vg.Points(3.5), Shape: m.open}
				bars.LineStyle.Color, bars.CapWidth = colorAt(li), vg.Points(5)
				p.Add(bars, sc)
				if pts.Len() == 0 {
					p.addLegend(label+" (past every count tested)", sc)
				}
			}
		}
	}
	p.Y.Min, p.Y.Max = float64(minReps)/1.5, above*1.5
	p.Add(hgrid())
	return p, nil
}

// seriesOffset places the series of loss li (of n) and measure nudge (-1
// or +1) on x, in steps of one: each loss's two measures side by side,
// the losses apart, all centred on the model's size, so that equal values
// stay visible. Offsets 2li - (n-1) ± 1 gave a loss's RougeL the next
// loss's exact match's place.
func seriesOffset(li, n int, nudge float64) float64 {
	return nudge + 2*(2*float64(li)-float64(n-1))
}
