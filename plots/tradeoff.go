package plots

import (
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// tradeoffFigure plots memorization against utility, one point per run of
// a comparison of mitigations: the members' exact-match rate (eval's,
// with its Wilson interval) against the final validation loss on held-out
// text (lower is more useful), each run its own labelled point, so that a
// mitigation that buys less memorization with more loss sits up the
// x axis. Drawn for comparisons in which a run trained with DP-SGD (the
// table's DP columns), from the runs that have a validation loss; nil
// with fewer than two.
func tradeoffFigure(cfg Config, runs []*runData) (*figure, error) {
	dp := false
	type point struct {
		name string
		pts  *errPoints
	}
	var points []point
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range runs {
		dp = dp || r.Summary.DP != nil
		v := finalValLoss(r)
		m := r.Summary.Members
		if math.IsNaN(v) || m.N == 0 {
			continue // no validation loss, or no member attacked: no point
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
		pts := &errPoints{}
		pts.add(v, 100*float64(m.ExactMatch), 100*float64(m.ExactMatchWilsonCI[0]), 100*float64(m.ExactMatchWilsonCI[1]))
		points = append(points, point{r.Label, pts})
	}
	if !dp || len(points) < 2 {
		return nil, nil
	}
	p := newPlot(cfg, "Memorization against utility", "final validation loss (nats/token, held-out text; lower is better)", "targets extracted (exact match %, 95 % CI)")
	for i, pt := range points {
		sc, err := plotter.NewScatter(pt.pts)
		if err != nil {
			return nil, err
		}
		eb, err := plotter.NewYErrorBars(pt.pts)
		if err != nil {
			return nil, err
		}
		c := colorAt(i)
		shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}}
		sc.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(3.5), Shape: shapes[i%len(shapes)]}
		eb.LineStyle.Color, eb.CapWidth = c, vg.Points(4)
		p.Add(eb, sc)
		p.addLegend(pt.name, sc)
	}
	padAxis(&p.X, lo, hi, 0.08, 0.05, false)
	p.Y.Min, p.Y.Max = 0, 130
	p.Y.Tick.Marker = percentTicks
	p.Add(hgrid())
	return p, nil
}
