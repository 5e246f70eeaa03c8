package plots

import (
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// fitLabels wraps p's title to c's width and its axis labels to the
// length of their axes, and returns what puts the texts back: at a paper
// column's 3.3 in a title or an axis label of the house size ran past
// the canvas edge and was cut off, and a smaller font would set one
// figure's text apart from its neighbours'. The y axis is measured
// without the labels, since gonum shrinks an axis to hold a label longer
// than it, and the x axis then beside the wrapped y label, which narrows
// it. (Measuring both again, each label shortening the other's axis,
// shrank the axes until labels broke into a word a line.)
func fitLabels(p *plot.Plot, c draw.Canvas) (restore func()) {
	title, xl, yl := p.Title.Text, p.X.Label.Text, p.Y.Label.Text
	p.Title.Text = wrapText(p.Title.TextStyle, title, c.Size().X)
	p.X.Label.Text, p.Y.Label.Text = "", ""
	p.Y.Label.Text = wrapText(p.Y.Label.TextStyle, yl, p.DataCanvas(c).Size().Y)
	p.X.Label.Text = wrapText(p.X.Label.TextStyle, xl, p.DataCanvas(c).Size().X)
	xm, ym := p.X.Tick.Marker, p.Y.Tick.Marker
	size := p.DataCanvas(c).Size()
	p.X.Tick.Marker = spacedTicks(&p.X, size.X, false)
	p.Y.Tick.Marker = spacedTicks(&p.Y, size.Y, true)
	return func() {
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xl, yl
		p.X.Tick.Marker, p.Y.Tick.Marker = xm, ym
	}
}

// tickGap is the least space between two tick labels side by side on
// the x axis. On the y axis their em boxes may touch, as a paragraph's
// lines do: digits stand well inside them.
const tickGap = vg.Length(3)

// spacedTicks is a's tick marker with its labels thinned, every second
// one dropped (its tick kept, unlabelled), then every fourth, until no
// two labels along an axis length long run together: gonum spaces ticks
// by the range alone, and on a 2.5 in axis at 11 pt "1.60 1.65 … 1.90"
// read as one number.
func spacedTicks(a *plot.Axis, length vg.Length, vertical bool) plot.Ticker {
	m := a.Tick.Marker
	if m == nil || length <= 0 {
		return m
	}
	var best plot.Ticker = m
	for keep := 1; keep <= 16; keep *= 2 {
		ticks := everyNthLabel(m.Ticks(a.Min, a.Max), keep)
		if keep > 1 && labelCount(a, ticks) < 2 {
			// One number alone gives no scale: keep two, crowded.
			break
		}
		if keep > 1 {
			best = plot.ConstantTicks(ticks)
		}
		if !labelsCrowded(a, ticks, length, vertical) {
			break
		}
	}
	return best
}

// labelCount is the number of labelled ticks of ticks within a's range.
func labelCount(a *plot.Axis, ticks []plot.Tick) int {
	n := 0
	for _, t := range ticks {
		if t.Label != "" && t.Value >= a.Min && t.Value <= a.Max {
			n++
		}
	}
	return n
}

// everyNthLabel is ticks with the label of all but every nth labelled
// tick dropped, the first kept.
func everyNthLabel(ticks []plot.Tick, n int) []plot.Tick {
	out := make([]plot.Tick, len(ticks))
	copy(out, ticks)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Value < out[j].Value })
	i := 0
	for j := range out {
		if out[j].Label == "" {
			continue
		}
		if i%n != 0 {
			out[j].Label = ""
		}
		i++
	}
	return out
}

// labelsCrowded reports whether two of the labels of ticks on a, laid
// along length, come closer than tickGap.
func labelsCrowded(a *plot.Axis, ticks []plot.Tick, length vg.Length, vertical bool) bool {
	end := vg.Length(math.Inf(-1))
	for _, t := range ticks {
		if t.Label == "" || t.Value < a.Min || t.Value > a.Max {
			continue
		}
		at := length * vg.Length(a.Scale.Normalize(a.Min, a.Max, t.Value))
		r := a.Tick.Label.Rectangle(t.Label)
		extent, gap := r.Size().X, tickGap
		if vertical {
			extent, gap = r.Size().Y, 0
		}
		if at-extent/2 < end+gap {
			return true
		}
		end = at + extent/2
	}
	return false
}

// wrapText breaks s at spaces into lines no wider than width in sty, and
// a word wider than width by itself between letters, so that no line is
// wider (but for a single letter wider than width). A line does not end
// on an opening parenthesis' first word: "seed 0\n(AUC 0.891 [...])",
// not "seed 0 (AUC\n0.891 [...])".
func wrapText(sty text.Style, s string, width vg.Length) string {
	if width <= 0 || sty.Width(s) <= width {
		return s
	}
	if strings.Contains(s, "\n") { // the author's breaks stay
		parts := strings.Split(s, "\n")
		for i, p := range parts {
			parts[i] = wrapText(sty, p, width)
		}
		return strings.Join(parts, "\n")
	}
	var lines []string
	line := ""
	for _, word := range words(s) {
		if line != "" && sty.Width(line+" "+word) <= width {
			line += " " + word
			continue
		}
		if i := strings.LastIndex(line, " "); i > 0 && opens(line[i+1:]) && sty.Width(line[i+1:]+" "+word) <= width {
			lines, line = append(lines, line[:i]), line[i+1:]+" "+word
			continue
		}
		if line != "" {
			lines = append(lines, line)
		}
		for line = word; sty.Width(line) > width; {
			// "95 %" is one word: a cut at its space leaves no line
			// of a space alone.
			cut := widestPrefix(sty, line, width)
			if piece := strings.TrimRight(line[:cut], " "); piece != "" {
				lines = append(lines, piece)
			}
			line = strings.TrimLeft(line[cut:], " ")
		}
	}
	if line != "" { // empty when a letter wider than width ended s
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// words are s's words, a unit standing apart ("95 %") kept with its
// number.
func words(s string) []string {
	var ws []string
	for _, w := range strings.Fields(s) {
		if w == "%" && len(ws) > 0 {
			ws[len(ws)-1] += " " + w
			continue
		}
		ws = append(ws, w)
	}
	return ws
}

// opens reports whether word opens a parenthesis or bracket it does not
// close.
func opens(word string) bool {
	return strings.HasPrefix(word, "(") && !strings.Contains(word, ")") ||
		strings.HasPrefix(word, "[") && !strings.Contains(word, "]")
}

// widestPrefix is the length in bytes of the longest prefix of s, a
// whole letter at least, no wider than width in sty.
func widestPrefix(sty text.Style, s string, width vg.Length) int {
	cut := 0
	for i, r := range s {
		end := i + utf8.RuneLen(r)
		if cut > 0 && sty.Width(s[:end]) > width {
			break
		}
		cut = end
	}
	return cut
}
