package plots

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/provenance"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func TestGridShape(t *testing.T) {
	tests := []struct {
		name             string
		n                int
		width, colWidth  vg.Length
		wantCols, wantRs int
	}{
		{"no entries", 0, 100, 30, 0, 0},
		{"two of three fit", 3, 100, 30, 2, 2},
		{"all in one row", 5, 1000, 10, 5, 1},
		{"wider than the canvas", 4, 50, 80, 1, 4},
		{"three fit, seven entries", 7, 3*30 + 2*legendGap, 30, 3, 3},
		{"three fit, four entries: two by two", 4, 3*30 + 2*legendGap, 30, 2, 2},
	}
	for _, tt := range tests {
		cols, rows := gridShape(tt.n, tt.width, tt.colWidth)
		if cols != tt.wantCols || rows != tt.wantRs {
			t.Errorf("%s: gridShape(%d, %v, %v) = %d×%d, want %d×%d", tt.name, tt.n, tt.width, tt.colWidth, cols, rows, tt.wantCols, tt.wantRs)
		}
		if cols*rows < tt.n {
			t.Errorf("%s: %d×%d holds fewer than %d entries", tt.name, cols, rows, tt.n)
		}
	}
}

// TestLegendBelowAxes: a legend goes in a band below the axes, below all
// of their text, however many entries it has; where the band would take
// more than maxLegendShare of the configured height the saved figure is
// taller instead (a crowded legend went inside the axes, over the
// curves), and no legend text leaves the canvas (names wider than a
// paper column ran off its edge).
func TestLegendBelowAxes(t *testing.T) {
	column := DefaultConfig()
	column.WidthIn, column.HeightIn, column.FontSize = 3.3, 2.5, 8
	columnBig := column
	columnBig.FontSize = 11
	short := []string{"standard", "goldfish k=4, h=13", "exact match", "RougeL"}
	roc := []string{"loss", "zlib ratio", "min-k% loss", "min-k%++", "ReCaLL", "LiRA online", "LiRA offline", "RMIA", "RMIA offline", "counterfactual memorization"}
	for i := range roc {
		roc[i] += " (AUC 0.891 [0.851, 0.927])"
	}
	var long []string
	for i := range 12 {
		long = append(long, fmt.Sprintf("goldfish k=%d, h=13, lr=3e-4, preset=small, seed %d (AUC 0.891 [0.851, 0.927])", i+2, i))
	}
	for _, tc := range []struct {
		name  string
		cfg   Config
		names []string
		grows bool
	}{
		{"four at 5 in", DefaultConfig(), short, false},
		{"four at 3.3 in", column, short, false},
		{"ten ROC curves at 5 in", DefaultConfig(), roc, true},
		{"ten ROC curves at 3.3 in", column, roc, true},
		{"twelve long names at 3.3 in", column, long, true},
		{"twelve long names at 3.3 in, 11 pt", columnBig, long, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Formats = []string{"png"}
			f := newPlot(cfg, "Membership inference", "false-positive rate", "true-positive rate")
			for i, n := range tc.names {
				ln, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: float64(i) / 10}})
				if err != nil {
					t.Fatal(err)
				}
				ln.LineStyle.Color = colorAt(i)
				f.Add(ln)
				f.addLegend(n, ln)
			}
			w, h := vg.Length(cfg.WidthIn)*vg.Inch, vg.Length(cfg.HeightIn)*vg.Inch
			height := f.canvasHeight(w, h)
			if grew := height > h; grew != tc.grows {
				t.Errorf("canvas %.0f pt high for %.0f configured: grown = %v, want %v", float64(height), float64(h), grew, tc.grows)
			}
			boxes := drawText(f, w, height)
			checkInside(t, boxes, w, height)
			legendSize := f.Legend.TextStyle.Font.Size
			var legendTop, axesBottom vg.Length = 0, height
			n := 0
			for _, b := range boxes {
				if b.size == legendSize {
					legendTop, n = max(legendTop, b.r.Max.Y), n+1
				} else {
					axesBottom = min(axesBottom, b.r.Min.Y)
				}
			}
			if n < len(tc.names) {
				t.Errorf("%d lines of legend text drawn for %d entries", n, len(tc.names))
			}
			if legendTop > axesBottom {
				t.Errorf("legend text reaches %.1f pt, above the axes' lowest text at %.1f pt: not below the axes", float64(legendTop), float64(axesBottom))
			}

			dir := outDir(t, "legend-"+strings.ReplaceAll(tc.name, " ", "-"))
			if _, err := save(f, cfg, dir, "roc"); err != nil {
				t.Fatal(err)
			}
			b := readPNG(t, filepath.Join(dir, "roc.png")).Bounds()
			px := func(l vg.Length) int { return int(math.Round(float64(l) / vg.Inch.Points() * float64(cfg.DPI))) }
			if d := b.Dy() - px(height); d < -1 || d > 1 || b.Dx() != px(w) {
				t.Errorf("PNG %d×%d px, want %d×%d (%.0f×%.0f pt at %d dpi)", b.Dx(), b.Dy(), px(w), px(height), float64(w), float64(height), cfg.DPI)
			}
		})
	}
}

// TestTextInsideCanvas draws every figure a sweep of three model sizes
// and two losses supports at a paper column's width, at a small and at
// the default font size, with a partial report's title: no text may
// leave the canvas (long titles, axis labels and legend names were cut
// off at 3.3 in).
func TestTextInsideCanvas(t *testing.T) {
	dir := t.TempDir()
	var pts []synthPoint
	for i, preset := range []string{"nano", "tiny", "small"} {
		for _, k := range []int{0, 4} {
			name := fmt.Sprintf("k=%d_preset=%s", k, preset)
			writeSynthRun(t, filepath.Join(dir, name), synthRun{name: name, k: k, preset: preset, targets: 40, reps: []int{1, 2, 4, 8, 16},
				exactReps: func(r int) bool { return k == 0 && r >= 16>>i }, rouge: 0.3, steps: 200, params: 150_000 << (2 * i)}, uint64(10*i+k))
			pts = append(pts, synthPoint{name, name, map[string]any{"goldfish.k": k, "model.preset": preset}})
		}
	}
	writeSweepIndex(t, dir, "column", []string{"goldfish.k", "model.preset"}, pts)
	runs, axes, _, err := loadDir(dir, readSynthSpec)
	if err != nil {
		t.Fatal(err)
	}
	for _, dims := range figureSizes {
		cfg := DefaultConfig()
		cfg.WidthIn, cfg.HeightIn, cfg.FontSize = dims.w, dims.h, dims.size
		size := dims.size
		var drawn []string
		err := eachFigure(cfg, runs, axes, func(name string, f *figure) error {
			drawn = append(drawn, name)
			f.Title.Text += " (" + partialTitle(len(runs), []leftOut{{Name: "k=8"}}) + ")"
			w := vg.Length(cfg.WidthIn) * vg.Inch
			h := f.canvasHeight(w, vg.Length(cfg.HeightIn)*vg.Inch)
			t.Run(fmt.Sprintf("%s/%gx%gin/%gpt", name, dims.w, dims.h, size), func(t *testing.T) {
				boxes := drawText(f, w, h)
				checkInside(t, boxes, w, h)
				checkApart(t, boxes)
				checkDataArea(t, f, w, vg.Length(cfg.HeightIn)*vg.Inch, h)
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(drawn) < 8 {
			t.Errorf("drew only %v", drawn)
		}
	}
}

// figureSizes are the sizes every figure must fit: a paper column at
// both font sizes, and the smallest size plots accepts.
var figureSizes = []struct{ w, h, size float64 }{{3.3, 2.5, 8}, {3.3, 2.5, 11}, {MinWidthIn, MinHeightIn, 8}, {MinWidthIn, MinHeightIn, 11}}

// The figures that eachFigure's synthetic sweep above does not draw
// (approximate inference, corpus counts, DP-SGD's trade-off) keep their
// text inside the canvas at every size too.
func TestTextInsideCanvasOtherFigures(t *testing.T) {
	var approx []*runData
	for _, k := range []int{0, 4} {
		for i, m := range []struct {
			method      string
			mass, bytes float64
		}{{"exact", 1, 4096}, {"kv4", 1, 768}, {"loki-r4-k0.25", 0.6, 1536}} {
			s := &eval.Summary{Approx: &eval.ApproxSummary{Method: m.method, N: 8, AttnMassKept: eval.Num(m.mass), KVBytesPerToken: eval.Num(m.bytes), SpecAccept: eval.Num(nanValue)}}
			s.Members = eval.SplitSummary{N: 8, ExactMatch: eval.Num(0.5 / float64(1+i+k)), ExactMatchWilsonCI: [2]eval.Num{0.1, 0.8}}
			approx = append(approx, &runData{Name: m.method, K: k, H: 13, Strategy: "hash-table", Summary: s})
		}
	}
	counts := []*runData{{Name: "k=0", Summary: &eval.Summary{ByCorpusCount: []eval.CountBucket{
		{Lo: 0, Hi: 0, Members: 2, ExactMatch: 0, LossAUC: 0.5},
		{Lo: 1, Hi: 1, Members: 10, ExactMatch: 0.1, LossAUC: 0.6},
		{Lo: 16, Hi: 31, Members: 4, ExactMatch: 0.75, LossAUC: 0.9, ExactMatchWilsonCI: &[2]eval.Num{0.3, 0.95}},
		{Lo: 1024, Hi: 2047, Members: 3, ExactMatch: 1, LossAUC: 1},
	}}}}
	dir := t.TempDir()
	eps := 7.93
	var pts []synthPoint
	for i, r := range []synthRun{
		{name: "k=0", k: 0, preset: "tiny", targets: 32, exact: 28, rouge: 0.9, steps: 400},
		{name: "k=4", k: 4, preset: "tiny", targets: 32, exact: 0, rouge: 0.45, steps: 400},
		{name: "dp8", k: 0, preset: "tiny", targets: 32, exact: 3, rouge: 0.5, steps: 400,
			dp: &provenance.DPRecord{Epsilon: &eps, Delta: 1e-5, NoiseMultiplier: 0.71, SampleRate: 0.01, MaxGradNorm: 1, Steps: 400, Rows: 1600}},
	} {
		writeSynthRun(t, filepath.Join(dir, r.name), r, uint64(i+1))
		pts = append(pts, synthPoint{r.name, r.name, map[string]any{"goldfish.k": r.k}})
	}
	writeSweepIndex(t, dir, "dp", []string{"goldfish.k"}, pts)
	dp, axes, _, err := loadDir(dir, readSynthSpec)
	if err != nil {
		t.Fatal(err)
	}
	labelRuns(dp, axes)
	for _, fig := range []struct {
		name string
		make func(Config) (*figure, error)
	}{
		{"extraction-vs-mass-kept", func(cfg Config) (*figure, error) {
			return approxFigure(cfg, approx, "Extraction under sparse attention", "exact attention mass kept",
				func(a *eval.ApproxSummary) float64 { return float64(a.AttnMassKept) }, false)
		}},
		{"extraction-vs-kv-bytes", func(cfg Config) (*figure, error) {
			return approxFigure(cfg, approx, "Extraction against KV cache traffic", "KV bytes read per token",
				func(a *eval.ApproxSummary) float64 { return float64(a.KVBytesPerToken) }, true)
		}},
		{"extraction-vs-corpus-count", func(cfg Config) (*figure, error) { return extractionVsCount(cfg, counts) }},
		{"memorization-vs-utility", func(cfg Config) (*figure, error) { return tradeoffFigure(cfg, dp) }},
	} {
		for _, dims := range figureSizes {
			cfg := DefaultConfig()
			cfg.WidthIn, cfg.HeightIn, cfg.FontSize = dims.w, dims.h, dims.size
			t.Run(fmt.Sprintf("%s/%gx%gin/%gpt", fig.name, dims.w, dims.h, dims.size), func(t *testing.T) {
				f, err := fig.make(cfg)
				if err != nil || f == nil {
					t.Fatalf("no figure: %v", err)
				}
				w := vg.Length(cfg.WidthIn) * vg.Inch
				h := f.canvasHeight(w, vg.Length(cfg.HeightIn)*vg.Inch)
				boxes := drawText(f, w, h)
				checkInside(t, boxes, w, h)
				checkApart(t, boxes)
				checkDataArea(t, f, w, vg.Length(cfg.HeightIn)*vg.Inch, h)
			})
		}
	}
}

// checkDataArea fails t when f, drawn w wide and canvas high for a
// configured height h, leaves its data less than minDataShare of h.
func checkDataArea(t *testing.T, f *figure, w, h, canvas vg.Length) {
	t.Helper()
	axes := canvas
	if len(f.entries) > 0 {
		axes -= f.legendLayout(w).band
	}
	if d := f.dataHeight(w, axes); d < minDataShare*h-0.01 {
		t.Errorf("data area %.1f pt high, under %.0f %% of the configured %.1f pt", float64(d), 100*minDataShare, float64(h))
	}
}

// checkApart fails t for each two text boxes that overlap, or that stand
// closer than a few points one after the other along their lines: tick
// labels run together on a narrow axis ("1.601.651.70"), a label drawn
// over another. The lines of one label touch, side by side across them.
func checkApart(t *testing.T, boxes []textBox) {
	t.Helper()
	const slack, gap = 0.5, 2
	for i, a := range boxes {
		for _, b := range boxes[i+1:] {
			ox := min(a.r.Max.X, b.r.Max.X) - max(a.r.Min.X, b.r.Min.X)
			oy := min(a.r.Max.Y, b.r.Max.Y) - max(a.r.Min.Y, b.r.Min.Y)
			along, across := ox, oy
			if a.rotated {
				along, across = oy, ox
			}
			if ox > slack && oy > slack || a.rotated == b.rotated && across > slack && along > -gap {
				t.Errorf("%q at (%.1f, %.1f)–(%.1f, %.1f) pt runs into %q at (%.1f, %.1f)–(%.1f, %.1f) pt",
					a.s, float64(a.r.Min.X), float64(a.r.Min.Y), float64(a.r.Max.X), float64(a.r.Max.Y),
					b.s, float64(b.r.Min.X), float64(b.r.Min.Y), float64(b.r.Max.X), float64(b.r.Max.Y))
			}
		}
	}
}

// checkInside fails t for each text box that leaves a w×h canvas.
func checkInside(t *testing.T, boxes []textBox, w, h vg.Length) {
	t.Helper()
	// gonum places a title's em box up to a few hundredths of a point
	// past the top; the letters themselves stay well inside their box.
	const slack = 0.1
	for _, b := range boxes {
		if b.r.Min.X < -slack || b.r.Min.Y < -slack || b.r.Max.X > w+slack || b.r.Max.Y > h+slack {
			t.Errorf("%q at (%.1f, %.1f)–(%.1f, %.1f) pt leaves the %.1f×%.1f pt canvas",
				b.s, float64(b.r.Min.X), float64(b.r.Min.Y), float64(b.r.Max.X), float64(b.r.Max.Y), float64(w), float64(h))
		}
	}
}

// drawText draws f on a w×h canvas and returns the box of each string.
func drawText(f *figure, w, h vg.Length) []textBox {
	rec := &textRecorder{Canvas: vgimg.New(w, h), m: affine{a: 1, d: 1}}
	f.Draw(draw.Canvas{Canvas: rec, Rectangle: vg.Rectangle{Max: vg.Point{X: w, Y: h}}})
	return rec.boxes
}

// textBox is where a string of a font size was drawn.
type textBox struct {
	s       string
	size    vg.Length
	r       vg.Rectangle
	rotated bool // read bottom to top (a y label)
}

// textRecorder is a canvas that records the box of every string drawn
// on it, through the transforms in force (a y label is drawn rotated).
type textRecorder struct {
	vg.Canvas
	m     affine
	stack []affine
	boxes []textBox
}

// affine maps (x, y) to (a·x + c·y + e, b·x + d·y + f).
type affine struct{ a, b, c, d, e, f float64 }

func (m affine) apply(p vg.Point) vg.Point {
	x, y := float64(p.X), float64(p.Y)
	return vg.Point{X: vg.Length(m.a*x + m.c*y + m.e), Y: vg.Length(m.b*x + m.d*y + m.f)}
}

func (r *textRecorder) Push() { r.stack = append(r.stack, r.m); r.Canvas.Push() }

func (r *textRecorder) Pop() {
	r.m, r.stack = r.stack[len(r.stack)-1], r.stack[:len(r.stack)-1]
	r.Canvas.Pop()
}

func (r *textRecorder) Translate(p vg.Point) {
	m, x, y := r.m, float64(p.X), float64(p.Y)
	r.m.e, r.m.f = m.a*x+m.c*y+m.e, m.b*x+m.d*y+m.f
	r.Canvas.Translate(p)
}

func (r *textRecorder) Rotate(rad float64) {
	m, sin, cos := r.m, math.Sin(rad), math.Cos(rad)
	r.m.a, r.m.b, r.m.c, r.m.d = m.a*cos+m.c*sin, m.b*cos+m.d*sin, m.c*cos-m.a*sin, m.d*cos-m.b*sin
	r.Canvas.Rotate(rad)
}

func (r *textRecorder) Scale(x, y float64) {
	r.m.a, r.m.b, r.m.c, r.m.d = r.m.a*x, r.m.b*x, r.m.c*y, r.m.d*y
	r.Canvas.Scale(x, y)
}

func (r *textRecorder) FillString(f font.Face, pt vg.Point, s string) {
	// The em box gonum lays text out by (its lines are a font size
	// apart): it holds every letter and digit; the font's ascent also
	// holds accents, and overshot gonum's own layout.
	bottom := pt.Y - f.Extents().Descent
	inf := vg.Length(math.Inf(1))
	box := vg.Rectangle{Min: vg.Point{X: inf, Y: inf}, Max: vg.Point{X: -inf, Y: -inf}}
	for _, x := range []vg.Length{pt.X, pt.X + f.Width(s)} {
		for _, y := range []vg.Length{bottom, bottom + f.Font.Size} {
			p := r.m.apply(vg.Point{X: x, Y: y})
			box.Min.X, box.Min.Y = min(box.Min.X, p.X), min(box.Min.Y, p.Y)
			box.Max.X, box.Max.Y = max(box.Max.X, p.X), max(box.Max.Y, p.Y)
		}
	}
	r.boxes = append(r.boxes, textBox{s, f.Font.Size, box, math.Abs(r.m.b) > 1e-9})
	r.Canvas.FillString(f, pt, s)
}

func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// inked is the fraction of r's pixels that are not white.
func inked(img image.Image, r image.Rectangle) float64 {
	var n, total int
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if cr, cg, cb, _ := img.At(x, y).RGBA(); cr < 0xf000 || cg < 0xf000 || cb < 0xf000 {
				n++
			}
			total++
		}
	}
	if total == 0 {
		return 0
	}
	return float64(n) / float64(total)
}

// TestMemorizationPanels: the rates and the AUC of memorization over
// training go in two panels, the AUC's only when some step has one.
func TestMemorizationPanels(t *testing.T) {
	nan := math.NaN()
	run := func(label string, auc float64) *runData {
		r := &runData{Label: label}
		for step := int64(40); step <= 200; step += 40 {
			f := float64(step) / 200
			r.Memorization = append(r.Memorization, eval.Memorization{Step: step, Split: splitTarget, N: 32,
				ExactMatch: f, ExactMatchLo: f * 0.8, ExactMatchHi: f, RougeL: f, RougeLLo: nan, RougeLHi: nan,
				LossAUC: auc, LossAUCLo: nan, LossAUCHi: nan})
		}
		return r
	}
	cfg := DefaultConfig()
	cfg.Formats = []string{"png"}
	f, err := memorizationCurves(cfg, []*runData{run("standard", 0.9), run("goldfish", 0.8)})
	if err != nil {
		t.Fatal(err)
	}
	if f == nil || f.lower == nil || len(f.entries) != 5 {
		t.Fatalf("figure %v: want a lower AUC panel and five legend entries (two runs, three metrics)", f)
	}
	if f.Y.Max > 1.05 || f.lower.Y.Min != 0 || f.X.Min != f.lower.X.Min || f.X.Max != f.lower.X.Max {
		t.Errorf("upper y to %g, panels' x [%g, %g] and [%g, %g]: want rates within 1.05 and one x range", f.Y.Max, f.X.Min, f.X.Max, f.lower.X.Min, f.lower.X.Max)
	}
	dir := outDir(t, "memorization-panels")
	if _, err := save(f, cfg, dir, "memorization-over-training"); err != nil {
		t.Fatal(err)
	}
	img := readPNG(t, filepath.Join(dir, "memorization-over-training.png"))
	b := img.Bounds()
	if top, bottom := inked(img, image.Rect(0, 0, b.Max.X, b.Max.Y/3)), inked(img, image.Rect(0, b.Max.Y/3, b.Max.X, 2*b.Max.Y/3)); top < 0.01 || bottom < 0.01 {
		t.Errorf("panels inked %.3f and %.3f: want both drawn", top, bottom)
	}

	f, err = memorizationCurves(cfg, []*runData{run("standard", nan)})
	if err != nil || f == nil || f.lower != nil {
		t.Fatalf("without AUC: figure %v, %v; want the rates alone", f, err)
	}
	if f.X.Label.Text != "optimizer step" {
		t.Errorf("without AUC: x axis labelled %q; the lower panel's label is the rates'", f.X.Label.Text)
	}
}

// TestLogAxisCentred: a figure on log axes with long centred labels keeps
// its axes where linear axes with the same labels put them, give or take
// a tick label; gonum alone pushed them a quarter of the width left and
// down (it reserves the label's room at the range's arithmetic midpoint).
func TestLogAxisCentred(t *testing.T) {
	cfg := DefaultConfig()
	c := draw.New(vgimg.New(vg.Length(cfg.WidthIn)*vg.Inch, vg.Length(cfg.HeightIn)*vg.Inch))
	area := func(log bool) draw.Canvas {
		p := newPlot(cfg, "a title", "occurrences of the target's window in the training corpus", "targets extracted (exact match %)")
		pts := plotter.XYs{{X: 1, Y: 0.001}, {X: 255, Y: 1}}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			t.Fatal(err)
		}
		p.Add(sc)
		if log {
			p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
			p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
		}
		return drawPanel(p.Plot, c)
	}
	lin, log := area(false), area(true)
	slack := vg.Points(cfg.FontSize * 3) // tick labels of other widths
	for _, d := range []struct {
		name     string
		lin, log vg.Length
	}{
		{"left", lin.Min.X, log.Min.X}, {"right", lin.Max.X, log.Max.X},
		{"bottom", lin.Min.Y, log.Min.Y}, {"top", lin.Max.Y, log.Max.Y},
	} {
		if diff := d.log - d.lin; diff > slack || -diff > slack {
			t.Errorf("%s edge of the data area: %.1f pt on log axes, %.1f pt on linear ones", d.name, d.log.Points(), d.lin.Points())
		}
	}
}

// TestSavedFiguresReproducible: a figure saved twice is the same bytes in
// every format; the PDF's dates were the clock's, so a report written
// again from the same runs differed in its PDFs alone.
func TestSavedFiguresReproducible(t *testing.T) {
	cfg := DefaultConfig()
	var first [][]byte
	for i := range 2 {
		f := newPlot(cfg, "Extraction", "step", "exact match")
		ln, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0.5}})
		if err != nil {
			t.Fatal(err)
		}
		f.Add(ln)
		f.addLegend("standard", ln)
		written, err := save(f, cfg, t.TempDir(), "fig")
		if err != nil {
			t.Fatal(err)
		}
		for j, path := range written {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = append(first, b)
			} else if !bytes.Equal(b, first[j]) {
				t.Errorf("%s differs when saved again", filepath.Base(path))
			}
		}
		if i == 0 {
			time.Sleep(1100 * time.Millisecond) // a PDF date is to the second
		}
	}
}

// TestSeriesOffsetsDistinct: threshold-vs-params draws each loss's two
// measures at x offsets of their own; with two losses, standard's RougeL
// lay on goldfish's exact match.
func TestSeriesOffsetsDistinct(t *testing.T) {
	for n := 1; n <= 4; n++ {
		seen := map[float64]string{}
		sum := 0.0
		for li := range n {
			for _, nudge := range []float64{-1, 1} {
				x := seriesOffset(li, n, nudge)
				name := fmt.Sprintf("loss %d, nudge %+g", li, nudge)
				if other, ok := seen[x]; ok {
					t.Errorf("%d losses: %s and %s both at %g", n, other, name, x)
				}
				seen[x], sum = name, sum+x
			}
		}
		if sum != 0 {
			t.Errorf("%d losses: offsets sum to %g, want centred on the model", n, sum)
		}
	}
}

// TestWrapText: a text wider than the width breaks at spaces, not after
// an opening parenthesis' first word nor inside "95 %", and a word wider
// than the width between letters; no line is wider than the width.
func TestWrapText(t *testing.T) {
	sty := newPlot(DefaultConfig(), "", "", "").Legend.TextStyle
	em := sty.Width("m")
	for _, tc := range []struct {
		s     string
		width vg.Length
		want  string
	}{
		{"loss (AUC 0.891)", 100 * em, "loss (AUC 0.891)"},
		{"loss (AUC 0.891)", sty.Width("(AUC 0.891)"), "loss\n(AUC 0.891)"},
		{"exact match %, 95 % CI", sty.Width("exact match %, 95"), "exact match %,\n95 % CI"},
		{"goldfish", sty.Width("gold"), "gold\nfish"},
		{"a b", 0, "a b"},
		// A review's cases: a cut at "95 %"'s space left a line of a
		// space alone, and the author's own line break was lost.
		{"CI 95 %", sty.Width("95"), "CI\n95\n%"},
		{"% % %", 0.1, "%\n%\n%"},
		{"a\nb c d e f g", sty.Width("b c"), "a\nb c\nd e\nf g"},
	} {
		got := wrapText(sty, tc.s, tc.width)
		if got != tc.want {
			t.Errorf("wrapText(%q, %.1f pt) = %q, want %q", tc.s, float64(tc.width), got, tc.want)
		}
		for _, line := range strings.Split(got, "\n") {
			if strings.TrimSpace(line) == "" && strings.TrimSpace(tc.s) != "" {
				t.Errorf("wrapText(%q) = %q: a line of nothing but spaces", tc.s, got)
			}
			if tc.width > 0 && sty.Width(line) > tc.width && len([]rune(line)) > 1 {
				t.Errorf("wrapText(%q): line %q is %.1f pt, wider than %.1f", tc.s, line, float64(sty.Width(line)), float64(tc.width))
			}
		}
	}
}

// spacedTicks thins labels that run together, and never below two: one
// number alone gives an axis no scale.
func TestSpacedTicks(t *testing.T) {
	p := plot.New()
	p.X.Min, p.X.Max = 0, 1
	p.X.Tick.Label.Font.Size = 11
	p.X.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0.00"}, {Value: 0.25, Label: "0.25"}, {Value: 0.5, Label: "0.50"}, {Value: 0.75, Label: "0.75"}, {Value: 1, Label: "1.00"}}
	labels := func(m plot.Ticker) []string {
		var out []string
		for _, tk := range m.Ticks(p.X.Min, p.X.Max) {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	for _, tc := range []struct {
		length vg.Length
		want   string
	}{
		{400, "0.00 0.25 0.50 0.75 1.00"}, // room for all
		{80, "0.00 0.50 1.00"},            // every second
		{10, "0.00 1.00"},                 // crowded still, but two
	} {
		m := spacedTicks(&p.X, tc.length, false)
		if got := strings.Join(labels(m), " "); got != tc.want {
			t.Errorf("%v pt: labels %q, want %q", float64(tc.length), got, tc.want)
		}
		if n := len(m.Ticks(p.X.Min, p.X.Max)); n != 5 {
			t.Errorf("%v pt: %d ticks, want all 5 kept", float64(tc.length), n)
		}
	}
}
