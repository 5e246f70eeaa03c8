package plots

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// figure is a plot whose legend save draws below the axes, in as many
// columns as the width holds, rather than inside them: a legend inside
// covers data or needs headroom above it, and a sweep's many series
// crowded both (a figure review's finding). A legend too tall for the
// configured height makes the figure taller (canvasHeight) rather than
// going inside, as matplotlib's bbox_inches="tight" does with a legend
// outside the axes.
type figure struct {
	*plot.Plot
	entries []legendEntry
	// lower, when set, is a second panel under the first with its own y
	// axis, aligned to it: a quantity on another scale or of another
	// kind, sharing the x axis and the legend.
	lower *plot.Plot
}

// legendEntry is one line of a figure's legend.
type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

// addLegend adds a legend line: name beside the composite of thumbs.
func (f *figure) addLegend(name string, thumbs ...plot.Thumbnailer) {
	f.entries = append(f.entries, legendEntry{name, thumbs})
}

// maxLegendShare is the most of the configured height a legend below the
// axes may take from them; a taller legend makes the figure taller.
const maxLegendShare = 0.3

// legendGap is the space between the axes and the legend, and between
// legend columns.
const legendGap = vg.Length(6)

// canvasHeight is the height save gives the figure at width w and
// configured height h: h when the legend band takes at most
// maxLegendShare of it, else the axes keep (1-maxLegendShare)·h and the
// band is added below them. Ten AUC-labelled ROC curves in one column at
// 5 in took a third of the height; inside the axes they covered curves.
//
// The axes grow too where their data area would keep less than
// minDataShare of h: at the smallest size and 11 pt a wrapped title, x
// label and tick labels left the data a few points high.
func (f *figure) canvasHeight(w, h vg.Length) vg.Length {
	axes, band := h, vg.Length(0)
	if len(f.entries) > 0 {
		band = f.legendLayout(w).band
		axes = max(h-band, (1-maxLegendShare)*h)
	}
	// Adding the shortfall need not gain as much data height: gonum
	// shrinks the data area to hold a y label longer than it, and the
	// label rewraps at each height. A few rounds close the gap.
	for range 8 {
		d := f.dataHeight(w, axes)
		if d >= minDataShare*h {
			break
		}
		axes += minDataShare*h - d
	}
	return axes + band
}

// minDataShare is the least share of the configured height that the
// data area of a figure's axes (both panels' together) keeps.
const minDataShare = 1.0 / 3

// dataHeight is the height of the data area(s) when drawAxes draws into
// a w×h canvas, the labels wrapped as it wraps them.
func (f *figure) dataHeight(w, h vg.Length) vg.Length {
	c := draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: w, Y: h}}}
	panel := func(p *plot.Plot, c draw.Canvas) vg.Length {
		defer fitLabels(p, c)()
		return p.DataCanvas(c).Size().Y
	}
	if f.lower == nil {
		return panel(f.Plot, c)
	}
	half := draw.Crop(c, 0, 0, (h+legendGap)/2, 0)
	return 2 * min(panel(f.Plot, half), panel(f.lower, half))
}

// Draw draws the axes into the top of c and the legend, if any, into a
// band at the bottom; c is canvasHeight high, so that the band leaves
// the axes their share.
func (f *figure) Draw(c draw.Canvas) {
	if len(f.entries) == 0 {
		f.drawAxes(c)
		return
	}
	if f.BackgroundColor != nil { // the band is outside the plot's own fill
		c.SetColor(f.BackgroundColor)
		c.Fill(c.Rectangle.Path())
	}
	lay := f.legendLayout(c.Size().X)
	f.drawAxes(draw.Crop(c, 0, 0, lay.band, 0))
	total := vg.Length(lay.cols)*lay.colWidth + vg.Length(lay.cols-1)*legendGap
	left := c.Min.X + max(0, (c.Size().X-total)/2)
	for col := 0; col < lay.cols; col++ {
		x := left + vg.Length(col)*(lay.colWidth+legendGap)
		top := c.Min.Y + lay.band - legendGap
		for r := 0; r < lay.rows; r++ {
			i := col*lay.rows + r
			if i >= len(f.entries) {
				break
			}
			top -= f.drawEntry(c, i, lay.names[i], x, lay.colWidth, top)
		}
	}
}

// drawEntry draws entry i, its name as wrapped, in a column at x of that
// width from top down, and returns the height it took. Each entry is a
// plot.Legend of its own, so that a name wrapped onto two lines makes its
// row alone taller, its thumbnail centred beside both lines.
func (f *figure) drawEntry(c draw.Canvas, i int, name string, x, width, top vg.Length) vg.Length {
	l := f.Legend // the style newPlot set; the plot itself draws none
	l.Top, l.Left = true, true
	l.Add(name, f.entries[i].thumbs...)
	l.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
		Min: vg.Point{X: x, Y: c.Min.Y},
		Max: vg.Point{X: x + width, Y: top},
	}})
	return f.entryHeight(name)
}

// entryHeight is the height of a legend row of name, padding included.
func (f *figure) entryHeight(name string) vg.Length {
	return f.Legend.TextStyle.Rectangle(name).Max.Y + f.Legend.Padding
}

// drawAxes draws the panel, or both panels aligned one above the other,
// with labels wrapped to fit c (fitLabels).
func (f *figure) drawAxes(c draw.Canvas) {
	if f.lower == nil {
		defer fitLabels(f.Plot, c)()
		drawPanel(f.Plot, c)
		return
	}
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: legendGap}
	half := draw.Crop(c, 0, 0, (c.Size().Y+legendGap)/2, 0)
	defer fitLabels(f.Plot, half)()
	defer fitLabels(f.lower, half)()
	canvases := plot.Align([][]*plot.Plot{{f.Plot}, {f.lower}}, tiles, c)
	f.Plot.Draw(canvases[0][0])
	f.lower.Draw(canvases[1][0])
}

// legendLayout is where Draw puts the legend in a band below the axes.
type legendLayout struct {
	names      []string // the entries' names, wrapped to the column
	cols, rows int
	colWidth   vg.Length
	band       vg.Length // the band's height, the gap above it included
}

// legendLayout lays the entries out for a canvas width: names wrapped
// where one is wider than the canvas (a run's label with its AUC and
// interval at a paper column's 3.3 in ran off the edge), then gridShape's
// columns of the widest name's width, filled top to bottom. The band is
// as tall as the tallest column: plot.Legend draws a first row a font
// descent below the top, and a last row's thumbnail reaches a descent
// below its text.
func (f *figure) legendLayout(width vg.Length) legendLayout {
	sty := f.Legend.TextStyle
	indent := f.Legend.ThumbnailWidth + sty.Width(" ")
	lay := legendLayout{names: make([]string, len(f.entries))}
	for i, e := range f.entries {
		lay.names[i] = wrapText(sty, e.name, width-indent)
		lay.colWidth = max(lay.colWidth, indent+sty.Width(lay.names[i]))
	}
	lay.cols, lay.rows = gridShape(len(f.entries), width, lay.colWidth)
	var tallest vg.Length
	for col := 0; col < lay.cols; col++ {
		var h vg.Length
		for r := 0; r < lay.rows && col*lay.rows+r < len(f.entries); r++ {
			h += f.entryHeight(lay.names[col*lay.rows+r])
		}
		tallest = max(tallest, h)
	}
	lay.band = tallest + 2*sty.FontExtents().Descent + legendGap
	return lay
}

// gridShape is the legend grid of n entries of width colWidth across
// width: the most columns that fit (at least one), then as few columns as
// hold the entries in the fewest rows, filled top to bottom so that a
// run's series stay together.
func gridShape(n int, width, colWidth vg.Length) (cols, rows int) {
	if n == 0 {
		return 0, 0
	}
	cols = 1
	for cols < n && vg.Length(cols+1)*colWidth+vg.Length(cols)*legendGap <= width {
		cols++
	}
	rows = (n + cols - 1) / cols
	cols = (n + rows - 1) / rows
	return cols, rows
}

// drawPanel draws p into c and returns the canvas of its data area. On a
// log axis gonum reserves room for a centred axis label as if it stood at
// the range's arithmetic midpoint (near the top of a log range) while it
// draws the label at the centre: a long label then pushed the axes a
// quarter of the width off centre. For such an axis drawPanel leaves the
// label out of gonum's layout and draws it itself where gonum would.
func drawPanel(p *plot.Plot, c draw.Canvas) draw.Canvas {
	fixX, fixY := logLabel(p.X), logLabel(p.Y)
	if !fixX && !fixY {
		p.Draw(c)
		return p.DataCanvas(c)
	}
	title, xl, yl := p.Title, p.X.Label, p.Y.Label
	defer func() { p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title.Text, xl.Text, yl.Text }()
	inner := c
	if title.Text != "" { // drawn here, so that it stays centred on c
		if p.BackgroundColor != nil {
			c.SetColor(p.BackgroundColor)
			c.Fill(c.Rectangle.Path())
		}
		c.FillText(title.TextStyle, vg.Point{X: c.Center().X, Y: c.Max.Y + title.TextStyle.FontExtents().Descent}, title.Text)
		inner.Max.Y -= title.TextStyle.Rectangle(title.Text).Size().Y + title.Padding
		p.Title.Text = ""
	}
	if fixX {
		inner.Min.Y += xl.TextStyle.Height(xl.Text) + xl.Padding
		p.X.Label.Text = ""
	}
	if fixY {
		inner.Min.X += yl.TextStyle.Height(yl.Text) + yl.TextStyle.FontExtents().Descent + yl.Padding
		p.Y.Label.Text = ""
	}
	p.Draw(inner)
	data := p.DataCanvas(inner)
	if fixX {
		c.FillText(xl.TextStyle, vg.Point{X: data.Center().X, Y: c.Min.Y + xl.TextStyle.FontExtents().Descent}, xl.Text)
	}
	if fixY {
		sty := yl.TextStyle
		sty.Rotation += math.Pi / 2
		c.FillText(sty, vg.Point{X: c.Min.X + yl.TextStyle.Height(yl.Text) - yl.TextStyle.FontExtents().Descent, Y: data.Center().Y}, yl.Text)
	}
	return data
}

// logLabel reports whether axis a has a centred label on a log scale.
func logLabel(a plot.Axis) bool {
	_, log := a.Scale.(plot.LogScale)
	return log && a.Label.Text != "" && a.Label.Position == draw.PosCenter
}
