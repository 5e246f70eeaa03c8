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
	"gonum.org/v1/plot/vg/draw"

	"github.com/memo-research/memo/eval"
)

// countRow is one duplicate-count bucket of one run: summary.json's
// by_corpus_count (the members whose extracted window occurs lo..hi times
// in the training corpus), with the Wilson interval of its exact match.
type countRow struct {
	series     string
	b          eval.CountBucket
	exLo, exHi float64
}

// countRows are the runs' count buckets, each under the run's directory
// name (the tables' run column) or, for a legend, its Label.
func countRows(runs []*runData, legend bool) []countRow {
	var rows []countRow
	for _, r := range runs {
		if r.Summary == nil {
			continue
		}
		name := r.Name
		if legend {
			name = r.Label
		}
		if name == "" {
			name = "run"
		}
		for _, b := range r.Summary.ByCorpusCount {
			// eval's interval; a summary written before it had one
			// shows none rather than one computed here.
			lo, hi := math.NaN(), math.NaN()
			if ci := b.ExactMatchWilsonCI; ci != nil {
				lo, hi = float64(ci[0]), float64(ci[1])
			}
			rows = append(rows, countRow{series: name, b: b, exLo: lo, exHi: hi})
		}
	}
	return rows
}

// writeCountTables writes corpus-counts.md and corpus-counts.csv into dir
// when a run's summary holds counts, nothing otherwise (new files, so the
// other tables keep their bytes).
func writeCountTables(dir string, runs []*runData) ([]string, error) {
	rows := countRows(runs, false)
	if rows == nil {
		return nil, nil
	}
	md := func(w io.Writer) error {
		var b strings.Builder
		b.WriteString("| run | count per epoch of the training corpus | targets | exact match % [95% CI] | loss AUC |\n")
		b.WriteString("| --- | ---: | ---: | ---: | ---: |\n")
		for _, r := range rows {
			span := strconv.FormatInt(r.b.Lo, 10)
			if r.b.Hi != r.b.Lo {
				span += "–" + strconv.FormatInt(r.b.Hi, 10)
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %s |\n", r.series, span, r.b.Members,
				interval(float64(r.b.ExactMatch), [2]eval.Num{eval.Num(r.exLo), eval.Num(r.exHi)}, pct), num(float64(r.b.LossAUC), 3))
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	csvOut := func(w io.Writer) error {
		cw := csv.NewWriter(w)
		f := csvFloat
		if err := cw.Write([]string{"run", "count_lo", "count_hi", "targets", "exact_match", "exact_match_wilson_ci_low", "exact_match_wilson_ci_high", "loss_auc"}); err != nil {
			return err
		}
		for _, r := range rows {
			if err := cw.Write([]string{r.series, strconv.FormatInt(r.b.Lo, 10), strconv.FormatInt(r.b.Hi, 10), strconv.Itoa(r.b.Members),
				f(float64(r.b.ExactMatch)), f(r.exLo), f(r.exHi), f(float64(r.b.LossAUC))}); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	}
	return writeFiles(dir, namedWriter{"corpus-counts.md", md}, namedWriter{"corpus-counts.csv", csvOut})
}

// extractionVsCount is Carlini et al. 2023's figure: the fraction of
// targets extracted against how often their window occurs in the training
// corpus, on a log axis (each bucket at its geometric middle, with a
// horizontal bar over the counts it holds, series nudged apart; count 0,
// which a log axis cannot show, left out). Nil without two distinct
// counts: one bucket (every target repeated alike, as in a sweep over k)
// would be a figure with no axis to read.
func extractionVsCount(cfg Config, runs []*runData) (*figure, error) {
	var series []string
	by := map[string]*errPoints{}
	spans := map[string]*spanBars{}
	counts := map[int64]bool{}
	rows := countRows(runs, true)
	index := map[string]int{}
	for _, r := range rows {
		if _, ok := index[r.series]; !ok {
			index[r.series] = len(index)
		}
	}
	for _, r := range rows {
		if r.b.Lo < 1 {
			continue
		}
		pts := by[r.series]
		if pts == nil {
			pts, spans[r.series] = &errPoints{}, &spanBars{}
			by[r.series] = pts
			series = append(series, r.series)
		}
		// Series nudged apart on the log axis, so that one's markers and
		// bars do not hide another's.
		nudge := math.Pow(2, 0.08*(float64(index[r.series])-float64(len(index)-1)/2))
		x := math.Sqrt(float64(r.b.Lo)*float64(r.b.Hi)) * nudge
		y := 100 * float64(r.b.ExactMatch)
		if math.IsNaN(r.exLo) {
			pts.add(x, y, y, y) // no interval recorded: no bar
		} else {
			pts.add(x, y, 100*r.exLo, 100*r.exHi)
		}
		sp := spans[r.series]
		sp.xs, sp.ys = append(sp.xs, x), append(sp.ys, y)
		sp.lo, sp.hi = append(sp.lo, float64(r.b.Lo)*nudge), append(sp.hi, float64(r.b.Hi)*nudge)
		counts[r.b.Lo] = true
	}
	if len(counts) < 2 {
		return nil, nil
	}
	p := newPlot(cfg, "Extraction against duplication in the training corpus", "occurrences of the target's window per epoch of the training corpus", "targets extracted (exact match %, 95 % CI)")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	for i, s := range series {
		if err := addErrSeries(p, by[s], colorAt(i), nil, []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}}[i%2], s); err != nil {
			return nil, err
		}
		xb, err := plotter.NewXErrorBars(spans[s])
		if err != nil {
			return nil, err
		}
		xb.LineStyle.Color, xb.LineStyle.Width, xb.CapWidth = colorAt(i), vg.Points(0.8), vg.Points(4)
		p.Add(xb)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, sp := range spans {
		for i := range sp.lo {
			lo, hi = math.Min(lo, sp.lo[i]), math.Max(hi, sp.hi[i])
		}
	}
	padAxis(&p.X, lo, hi, 0.25, 0, true)
	p.Y.Min, p.Y.Max = -3, 105
	p.Y.Tick.Marker = percentTicks
	p.Add(hgrid())
	return p, nil
}

// spanBars are points with the range of counts each bucket holds, drawn
// as horizontal bars.
type spanBars struct{ xs, ys, lo, hi []float64 }

func (b *spanBars) Len() int                        { return len(b.xs) }
func (b *spanBars) XY(i int) (float64, float64)     { return b.xs[i], b.ys[i] }
func (b *spanBars) XError(i int) (float64, float64) { return b.xs[i] - b.lo[i], b.hi[i] - b.xs[i] }
