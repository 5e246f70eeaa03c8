package plots

import (
	"github.com/memo-research/memo/eval"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// AuditCurve is one curve of memo audit's ROC figure: a statistic's (or
// the blind baseline's) scores, oriented so that higher means member,
// and its summary for the legend.
type AuditCurve struct {
	Label               string
	Members, Nonmembers []float64
	Stat                eval.MIAStat
	Baseline            bool // drawn grey and thick: the model-free reference
}

// AuditROC draws the audit's curves, the blind baseline among them, on
// one ROC figure, audit-roc.<format> in dir, and returns the files
// written; curves without values are left out.
func AuditROC(dir string, cfg Config, curves []AuditCurve) ([]string, error) {
	p, err := rocPlot(cfg, "Membership audit")
	if err != nil {
		return nil, err
	}
	for i, c := range curves {
		pts := eval.ROC(c.Members, c.Nonmembers)
		if pts == nil {
			continue
		}
		xy := make(plotter.XYs, len(pts))
		for j, q := range pts {
			xy[j] = plotter.XY{X: q.FPR, Y: q.TPR}
		}
		ln, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		ln.LineStyle.Width, ln.LineStyle.Color, ln.LineStyle.Dashes = vg.Points(1.5), colorAt(i), seriesDashes(i)
		if c.Baseline {
			ln.LineStyle.Width, ln.LineStyle.Color, ln.LineStyle.Dashes = vg.Points(3), grey, nil
		}
		p.Add(ln)
		p.addLegend(aucLegend(c.Label, c.Stat), ln)
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	p.Add(hgrid())
	return save(p, cfg, dir, "audit-roc")
}
