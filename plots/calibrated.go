package plots

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/memo-research/memo/eval"
)

// calibratedRow is one cell group of the table of calibrated attacks
// against the number of reference models: summary.json's
// calibrated.by_references, with each run's reference-free loss attack
// beside it for comparison.
type calibratedRow struct {
	run        string
	references int // reference models the attack was calibrated with
	attack     string
	st         eval.CalibratedAUC
}

func calibratedRows(runs []*runData) []calibratedRow {
	var rows []calibratedRow
	for _, r := range runs {
		cal := r.Summary.Calibrated
		if cal == nil {
			continue
		}
		for _, at := range cal.ByReferences {
			for _, a := range eval.CalibratedAttacks() {
				rows = append(rows, calibratedRow{r.Name, at.K, a.Name, at.Attacks[a.Name]})
			}
		}
	}
	return rows
}

// writeCalibratedTables writes calibrated.md, calibrated.csv and
// calibrated.tex when a run has calibrated attacks: AUC and TPR at 0.1 %
// and 1 % FPR of each attack against the number of reference models, and
// the loss attack's.
func writeCalibratedTables(dir string, runs []*runData) ([]string, error) {
	rows := calibratedRows(runs)
	if rows == nil {
		return nil, nil
	}
	return writeFiles(dir,
		namedWriter{"calibrated.md", func(w io.Writer) error { return writeCalibratedMarkdown(w, runs) }},
		namedWriter{"calibrated.csv", func(w io.Writer) error { return writeCalibratedCSV(w, rows) }},
		namedWriter{"calibrated.tex", func(w io.Writer) error { return writeCalibratedLaTeX(w, runs, rows) }})
}

// writeCalibratedLaTeX writes calibrated.csv's rows as a booktabs table,
// the numbers as calibrated.md prints them, under a comment saying when
// the low-FPR rates are at FPR 0.
func writeCalibratedLaTeX(out io.Writer, runs []*runData, rows []calibratedRow) error {
	var controls []int
	for _, r := range runs {
		if r.Summary.Calibrated != nil {
			controls = append(controls, r.Summary.MIA.NControls)
		}
	}
	for _, w := range rows {
		controls = append(controls, w.st.NControls)
	}
	if note := lowFPRNote(controls...); note != "" {
		if _, err := io.WriteString(out, "% "+note+"\n"); err != nil {
			return err
		}
	}
	head := []string{"run", "attack", "K", "AUC", "TPR@0.1%FPR %", "TPR@1%FPR %", "members", "controls"}
	cells := make([][]string, len(rows))
	for i, w := range rows {
		cells[i] = []string{w.run, w.attack, strconv.Itoa(w.references), num(float64(w.st.AUC), 3), pct(float64(w.st.TPR0_1)),
			pct(float64(w.st.TPR1)), strconv.Itoa(w.st.NMembers), strconv.Itoa(w.st.NControls)}
	}
	return writeBooktabs(out, "llrrrrrr", head, cells)
}

func writeCalibratedMarkdown(out io.Writer, runs []*runData) error {
	var b strings.Builder
	for _, r := range runs {
		cal := r.Summary.Calibrated
		if cal == nil {
			continue
		}
		// The documents attacked, as mia counts them: those the loss
		// attack and the table's rows with all references score.
		mia := r.Summary.MIA
		loss := mia.Stat("loss")
		fmt.Fprintf(&b, "%s: %d members, %d controls, %d population samples; loss attack AUC %s, TPR@0.1%%FPR %s %%, TPR@1%%FPR %s %%\n\n",
			r.Name, mia.NMembers, mia.NControls, cal.Population, num(float64(loss.AUC), 3), pct(float64(loss.TPR0_1)), pct(float64(loss.TPR1)))
		b.WriteString("| attack | K | AUC | TPR@0.1%FPR % | TPR@1%FPR % | members, controls scored |\n")
		b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: |\n")
		for _, a := range eval.CalibratedAttacks() {
			name := a.Name
			for _, at := range cal.ByReferences {
				// An attack K references cannot calibrate (online LiRA
				// with no model holding a candidate in) scores none:
				// "–" and "0, 0", as calibrated.csv's row has it.
				st := at.Attacks[name]
				fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %d, %d |\n", name, at.K, num(float64(st.AUC), 3),
					pct(float64(st.TPR0_1)), pct(float64(st.TPR1)), st.NMembers, st.NControls)
			}
		}
		// Offline RMIA's a is chosen anew at each K (mia.rmia_a = -1):
		// its rows compare attacks tuned on different reference sets.
		as := make([]string, len(cal.ByReferences))
		for i, at := range cal.ByReferences {
			as[i] = fmt.Sprintf("K = %d: %s", at.K, num(at.RMIAA, 2))
		}
		fmt.Fprintf(&b, "\nOffline RMIA's a: %s\n", strings.Join(as, ", "))
		// The rows' own counts: an offline attack at K = 1 scores only
		// the controls its one model left out.
		counts := []int{mia.NControls}
		for _, at := range cal.ByReferences {
			for _, st := range at.Attacks {
				counts = append(counts, st.NControls)
			}
		}
		if note := lowFPRNote(counts...); note != "" {
			b.WriteString("\n" + note + "\n")
		}
		if s := float64(cal.CounterfactualSpearman); !math.IsNaN(s) {
			fmt.Fprintf(&b, "\nCounterfactual memorization against repetitions (members): Spearman %.3f\n", s)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(out, b.String())
	return err
}

func writeCalibratedCSV(out io.Writer, rows []calibratedRow) error {
	cw := csv.NewWriter(out)
	f := func(v eval.Num) string { return csvFloat(float64(v)) }
	if err := cw.Write([]string{"run", "attack", "references", "auc", "tpr_at_0.1pct_fpr", "tpr_at_1pct_fpr", "n_members", "n_controls"}); err != nil {
		return err
	}
	for _, w := range rows {
		if err := cw.Write([]string{w.run, w.attack, strconv.Itoa(w.references), f(w.st.AUC), f(w.st.TPR0_1), f(w.st.TPR1),
			strconv.Itoa(w.st.NMembers), strconv.Itoa(w.st.NControls)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// rocLogLog draws ROC curves on log-log axes, the figure of Carlini et
// al. 2022 that shows the low false-positive rates where attacks differ
// and the tables' TPR at 0.1 and 1 % FPR: for one run with calibrated
// attacks, every membership statistic; for several runs (a sweep), the
// loss attack of each, as mia-roc draws them on linear axes. Rates of
// zero sit at the axis floor, half of one document's share.
func rocLogLog(cfg Config, runs []*runData) (*figure, error) {
	type curve struct {
		r *runData
		s eval.MIAStatistic
	}
	var curves []curve
	switch {
	case len(runs) == 1 && runs[0].Summary.Calibrated != nil:
		for _, s := range eval.MIAStatistics() {
			curves = append(curves, curve{runs[0], s})
		}
	case len(runs) > 1:
		for _, r := range runs {
			curves = append(curves, curve{r, eval.MIAStatistics()[0]})
		}
	default:
		return nil, nil
	}
	p := newPlot(cfg, "Membership inference (log-log)", "false-positive rate", "true-positive rate")
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	floor := 1.0
	for _, c := range curves {
		for _, split := range []string{splitControl, splitTarget} {
			if n := len(finiteOf(c.r.miaValues(split, c.s))); n > 0 {
				floor = math.Min(floor, 0.5/float64(n))
			}
		}
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = rateTicks(floor), rateTicks(floor)
	diag, err := plotter.NewLine(plotter.XYs{{X: floor, Y: floor}, {X: 1, Y: 1}})
	if err != nil {
		return nil, err
	}
	diag.LineStyle.Color, diag.LineStyle.Dashes = grey, []vg.Length{vg.Points(3), vg.Points(3)}
	p.Add(diag)
	added := 0
	for _, c := range curves {
		pts := eval.ROC(c.r.miaValues(splitTarget, c.s), c.r.miaValues(splitControl, c.s))
		if pts == nil {
			continue
		}
		ln, err := plotter.NewLine(logROC(pts, floor))
		if err != nil {
			return nil, err
		}
		ln.LineStyle.Width = vg.Points(1.5)
		// By the curves drawn, so that a statistic without scores leaves
		// no hole in the palette (yellow, faint on white, comes last).
		ln.LineStyle.Color, ln.LineStyle.Dashes = colorAt(added), seriesDashes(added)
		p.Add(ln)
		label := c.s.Label
		if len(runs) > 1 {
			label = c.r.Label
		}
		p.addLegend(aucLegend(label, c.r.Summary.MIA.Stat(c.s.Name)), ln)
		added++
	}
	if added == 0 {
		return nil, nil
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = floor, 1, floor, 1
	return p, nil
}

// logROC is the ROC's points for log axes, rates below floor raised to
// it. A segment through tied scores is straight in linear rates (the
// ROC interpolates them so); drawn straight on log axes it read TPR 0.10
// where the ROC has 0.38, so it is drawn in tieSegmentPoints pieces.
func logROC(pts []eval.ROCPoint, floor float64) plotter.XYs {
	var xy plotter.XYs
	for i, q := range pts {
		if i > 0 && q.FPR != pts[i-1].FPR && q.TPR != pts[i-1].TPR {
			from := pts[i-1]
			for k := 1; k < tieSegmentPoints; k++ {
				f := float64(k) / tieSegmentPoints
				xy = append(xy, plotter.XY{X: math.Max(from.FPR+f*(q.FPR-from.FPR), floor), Y: math.Max(from.TPR+f*(q.TPR-from.TPR), floor)})
			}
		}
		xy = append(xy, plotter.XY{X: math.Max(q.FPR, floor), Y: math.Max(q.TPR, floor)})
	}
	return xy
}

// tieSegmentPoints is how many pieces a tied segment of the log-log ROC
// is drawn in.
const tieSegmentPoints = 64

// rateTicks labels a log axis of rates from floor to 1 at 1, 2 and 5
// times each power of ten, so that a range shorter than two decades (a
// few dozen documents) still reads; decades alone past that.
func rateTicks(floor float64) plot.ConstantTicks {
	steps := []float64{1, 2, 5}
	if floor < 0.01 {
		steps = []float64{1}
	}
	return logTicks(floor*(1-1e-9), 1, steps, func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) })
}

func finiteOf(xs []float64) []float64 {
	var out []float64
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}
