package plots

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/memo-research/memo/eval"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// approxRow is one approximate attack of the approximate-inference study,
// every number from the run's summary.json (eval).
type approxRow struct {
	run, loss string
	k         int
	a         *eval.ApproxSummary
	members   eval.SplitSummary
	controls  eval.SplitSummary
}

// approxRows are the runs whose summary has "approx", the standard loss
// first, then in run order.
func approxRows(runs []*runData) []approxRow {
	var rows []approxRow
	for _, r := range runs {
		if a := r.Summary.Approx; a != nil {
			rows = append(rows, approxRow{run: r.Name, loss: r.goldfishLabel(), k: r.K, a: a, members: r.Summary.Members, controls: r.Summary.Controls})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].k < rows[j].k })
	return rows
}

var approxHeader = []string{"run", "loss", "method", "targets", "exact match % [95% CI]", "RougeL", "controls exact %",
	"tokens agreeing with exact", "fully exact %", "attention mass kept", "KV bytes / token", "QuantSpec acceptance %"}

func (w approxRow) cells() []string {
	a := w.a
	return []string{w.run, w.loss, a.Method, fmt.Sprint(w.members.N),
		interval(float64(w.members.ExactMatch), w.members.ExactMatchWilsonCI, pct), num(float64(w.members.RougeL), 3),
		pct(float64(w.controls.ExactMatch)), num(float64(a.ExactAgree), 1), pct(float64(a.FullAgreement)),
		num(float64(a.AttnMassKept), 3), num(float64(a.KVBytesPerToken), 0), pct(float64(a.SpecAccept))}
}

// writeApproxCSV writes approx.csv: approx.md's numbers unrounded, in
// summary.json's names (approx.exact_agree, …), one column a number as
// the report's other CSV tables have them (csvFloat).
func writeApproxCSV(out io.Writer, rows []approxRow) error {
	cw := csv.NewWriter(out)
	if err := cw.Write([]string{"run", "loss", "method", "targets", "exact_match", "exact_match_wilson_ci_low", "exact_match_wilson_ci_high",
		"rougeL", "controls_exact_match", "exact_agree", "full_agreement", "attn_mass_kept", "kv_bytes_per_token", "spec_accept"}); err != nil {
		return err
	}
	f := func(v eval.Num) string { return csvFloat(float64(v)) }
	for _, w := range rows {
		a, m := w.a, w.members
		if err := cw.Write([]string{w.run, w.loss, a.Method, strconv.Itoa(m.N), f(m.ExactMatch), f(m.ExactMatchWilsonCI[0]), f(m.ExactMatchWilsonCI[1]),
			f(m.RougeL), f(w.controls.ExactMatch), f(a.ExactAgree), f(a.FullAgreement), f(a.AttnMassKept), f(a.KVBytesPerToken), f(a.SpecAccept)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// writeApproxTables writes approx.md and approx.csv into dir when some
// run is an approximate attack.
func writeApproxTables(dir string, runs []*runData) ([]string, error) {
	rows := approxRows(runs)
	if len(rows) == 0 {
		return nil, nil
	}
	md := func(w io.Writer) error {
		var b strings.Builder
		b.WriteString("| " + strings.Join(approxHeader, " | ") + " |\n|" + strings.Repeat(" --- |", len(approxHeader)) + "\n")
		for _, r := range rows {
			b.WriteString("| " + strings.Join(r.cells(), " | ") + " |\n")
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	csvOut := func(w io.Writer) error { return writeApproxCSV(w, rows) }
	return writeFiles(dir, namedWriter{"approx.csv", csvOut}, namedWriter{"approx.md", md})
}

// approxFigure plots the members' exact-match rate (eval's, with its
// Wilson interval) against x of each approximate attack, one series per
// loss; logX for byte counts. Points whose x is NaN (unmeasured) are left
// out; nil without two measured points.
func approxFigure(cfg Config, runs []*runData, title, xlabel string, x func(*eval.ApproxSummary) float64, logX bool) (*figure, error) {
	rows := approxRows(runs)
	var losses []string
	byLoss := map[string]*errPoints{}
	methods := map[string][]string{} // each point's method, by loss
	n := 0
	for _, w := range rows {
		xv := x(w.a)
		if math.IsNaN(xv) || (logX && xv <= 0) || w.members.N == 0 {
			continue
		}
		pts := byLoss[w.loss]
		if pts == nil {
			pts = &errPoints{}
			byLoss[w.loss] = pts
			losses = append(losses, w.loss)
		}
		m := w.members
		pts.add(xv, 100*float64(m.ExactMatch), 100*float64(m.ExactMatchWilsonCI[0]), 100*float64(m.ExactMatchWilsonCI[1]))
		methods[w.loss] = append(methods[w.loss], w.a.Method)
		n++
	}
	if n < 2 {
		return nil, nil
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, pts := range byLoss {
		for _, v := range pts.xs {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	p := newPlot(cfg, title, xlabel, "targets extracted (exact match %, 95 % CI)")
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = countTicks(lo, hi)
	}
	for li, l := range losses {
		pts := byLoss[l]
		sc, eb, err := scatterBars(pts)
		if err != nil {
			return nil, err
		}
		c := colorAt(li)
		sc.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(3), Shape: []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}}[li%2]}
		eb.LineStyle.Color, eb.CapWidth = c, vg.Points(4)
		p.Add(eb, sc)
		p.addLegend(l, sc)
	}
	// The first loss's points name their method (kv8, loki-r4-k0.5): the
	// approximations are what the figure compares. Added last, so that no
	// series is drawn over them.
	lbs, err := methodLabels(byLoss[losses[0]], methods[losses[0]], cfg, lo, hi, logX)
	if err != nil {
		return nil, err
	}
	p.Add(lbs...)
	if logX {
		padAxis(&p.X, lo, hi, 0.15, 0, true)
	} else {
		padAxis(&p.X, lo, hi, 0.04, 0, false)
	}
	p.Y.Min, p.Y.Max = -3, 105
	p.Y.Tick.Marker = percentTicks
	p.Add(hgrid())
	return p, nil
}

// methodLabels writes each point's method beside it, small: to its right,
// or to its left for a point in the last fifth of the x range, where the
// text would run off the axes (lo and hi are the x range of every point).
// Methods at one point, or near enough that their labels would print over
// each other (loki-r4-k0.5 at 28,180 and sift-q0.5 at 28,529 KV bytes),
// share one label, a line each: hanging below a point in the upper half,
// rising above one in the lower half (a list hanging below 0 % took half
// the axes' height from the data).
func methodLabels(pts *errPoints, methods []string, cfg Config, lo, hi float64, logX bool) ([]plot.Plotter, error) {
	pos := func(v float64) float64 { return v }
	if logX {
		pos = math.Log
	}
	span := pos(hi) - pos(lo)
	type group struct {
		x, y  float64
		names []string
	}
	var groups []*group
	for i := 0; i < pts.Len(); i++ {
		x, y := pts.XY(i)
		at := slices.IndexFunc(groups, func(g *group) bool {
			return math.Abs(pos(g.x)-pos(x)) <= 0.03*span && math.Abs(g.y-y) <= 6
		})
		if at < 0 {
			groups = append(groups, &group{x: x, y: y})
			at = len(groups) - 1
		}
		groups[at].names = append(groups[at].names, methods[i])
	}
	var out []plot.Plotter
	for _, g := range groups {
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: g.x, Y: g.y}}, Labels: []string{strings.Join(g.names, "\n")}})
		if err != nil {
			return nil, err
		}
		st := &lb.TextStyle[0]
		st.Font.Size = vg.Points(cfg.FontSize * 0.7)
		st.Color = grey
		dx, dy := 5.0, -cfg.FontSize*0.25
		st.XAlign = draw.XLeft
		if span > 0 && pos(g.x)-pos(lo) > 0.8*span {
			dx, st.XAlign = -5, draw.XRight
		}
		if len(g.names) > 1 {
			if g.y < 50 {
				st.YAlign, dy = draw.YBottom, cfg.FontSize*0.25 // a list rises above its point
			} else {
				st.YAlign = draw.YTop // a list hangs below its point
			}
		}
		lb.Offset = vg.Point{X: vg.Points(dx), Y: vg.Points(dy)}
		out = append(out, lb)
	}
	return out, nil
}

// countTicks labels a log axis from lo to hi at 1, 2 and 5 times each
// power of ten (10k, 20k, 50k): a span of under a decade otherwise gets
// the one label "1e+04".
func countTicks(lo, hi float64) plot.ConstantTicks {
	return logTicks(lo/1.5, hi*1.5, []float64{1, 2, 5}, siCount)
}

// siCount writes a count with a k, M or G suffix: 20000 is "20k".
func siCount(v float64) string {
	for _, u := range []struct {
		div  float64
		name string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if v >= u.div {
			return strconv.FormatFloat(v/u.div, 'g', 3, 64) + u.name
		}
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
