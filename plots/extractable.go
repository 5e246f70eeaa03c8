package plots

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/memo-research/memo/eval"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"
)

// extractableCurves plots probabilistic extraction: the percentage of
// members and of controls that are (n, q)-extractable against the sample
// budget n, with eval's Wilson intervals, from each run's summary.json
// (nil when no run has the table). Colour tells runs apart; members are
// solid, controls dashed. A greedy attack's rows are left out: its
// p_extract is 0 or −∞, so its curve is flat at its exact-match rate by
// construction, a figure that says nothing (a review found ten such
// lines over one another).
func extractableCurves(cfg Config, runs []*runData) (*figure, error) {
	var have []*runData
	for _, r := range runs {
		if r.Summary.Extractable != nil && attackDecoding(r) != "greedy" {
			have = append(have, r)
		}
	}
	if len(have) == 0 {
		return nil, nil
	}
	// One q in the title; runs scored at different ones (eval.extractable_q)
	// each say theirs in the legend.
	title, qs := "Probabilistic extraction", map[float64]bool{}
	for _, r := range have {
		qs[r.Summary.Extractable.Q] = true
	}
	if len(qs) == 1 {
		title = fmt.Sprintf("Probabilistic extraction (q = %g)", have[0].Summary.Extractable.Q)
	}
	p := newPlot(cfg, title, "samples drawn per prefix, n",
		"documents extracted with probability ≥ q (%)")
	p.X.Scale = plot.LogScale{}
	var ticks plot.ConstantTicks
	for _, n := range eval.ExtractableNs {
		ticks = append(ticks, plot.Tick{Value: float64(n), Label: fmt.Sprint(n)})
	}
	p.X.Tick.Marker = ticks
	series := 0
	for ri, r := range have {
		ex := r.Summary.Extractable
		for si, side := range []struct {
			name string
			at   []eval.ExtractableAt
		}{{"members", ex.Members}, {"controls", ex.Controls}} {
			pts := &errPoints{}
			for _, a := range side.at {
				y, lo, hi := float64(a.Fraction), float64(a.WilsonCI[0]), float64(a.WilsonCI[1])
				if math.IsNaN(y) {
					continue
				}
				// Nudge series apart on the log axis so equal values stay visible.
				x := float64(a.N) * math.Pow(2, 0.1*(float64(series)-float64(2*len(have)-1)/2))
				pts.add(x, 100*y, 100*lo, 100*hi)
			}
			series++
			if pts.Len() == 0 {
				continue
			}
			label := side.name
			if len(have) > 1 {
				label = r.Label + ", " + side.name
			}
			if len(qs) > 1 {
				label += fmt.Sprintf(", q = %g", ex.Q)
			}
			if err := addErrSeries(p, pts, colorAt(ri), dashes[si%len(dashes)], draw.CircleGlyph{}, label); err != nil {
				return nil, err
			}
		}
	}
	ns := eval.ExtractableNs
	p.X.Min, p.X.Max = float64(ns[0])/1.5, float64(ns[len(ns)-1])*1.5
	p.Y.Min, p.Y.Max = -3, 105
	p.Y.Tick.Marker = percentTicks
	p.Add(hgrid())
	return p, nil
}

// attackDecoding is the decoding of the run's attack as extract recorded
// it in summary.json ("" when it did not).
func attackDecoding(r *runData) string {
	var x struct {
		Decoding string `json:"decoding"`
	}
	if r.Summary == nil || json.Unmarshal(r.Summary.Extract, &x) != nil {
		return ""
	}
	return x.Decoding
}
