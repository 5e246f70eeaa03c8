package plots

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/runfiles"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// errPoints are points with absolute lower and upper bounds.
type errPoints struct{ xs, ys, lo, hi []float64 }

func (e *errPoints) Len() int                        { return len(e.xs) }
func (e *errPoints) XY(i int) (float64, float64)     { return e.xs[i], e.ys[i] }
func (e *errPoints) YError(i int) (float64, float64) { return e.ys[i] - e.lo[i], e.hi[i] - e.ys[i] }

// add appends a point; an undefined interval (eval.bootstrap = 0, or a
// summary older than the interval) draws as none.
func (e *errPoints) add(x, y, lo, hi float64) {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		lo, hi = y, y
	}
	e.xs, e.ys, e.lo, e.hi = append(e.xs, x), append(e.ys, y), append(e.lo, lo), append(e.hi, hi)
}

// scatterBars are pts as point markers and as their error bars, unstyled.
func scatterBars(pts *errPoints) (*plotter.Scatter, *plotter.YErrorBars, error) {
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, nil, err
	}
	eb, err := plotter.NewYErrorBars(pts)
	if err != nil {
		return nil, nil, err
	}
	return sc, eb, nil
}

// addErrSeries draws pts as a line with point markers and error bars in
// colour c, dash pattern dash and marker shape, under label in the legend.
func addErrSeries(p *figure, pts *errPoints, c color.Color, dash []vg.Length, shape draw.GlyphDrawer, label string) error {
	ln, sc, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	eb, err := plotter.NewYErrorBars(pts)
	if err != nil {
		return err
	}
	ln.LineStyle.Color, ln.LineStyle.Width, ln.LineStyle.Dashes = c, vg.Points(1.5), dash
	sc.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(3), Shape: shape}
	eb.LineStyle.Color, eb.CapWidth = c, vg.Points(5)
	p.Add(ln, eb, sc)
	p.addLegend(label, ln, sc)
	return nil
}

// percentTicks labels a 0–100 axis every 20 %.
var percentTicks = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 20, Label: "20"}, {Value: 40, Label: "40"}, {Value: 60, Label: "60"}, {Value: 80, Label: "80"}, {Value: 100, Label: "100"}}

// stepTicks labels a linear axis at multiples of 1, 2 or 5 times a power
// of ten, the smallest such step that gives at most eight labels (three
// to eight), with a minor tick between labels: gonum's default picks
// steps such as 40 (40, 120, 200) and prints 25.00 for 25. A range too
// narrow for its magnitude (a float's rounding apart), or not finite,
// gets its two ends labelled. Labels share the step's decimals.
type stepTicks struct{}

func (stepTicks) Ticks(lo, hi float64) []plot.Tick {
	span := hi - lo
	if !(span > 0) || math.IsInf(span, 0) || span < 1e-9*math.Max(math.Abs(lo), math.Abs(hi)) {
		var ends []plot.Tick
		for _, v := range []float64{lo, hi} {
			if !math.IsNaN(v) && !math.IsInf(v, 0) && (len(ends) == 0 || v != ends[0].Value) {
				ends = append(ends, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 6, 64)})
			}
		}
		return ends
	}
	var step float64
	for e := math.Floor(math.Log10(span)) - 1; step == 0; e++ {
		for _, m := range []float64{1, 2, 5} {
			if s := m * math.Pow(10, e); span/s < 8-1e-9 {
				step = s
				break
			}
		}
	}
	decimals := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	first := math.Ceil(lo/step*2 - 1e-9) // in half steps
	var ticks []plot.Tick
	for i := 0; i <= 17; i++ { // at most 8 steps: 17 half steps
		half := first + float64(i)
		v := half / 2 * step
		if v > hi+step*1e-9 {
			break
		}
		if math.Mod(half, 2) != 0 {
			ticks = append(ticks, plot.Tick{Value: v}) // minor
			continue
		}
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		// Every label with the step's decimals (0.8, 1.0), as a reader
		// compares them down the axis.
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
	}
	return ticks
}

// logTicks labels a log axis at steps (1, 2, 5) times each power of ten
// from lo to hi, named by label.
func logTicks(lo, hi float64, steps []float64, label func(float64) string) plot.ConstantTicks {
	var ticks plot.ConstantTicks
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range steps {
			if v := m * math.Pow(10, e); v >= lo && v <= hi {
				ticks = append(ticks, plot.Tick{Value: v, Label: label(v)})
			}
		}
	}
	return ticks
}

// kOrder sorts goldfish settings, as catOf names them: the standard loss
// first, then by k and h.
func kOrder(runs []*runData, catOf func(*runData) string) []string {
	type order struct{ k, h int }
	seen := map[string]order{}
	for _, r := range runs {
		o := order{r.K, r.H}
		if r.standard() {
			o = order{-1, 0}
		}
		seen[catOf(r)] = o
	}
	labels := make([]string, 0, len(seen))
	for l := range seen {
		labels = append(labels, l)
	}
	sort.Slice(labels, func(i, j int) bool {
		a, b := seen[labels[i]], seen[labels[j]]
		if a != b {
			return a.k < b.k || a.k == b.k && a.h < b.h
		}
		return labels[i] < labels[j]
	})
	return labels
}

// kCategory is the x-axis category of a run in the k figures: its loss,
// shortened to "goldfish k=4" when every goldfish run of runs shares its
// context width and strategy, and its whole goldfishLabel when they
// differ, so that runs of two h never share one category.
func kCategory(runs []*runData) func(*runData) string {
	short := true
	var first *runData
	for _, r := range runs {
		if r.standard() {
			continue
		}
		if first == nil {
			first = r
		} else if r.H != first.H || r.Strategy != first.Strategy {
			short = false
		}
	}
	return func(r *runData) string {
		if r.standard() || !short {
			return r.goldfishLabel()
		}
		return fmt.Sprintf("goldfish k=%d", r.K)
	}
}

// crowdedK is the x-axis label and tick labels for many goldfish settings
// side by side, where "goldfish k=8" labels would run into each other: the
// axis label says "goldfish" once. ok is false when the labels fit as they are.
func crowdedK(ticks []string) (label string, short []string, ok bool) {
	if len(ticks) <= 3 {
		return "", nil, false
	}
	short = make([]string, len(ticks))
	for i, t := range ticks {
		short[i] = strings.Replace(t, "goldfish k=", "k=", 1)
	}
	return "training objective: standard loss, or goldfish loss with k", short, true
}

// nominalSpace is about the width a category of n gets on a nominal x
// axis of a figure cfg.WidthIn wide (the axes take about 80 % of it).
func nominalSpace(cfg Config, n int) vg.Length {
	return vg.Length(cfg.WidthIn) * vg.Inch * 0.8 / vg.Length(max(n, 1))
}

// widestTick is the width of the widest of ticks in p's x tick style.
func widestTick(p *figure, ticks []string) vg.Length {
	var w vg.Length
	for _, t := range ticks {
		w = max(w, p.X.Tick.Label.Rectangle(t).Size().X)
	}
	return w
}

// nominalX makes p's x axis nominal with ticks, fitted to the space a
// category gets (twenty sweep points otherwise print over each other):
// a label wider than that is broken into lines at its commas, and if one
// is still wider, every label is turned 45 degrees (upright, a long label
// would take the height the data need). It returns that space.
func nominalX(p *figure, cfg Config, ticks []string) vg.Length {
	space := nominalSpace(cfg, len(ticks))
	if widestTick(p, ticks) > space {
		ticks = slices.Clone(ticks)
		for i, t := range ticks {
			ticks[i] = strings.ReplaceAll(t, ", ", ",\n")
		}
	}
	if widestTick(p, ticks) > space {
		p.X.Tick.Label.Rotation = math.Pi / 4
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YTop
		// gonum sets a label's end a font descent above its band, into
		// the tick marks: two spaces keep the text clear of the axis.
		for i := range ticks {
			ticks[i] = strings.ReplaceAll(ticks[i], "\n", "  \n") + "  "
		}
	}
	p.NominalX(ticks...)
	return space
}

// namedVariants are variants as tick labels: the run the others vary
// from (no DP-SGD, no LoRA: no variant) is "none".
func namedVariants(variants []string) []string {
	out := slices.Clone(variants)
	for i, v := range out {
		if v == "" {
			out[i] = "none"
		}
	}
	return out
}

// oneKeyValues: when every label is KEY=VALUE of one KEY, that key and the
// values alone (the axis label names the key once).
func oneKeyValues(labels []string) (key string, values []string, ok bool) {
	for _, l := range labels {
		k, v, found := strings.Cut(l, "=")
		if !found || strings.Contains(l, ", ") || (key != "" && k != key) {
			return "", nil, false
		}
		key, values = k, append(values, v)
	}
	return key, values, key != ""
}

func joinLabel(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + ", " + b
}

// exactVsK plots the exact-match rate of targets and controls against the
// goldfish setting, with 95 % Wilson intervals.
func exactVsK(cfg Config, runs []*runData, axes []string) (*figure, error) {
	shortK := kCategory(runs)
	cats := kOrder(runs, shortK)
	catOf := shortK
	groupOf := func(r *runData) string { return r.Variant }
	xlabel := "training objective"
	var groups []string
	seen := map[string]bool{}
	for _, r := range runs {
		if g := groupOf(r); !seen[g] {
			seen[g] = true
			groups = append(groups, g)
		}
	}
	// With more other values than goldfish settings, those values are the
	// x axis and the settings the series: one crowded category, or twenty
	// series dodged into two, say nothing.
	kOnX := true
	if len(groups) > len(cats) {
		cats, groups = groups, cats
		catOf, groupOf = groupOf, shortK
		xlabel = strings.Join(nonGoldfish(axes), ", ")
		kOnX = false
	}
	catIdx := map[string]int{}
	for i, c := range cats {
		catIdx[c] = i
	}
	ticks := cats
	if kOnX {
		if l, short, ok := crowdedK(cats); ok {
			xlabel, ticks = l, short
		}
	} else {
		ticks = namedVariants(cats)
		if key, values, ok := oneKeyValues(ticks); ok {
			xlabel, ticks = key, values
		}
	}
	p := newPlot(cfg, "Extraction of training documents", xlabel, "exact suffix match (%, 95 % CI)")
	nominalX(p, cfg, ticks)
	nSeries := 2 * len(groups)
	width := 0.3
	series := 0
	for gi, g := range groups {
		for si, split := range []string{splitTarget, splitControl} {
			pts := &errPoints{}
			for _, r := range runs {
				if groupOf(r) != g {
					continue
				}
				sp := r.Summary.Members
				if split == splitControl {
					sp = r.Summary.Controls
				}
				if sp.N == 0 {
					continue
				}
				pr, lo, hi := float64(sp.ExactMatch), float64(sp.ExactMatchWilsonCI[0]), float64(sp.ExactMatchWilsonCI[1])
				off := 0.0
				if nSeries > 1 {
					off = -width/2 + width*float64(series)/float64(nSeries-1)
				}
				pts.add(float64(catIdx[catOf(r)])+off, 100*pr, 100*lo, 100*hi)
			}
			series++
			if pts.Len() == 0 {
				continue
			}
			sc, eb, err := scatterBars(pts)
			if err != nil {
				return nil, err
			}
			c := colorAt(gi)
			sc.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}
			if si == 1 {
				sc.GlyphStyle.Shape = draw.TriangleGlyph{}
				if len(groups) == 1 {
					c = grey
					sc.GlyphStyle.Color = c
				}
			}
			eb.LineStyle.Color, eb.LineStyle.Width, eb.CapWidth = c, vg.Points(1.2), vg.Points(6)
			p.Add(eb, sc)
			name := "targets (trained on)"
			if si == 1 {
				name = "controls (held out)"
			}
			if len(groups) > 1 {
				name = joinLabel(g, name)
			}
			p.addLegend(name, sc)
		}
	}
	p.X.Min, p.X.Max = -0.5, float64(len(cats))-0.5
	p.Y.Min, p.Y.Max = -3, 105
	p.Y.Tick.Marker = percentTicks
	p.Add(hgrid())
	return p, nil
}

// lossKey says a sweep column is part of the training objective the k
// figures already name on their axis (goldfishLabel): the goldfish keys
// and the equal-supervised-tokens control.
func lossKey(a string) bool {
	return strings.HasPrefix(a, "goldfish.") || a == "train.match_supervised_tokens"
}

func nonGoldfish(axes []string) []string {
	var out []string
	for _, a := range axes {
		if !lossKey(a) {
			out = append(out, a)
		}
	}
	return out
}

// rougeBoxes shows the distribution of per-document RougeL for targets and
// controls under each goldfish setting. When other sweep values vary too,
// those values are the x axis and each goldfish setting gets a colour: a
// box per run and split on one axis would not fit twenty points.
func rougeBoxes(cfg Config, runs []*runData, axes []string) (*figure, error) {
	shortK := kCategory(runs)
	ks := kOrder(runs, shortK)
	var variants []string
	for _, r := range runs {
		if !slices.Contains(variants, r.Variant) {
			variants = append(variants, r.Variant)
		}
	}
	byVariant := len(variants) > 1
	ticks, xlabel := ks, "training objective"
	catOf, groupOf := shortK, func(*runData) string { return "" }
	groups := []string{""}
	if byVariant {
		ticks, xlabel = namedVariants(variants), strings.Join(nonGoldfish(axes), ", ")
		if key, values, ok := oneKeyValues(ticks); ok {
			ticks, xlabel = values, key
		}
		catOf = func(r *runData) string { return r.Variant }
		groupOf, groups = shortK, ks
	} else if l, short, ok := crowdedK(ticks); ok {
		xlabel, ticks = l, short
	}
	cats := variants
	if !byVariant {
		cats = ks
	}
	p := newPlot(cfg, "RougeL of extracted suffixes", xlabel, "RougeL F1, generated vs. true suffix")
	space := nominalX(p, cfg, ticks)
	perCat := 2 * len(groups) // each group's targets and controls
	step := min(0.34, 0.8/float64(perCat))
	w := min(vg.Points(cfg.FontSize*2.2), space*vg.Length(step)*0.9)
	legendDone := map[string]bool{}
	for _, r := range runs {
		x := slices.Index(cats, catOf(r))
		g := slices.Index(groups, groupOf(r))
		for si, split := range []string{splitTarget, splitControl} {
			var vals plotter.Values
			for _, d := range r.docs(split) {
				vals = append(vals, d.RougeL)
			}
			if len(vals) == 0 {
				continue
			}
			slot := float64(2*g + si)
			loc := float64(x) + (slot-float64(perCat-1)/2)*step
			c := colorAt(g)
			var fill color.Color = fade(c)
			label := "targets (trained on)"
			if split == splitControl {
				label = "controls (held out)"
				if len(groups) == 1 {
					c, fill = grey, fade(grey)
				} else {
					fill = color.White // the group's colour, hollow
				}
			}
			label = joinLabel(groups[g], label)
			bp, err := plotter.NewBoxPlot(w, loc, vals)
			if err != nil {
				return nil, err
			}
			bp.FillColor = fill
			bp.BoxStyle.Color, bp.MedianStyle.Color, bp.WhiskerStyle.Color = c, c, c
			bp.MedianStyle.Width = vg.Points(2)
			bp.GlyphStyle.Color = c
			p.Add(bp)
			if !legendDone[label] {
				legendDone[label] = true
				p.addLegend(label, swatch{fill: fill, line: c})
			}
		}
	}
	p.X.Min, p.X.Max = -0.6, float64(len(cats))-0.4
	p.Y.Min, p.Y.Max = 0, 1.05
	p.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 0.25, Label: "0.25"}, {Value: 0.5, Label: "0.5"}, {Value: 0.75, Label: "0.75"}, {Value: 1, Label: "1"}}
	p.Add(hgrid())
	return p, nil
}

func fade(c interface{ RGBA() (r, g, b, a uint32) }) colorRGBA {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8((float64(v>>8)*0.35 + 255*0.65)) }
	return colorRGBA{mix(r), mix(g), mix(b), 255}
}

// repsKey is one point of a memorization-against-repetitions curve.
type repsKey struct {
	series string
	reps   int
}

// repsGroups holds each run's targets broken down by repetition count, as
// eval summarized them (summary.json's by_repetitions): one series per run,
// named by model (and goldfish setting, when it varies).
type repsGroups struct {
	series []string // in run order
	reps   []int    // ascending
	points map[repsKey]eval.SplitSummary
}

func groupByReps(runs []*runData) repsGroups {
	g := repsGroups{points: map[repsKey]eval.SplitSummary{}}
	repsSeen := map[int]bool{}
	kVaries := len(kOrder(runs, kCategory(runs))) > 1
	names := map[string]int{}
	label := func(r *runData) string {
		s := r.Preset
		if s == "" {
			s = "model"
		}
		if kVaries {
			s += ", " + r.goldfishLabel()
		}
		return s
	}
	for _, r := range runs {
		names[label(r)]++
	}
	for _, r := range runs {
		// Runs that share a model and goldfish setting (other sweep axes)
		// keep their own series: a point is one run's summary, never a
		// pool recomputed here.
		s := label(r)
		if names[s] > 1 {
			// What the legends of the sweep's other figures call the run.
			if r.Variant != "" {
				s = joinLabel(s, r.Variant)
			} else {
				s += " (" + r.Name + ")"
			}
		}
		if slices.Contains(g.series, s) {
			// Points are keyed by series: a second run under one name
			// would overwrite the first's.
			s += " (" + r.Name + ")"
		}
		g.series = append(g.series, s)
		for _, b := range r.Summary.ByRepetitions {
			if b.Repetitions <= 0 || b.N == 0 {
				continue
			}
			g.points[repsKey{s, b.Repetitions}] = b.SplitSummary
			repsSeen[b.Repetitions] = true
		}
	}
	for r := range repsSeen {
		g.reps = append(g.reps, r)
	}
	sort.Ints(g.reps)
	return g
}

// repsCurves plots a memorization measure of targets against how often they
// were repeated in training, one line per model (and goldfish setting):
// metric "exact" is the exact-match rate with 95 % Wilson intervals, "rougeL"
// the mean RougeL with its 95 % bootstrap interval (which still moves when
// no document is reproduced in full), both from summary.json. It returns nil when the data hold a
// single repetition count.
func repsCurves(cfg Config, runs []*runData, metric string) (*figure, error) {
	g := groupByReps(runs)
	if len(g.reps) < 2 {
		return nil, nil
	}
	series, reps := g.series, g.reps
	title, ylabel, scale := "Memorization against repetitions", "targets extracted (exact match %, 95 % CI)", 100.0
	if metric == "rougeL" {
		title, ylabel, scale = "Partial memorization against repetitions", "mean RougeL F1 of targets (95 % CI)", 1
	}
	p := newPlot(cfg, title, "copies of each target per training epoch", ylabel)
	p.X.Scale = plot.LogScale{}
	var ticks plot.ConstantTicks
	for _, r := range reps {
		ticks = append(ticks, plot.Tick{Value: float64(r), Label: fmt.Sprint(r)})
	}
	p.X.Tick.Marker = ticks
	for i, s := range series {
		pts := &errPoints{}
		for _, r := range reps {
			sp, ok := g.points[repsKey{s, r}]
			if !ok {
				continue
			}
			y, lo, hi := float64(sp.ExactMatch), float64(sp.ExactMatchWilsonCI[0]), float64(sp.ExactMatchWilsonCI[1])
			if metric == "rougeL" {
				y, lo, hi = float64(sp.RougeL), float64(sp.RougeLCI[0]), float64(sp.RougeLCI[1])
			}
			// Nudge series apart on the log axis so equal values stay visible.
			x := float64(r) * math.Pow(2, 0.08*(float64(i)-float64(len(series)-1)/2))
			pts.add(x, scale*y, scale*lo, scale*hi)
		}
		if pts.Len() == 0 {
			continue
		}
		if err := addErrSeries(p, pts, colorAt(i), dashes[(i/len(palette))%len(dashes)], draw.CircleGlyph{}, s); err != nil {
			return nil, err
		}
	}
	p.X.Min, p.X.Max = float64(reps[0])/1.3, float64(reps[len(reps)-1])*1.3
	p.Y.Min, p.Y.Max = -0.03*scale, 1.05*scale
	if metric == "rougeL" {
		p.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 0.25, Label: "0.25"}, {Value: 0.5, Label: "0.5"}, {Value: 0.75, Label: "0.75"}, {Value: 1, Label: "1"}}
	} else {
		p.Y.Tick.Marker = percentTicks
	}
	p.Add(hgrid())
	return p, nil
}

// lossKinds are the metrics.arrow columns of a loss figure: losses over
// predicted tokens, all, those the goldfish mask keeps and those it drops
// ("tokens": every other figure's "targets" are trained documents).
var lossKinds = []struct {
	label string
	value func(m runfiles.Metric) float64
}{
	{"all tokens", func(m runfiles.Metric) float64 { return m.LossAll }},
	{"kept tokens", func(m runfiles.Metric) float64 { return m.LossKept }},
	{"dropped tokens", func(m runfiles.Metric) float64 { return m.LossDropped }},
}

// metricSeries is one column of metrics.arrow's rows.
func metricSeries(ms []runfiles.Metric, value func(m runfiles.Metric) float64) []float64 {
	out := make([]float64, len(ms))
	for i, m := range ms {
		out[i] = value(m)
	}
	return out
}

// lossCurves plots training loss against step for each run: colour tells
// runs apart, dash pattern the kind of loss. Kept equals all under the
// standard loss and dropped is empty, so those are left out there.
func lossCurves(cfg Config, runs []*runData) (*figure, int, error) {
	title := "Training loss"
	p := newPlot(cfg, title, "optimizer step", "cross-entropy (nats/token)")
	added := 0
	windows := map[int]bool{} // the smoothing windows the drawn runs used
	ymin, ymax := math.Inf(1), math.Inf(-1)
	runs, labels := distinctTrainings(runs)
	for ri, r := range runs {
		if r.Metrics == nil {
			continue
		}
		steps := metricSeries(r.Metrics, func(m runfiles.Metric) float64 { return float64(m.Step) })
		w := cfg.Smooth
		if w == 0 {
			w = len(steps) / 100
		}
		windows[max(w, 1)] = true
		all := metricSeries(r.Metrics, lossKinds[0].value)
		for ki, kind := range lossKinds {
			y := metricSeries(r.Metrics, kind.value)
			standard := r.standard() && ki > 0
			if allNaN(y) || standard || (ki == 1 && sameSeries(y, all)) {
				continue
			}
			ys := movingAverage(y, w)
			var xy plotter.XYs
			for i := range steps {
				if !math.IsNaN(ys[i]) && !math.IsInf(ys[i], 0) {
					xy = append(xy, plotter.XY{X: steps[i], Y: ys[i]})
					ymin, ymax = math.Min(ymin, ys[i]), math.Max(ymax, ys[i])
				}
			}
			if len(xy) == 0 {
				continue
			}
			ln, err := plotter.NewLine(xy)
			if err != nil {
				return nil, 0, err
			}
			c := colorAt(ki)
			label := kind.label
			if len(runs) > 1 {
				c = colorAt(ri)
				ln.LineStyle.Dashes = dashes[ki]
				label = labels[ri] + ": " + kind.label
			}
			ln.LineStyle.Color, ln.LineStyle.Width = c, vg.Points(1.3)
			p.Add(ln)
			p.addLegend(label, ln)
			added++
		}
		// Validation loss (no goldfish mask) exists only at evaluation steps:
		// points joined by a line, not smoothed.
		if val := metricSeries(r.Metrics, func(m runfiles.Metric) float64 { return m.ValLoss }); len(val) > 0 {
			var xy plotter.XYs
			for i := range steps {
				if !math.IsNaN(val[i]) && !math.IsInf(val[i], 0) {
					xy = append(xy, plotter.XY{X: steps[i], Y: val[i]})
					ymin, ymax = math.Min(ymin, val[i]), math.Max(ymax, val[i])
				}
			}
			if len(xy) > 0 {
				ln, sc, err := plotter.NewLinePoints(xy)
				if err != nil {
					return nil, 0, err
				}
				c, label := colorAt(len(lossKinds)), "validation (no mask)"
				if len(runs) > 1 {
					c, label = colorAt(ri), labels[ri]+": validation (no mask)"
				}
				ln.LineStyle.Color, ln.LineStyle.Width, ln.LineStyle.Dashes = c, vg.Points(1), []vg.Length{vg.Points(1), vg.Points(2)}
				sc.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(2.5), Shape: draw.BoxGlyph{}}
				p.Add(ln, sc)
				p.addLegend(label, ln, sc)
				added++
			}
		}
	}
	if added == 0 {
		return nil, 0, nil
	}
	// One window for all runs, or runs of different lengths each smoothed
	// over 1 % of its own steps: the title said the largest for all.
	switch {
	case len(windows) > 1:
		p.Title.Text = title + " (moving average over 1 % of each run's steps)"
	case !windows[1]:
		for w := range windows {
			p.Title.Text = fmt.Sprintf("%s (moving average over %d steps)", title, w)
		}
	}
	p.Y.Min, p.Y.Max = math.Max(0, ymin-0.05*(ymax-ymin)), ymax+0.05*(ymax-ymin)
	p.Add(hgrid())
	return p, added, nil
}

// distinctTrainings keeps one run of those that share a training (a
// sweep's attack-only points link the metrics.arrow of the run that
// trained): their loss curves are one curve, drawn once. A kept run that
// stands for several is labelled by its loss when that alone tells the
// kept runs apart, else by its loss and the settings all its runs share
// (not the attack's, which differ among them); a run alone keeps its label.
func distinctTrainings(runs []*runData) ([]*runData, []string) {
	var groups [][]*runData
	for _, r := range runs {
		at := -1
		if r.Metrics != nil {
			at = slices.IndexFunc(groups, func(g []*runData) bool { return sameTraining(g[0].Metrics, r.Metrics) })
		}
		if at < 0 {
			groups = append(groups, []*runData{r})
		} else {
			groups[at] = append(groups[at], r)
		}
	}
	kept, labels := make([]*runData, len(groups)), make([]string, len(groups))
	byLoss := map[string]bool{}
	for i, g := range groups {
		kept[i], labels[i] = g[0], g[0].Label
		byLoss[g[0].goldfishLabel()] = true
		if len(g) > 1 {
			labels[i] = joinLabel(g[0].goldfishLabel(), sharedParts(g))
		}
	}
	if len(kept) < len(runs) && len(byLoss) == len(kept) {
		for i, r := range kept {
			labels[i] = r.goldfishLabel()
		}
	}
	return kept, labels
}

// sharedParts are the parts of the runs' variants ("lr=0.001,
// approximation=kv8") that every one of them has.
func sharedParts(runs []*runData) string {
	parts := strings.Split(runs[0].Variant, ", ")
	for _, r := range runs[1:] {
		theirs := strings.Split(r.Variant, ", ")
		parts = slices.DeleteFunc(parts, func(p string) bool { return !slices.Contains(theirs, p) })
	}
	return strings.Join(slices.DeleteFunc(parts, func(p string) bool { return p == "" }), ", ")
}

// sameTraining reports whether two runs' metrics are one training's: the
// same steps with the same losses, bit for bit.
func sameTraining(a, b []runfiles.Metric) bool {
	return len(a) > 0 && slices.EqualFunc(a, b, func(x, y runfiles.Metric) bool {
		return x.Step == y.Step && math.Float64bits(x.LossAll) == math.Float64bits(y.LossAll)
	})
}

func allNaN(y []float64) bool {
	for _, v := range y {
		if !math.IsNaN(v) {
			return false
		}
	}
	return true
}

func sameSeries(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return true
}

// rocCurves plots membership-inference ROC curves, targets (members) against
// controls (non-members). With one run every score gets a curve; with several,
// every run gets a curve of the given score.
func rocCurves(cfg Config, runs []*runData, score string) (*figure, error) {
	p, err := rocPlot(cfg, "Membership inference")
	if err != nil {
		return nil, err
	}
	added := 0
	for ri, r := range runs {
		for _, s := range eval.MIAStatistics() {
			if len(runs) > 1 && s.Label != score {
				continue
			}
			// The curve eval's AUC and TPR summarize: the same documents
			// (attacked or not), the same sign, the same thresholds.
			pts := eval.ROC(r.miaValues(splitTarget, s), r.miaValues(splitControl, s))
			if pts == nil {
				continue
			}
			var xy plotter.XYs
			for _, q := range pts {
				xy = append(xy, plotter.XY{X: q.FPR, Y: q.TPR})
			}
			ln, err := plotter.NewLine(xy)
			if err != nil {
				return nil, err
			}
			label := s.Label
			c := colorAt(added) // by curves drawn: no hole for a statistic without scores
			ln.LineStyle.Width = vg.Points(1.5)
			if len(runs) > 1 {
				label, c = r.Label, colorAt(ri)
				// Curves of strong attacks coincide along the axes: dashes
				// keep each visible, and past the palette's eight colours
				// the colour and dash pairs stay distinct (as in the
				// log-log figure, where run ri is the ri-th curve too).
				ln.LineStyle.Dashes = seriesDashes(ri)
			} else {
				ln.LineStyle.Dashes = seriesDashes(added)
			}
			ln.LineStyle.Color = c
			p.Add(ln)
			p.addLegend(aucLegend(label, r.Summary.MIA.Stat(s.Name)), ln)
			added++
		}
	}
	if added == 0 {
		return nil, nil
	}
	if len(runs) > 1 {
		p.Title.Text += " (score: " + score + ")"
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	p.Add(hgrid())
	return p, nil
}

// rocPlot is an empty ROC figure: the axes and the chance diagonal.
func rocPlot(cfg Config, title string) (*figure, error) {
	p := newPlot(cfg, title, "false-positive rate", "true-positive rate")
	diag, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}})
	if err != nil {
		return nil, err
	}
	diag.LineStyle.Color, diag.LineStyle.Dashes = grey, []vg.Length{vg.Points(3), vg.Points(3)}
	p.Add(diag)
	return p, nil
}

// swatch is a legend entry for a filled box, which gonum's box plot lacks.
type swatch struct{ fill, line color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	pts := []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}, r.Min}
	c.FillPolygon(s.fill, pts)
	c.StrokeLines(draw.LineStyle{Color: s.line, Width: vg.Points(1)}, pts)
}

// hgrid draws horizontal grid lines only: vertical ones would cut through
// the categories of a nominal axis.
func hgrid() *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical.Color = nil
	g.Horizontal.Color = color.Gray{Y: 220}
	return g
}

// padAxis sets ax's range to [lo, hi] widened on each side by frac of its
// width (by a factor of 1+frac on a log axis), so that the glyphs, caps and
// labels of the outermost values stay inside the axes. A linear range is
// widened by at least floor; one of no width and no floor is left to the
// plotters' own range.
func padAxis(ax *plot.Axis, lo, hi, frac, floor float64, logScale bool) {
	if logScale {
		ax.Min, ax.Max = lo/(1+frac), hi*(1+frac)
		return
	}
	if pad := math.Max(frac*(hi-lo), floor); pad > 0 {
		ax.Min, ax.Max = lo-pad, hi+pad
	}
}

// aucLegend labels a ROC curve with summary.json's AUC and, when eval
// bootstrapped one, its 95 % interval, to three decimals as the tables.
func aucLegend(label string, st eval.MIAStat) string {
	lo, hi := float64(st.AUCCI[0]), float64(st.AUCCI[1])
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return fmt.Sprintf("%s (AUC %.3f)", label, float64(st.AUC))
	}
	return fmt.Sprintf("%s (AUC %.3f [%.3f, %.3f])", label, float64(st.AUC), lo, hi)
}
