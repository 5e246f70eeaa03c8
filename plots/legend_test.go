package plots

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memo-research/memo/eval"
	"gonum.org/v1/plot"
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

// TestLegendBelowAxes draws a four-entry legend at the default size and
// at a single paper column (3.3 in, 8 pt): it lies in a band below the
// axes, and both the band and the axes above it are drawn. The log-log
// ROC's ten AUC-labelled entries would take a third of the height in one
// column: they go inside the axes.
func TestLegendBelowAxes(t *testing.T) {
	column := DefaultConfig()
	column.WidthIn, column.HeightIn, column.FontSize, column.Formats = 3.3, 2.6, 8, []string{"png", "svg", "pdf"}
	roc := []string{"loss", "zlib ratio", "min-k% loss", "min-k%++", "ReCaLL", "LiRA online", "LiRA offline", "RMIA", "RMIA offline", "counterfactual memorization"}
	for _, tc := range []struct {
		cfg   Config
		names []string
		below bool
	}{
		{DefaultConfig(), []string{"standard", "goldfish k=4, h=13", "exact match", "RougeL"}, true},
		{column, []string{"standard", "goldfish k=4, h=13", "exact match", "RougeL"}, true},
		{DefaultConfig(), roc, false},
		{column, roc, false},
	} {
		cfg := tc.cfg
		f := newPlot(cfg, "Membership inference", "false-positive rate", "true-positive rate")
		for i, n := range tc.names {
			ln, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: float64(i) / 10}})
			if err != nil {
				t.Fatal(err)
			}
			ln.LineStyle.Color = colorAt(i)
			f.Add(ln)
			if !tc.below {
				n += " (AUC 0.891 [0.851, 0.927])"
			}
			f.addLegend(n, ln)
		}
		w, h := vg.Length(cfg.WidthIn)*vg.Inch, vg.Length(cfg.HeightIn)*vg.Inch
		cols, rows, colWidth, rowHeight := f.legendGrid(w)
		band := f.legendBand(rows, rowHeight)
		name := fmt.Sprintf("%gin-%d", cfg.WidthIn, len(tc.names))
		if got := legendFitsBelow(band, h); got != tc.below {
			t.Errorf("%s: legend %d×%d, %.0f of %.0f pt high: below = %v, want %v", name, cols, rows, float64(band), float64(h), got, tc.below)
		}
		if cols < 1 || vg.Length(cols)*colWidth > w && cols > 1 {
			t.Errorf("%s: %d columns of %.0f pt in %.0f pt", name, cols, float64(colWidth), float64(w))
		}
		dir := outDir(t, "legend-"+name)
		written, err := save(f, cfg, dir, "roc")
		if err != nil {
			t.Fatal(err)
		}
		if len(written) != len(cfg.Formats) {
			t.Errorf("%s: wrote %v, want one file a format", name, written)
		}
		if !tc.below {
			continue
		}
		img := readPNG(t, filepath.Join(dir, "roc.png"))
		bandPx := int(float64(band) / 72 * float64(cfg.DPI))
		b := img.Bounds()
		if got := inked(img, image.Rect(0, b.Max.Y-bandPx, b.Max.X, b.Max.Y)); got < 0.01 {
			t.Errorf("%s: the legend band is %.2f%% inked: no legend drawn there", name, 100*got)
		}
		if got := inked(img, image.Rect(0, 0, b.Max.X, b.Max.Y-bandPx)); got < 0.01 {
			t.Errorf("%s: the axes are %.2f%% inked", name, 100*got)
		}
	}
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
