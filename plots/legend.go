package plots

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// figure is a plot whose legend save draws below the axes, in as many
// columns as the width holds, rather than inside them: a legend inside
// covers data or needs headroom above it, and a sweep's many series
// crowded both (a figure review's finding). A legend that would take more
// than maxLegendShare of the height goes inside after all.
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

// maxLegendShare is the most of a figure's height a legend below the
// axes may take; a taller one goes inside the axes.
const maxLegendShare = 0.3

// legendFitsBelow reports whether a legend band of that height leaves the
// axes enough of a figure of height h.
func legendFitsBelow(band, h vg.Length) bool { return band <= maxLegendShare*h }

// legendGap is the space between the axes and the legend, and between
// legend columns.
const legendGap = vg.Length(6)

// Draw draws the axes into the top of c and the legend, if any, into a
// band at the bottom.
func (f *figure) Draw(c draw.Canvas) {
	if len(f.entries) == 0 {
		f.drawAxes(c)
		return
	}
	if f.BackgroundColor != nil { // the band is outside the plot's own fill
		c.SetColor(f.BackgroundColor)
		c.Fill(c.Rectangle.Path())
	}
	cols, rows, colWidth, rowHeight := f.legendGrid(c.Size().X)
	band := f.legendBand(rows, rowHeight)
	if !legendFitsBelow(band, c.Size().Y) {
		// Below, it would squash the axes (ten AUC-labelled ROC curves
		// are one column of ten rows at 5 in): inside the axes instead,
		// where plot.Legend's Top and Left put it, on a pale box so that
		// the curves under it do not run through its text.
		l := f.Legend // the style newPlot set; the plot itself draws none
		for _, e := range f.entries {
			l.Add(e.name, e.thumbs...)
		}
		data := f.drawAxes(c)
		c.SetColor(legendBackground)
		c.Fill(f.insideLegendRect(data).Path())
		l.Draw(data)
		return
	}
	f.drawAxes(draw.Crop(c, 0, 0, band, 0))
	total := vg.Length(cols)*colWidth + vg.Length(cols-1)*legendGap
	left := c.Min.X + (c.Size().X-total)/2
	if left < c.Min.X {
		left = c.Min.X
	}
	for col := 0; col < cols; col++ {
		l := f.Legend // the style newPlot set; entries added below
		l.Top, l.Left = true, true
		for r := 0; r < rows; r++ {
			if i := col*rows + r; i < len(f.entries) {
				l.Add(f.entries[i].name, f.entries[i].thumbs...)
			}
		}
		x := left + vg.Length(col)*(colWidth+legendGap)
		l.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x, Y: c.Min.Y},
			Max: vg.Point{X: x + colWidth, Y: c.Min.Y + band - legendGap},
		}})
	}
}

// drawAxes draws the panel, or both panels aligned one above the other,
// and returns the (upper) panel's data area.
func (f *figure) drawAxes(c draw.Canvas) draw.Canvas {
	if f.lower == nil {
		return drawPanel(f.Plot, c)
	}
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: legendGap}
	canvases := plot.Align([][]*plot.Plot{{f.Plot}, {f.lower}}, tiles, c)
	f.Plot.Draw(canvases[0][0])
	f.lower.Draw(canvases[1][0])
	return f.Plot.DataCanvas(canvases[0][0])
}

// legendBackground is the box under a legend drawn inside the axes:
// white, a little transparent, so that what it covers still shows.
var legendBackground = color.NRGBA{R: 255, G: 255, B: 255, A: 215}

// insideLegendRect is where plot.Legend draws the figure's entries in
// data, as Legend.Draw lays them out, with a little margin (gonum's
// Legend.Rectangle swaps Left's sides).
func (f *figure) insideLegendRect(data draw.Canvas) vg.Rectangle {
	sty := f.Legend.TextStyle
	var width, rowHeight vg.Length
	for _, e := range f.entries {
		width = max(width, f.Legend.ThumbnailWidth+sty.Rectangle(" "+e.name).Max.X)
		rowHeight = max(rowHeight, sty.Rectangle(e.name).Max.Y)
	}
	n := vg.Length(len(f.entries))
	height := n*rowHeight + (n-1)*f.Legend.Padding + sty.FontExtents().Descent
	r := vg.Rectangle{Min: vg.Point{X: data.Max.X - width, Y: data.Min.Y}, Max: vg.Point{X: data.Max.X, Y: data.Min.Y + height}}
	if f.Legend.Left {
		r.Min.X, r.Max.X = data.Min.X, data.Min.X+width
	}
	if f.Legend.Top {
		r.Min.Y, r.Max.Y = data.Max.Y-height, data.Max.Y
	}
	const margin = vg.Length(2)
	r.Min.X, r.Min.Y, r.Max.X, r.Max.Y = r.Min.X-margin, r.Min.Y-margin, r.Max.X+margin, r.Max.Y+margin
	return r
}

// legendBand is the height of a legend of rows rows: plot.Legend draws
// its first row a font descent below the top, and the last row's
// thumbnails reach a descent below its text.
func (f *figure) legendBand(rows int, rowHeight vg.Length) vg.Length {
	return vg.Length(rows)*rowHeight + 2*f.Legend.TextStyle.FontExtents().Descent + legendGap
}

// legendGrid lays the entries out for a canvas width: gridShape's columns
// of the widest entry's width, each row as tall as the tallest entry.
func (f *figure) legendGrid(width vg.Length) (cols, rows int, colWidth, rowHeight vg.Length) {
	sty := f.Legend.TextStyle
	for _, e := range f.entries {
		colWidth = max(colWidth, f.Legend.ThumbnailWidth+sty.Rectangle(" "+e.name).Max.X)
		rowHeight = max(rowHeight, sty.Rectangle(e.name).Max.Y)
	}
	cols, rows = gridShape(len(f.entries), width, colWidth)
	return cols, rows, colWidth, rowHeight + f.Legend.Padding
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
