package plots

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"codeberg.org/go-pdf/fpdf"
	"golang.org/x/text/encoding/charmap"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/memo-research/memo/internal/atomicfile"
)

// palette is the Okabe–Ito colour-blind-safe palette (Okabe & Ito 2008),
// starting with the colours that print distinctly in greyscale.
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},   // blue
	color.RGBA{213, 94, 0, 255},    // vermillion
	color.RGBA{0, 158, 115, 255},   // bluish green
	color.RGBA{204, 121, 167, 255}, // reddish purple
	color.RGBA{230, 159, 0, 255},   // orange
	color.RGBA{86, 180, 233, 255},  // sky blue
	color.RGBA{0, 0, 0, 255},       // black
	color.RGBA{240, 228, 66, 255},  // yellow: faint on white, so last
}

var grey = color.RGBA{120, 120, 120, 255}

func colorAt(i int) color.Color { return palette[i%len(palette)] }

// seriesDashes is series i's dash pattern: past the palette's length the
// dashes shift, so that series i and i+len(palette) never look alike.
func seriesDashes(i int) []vg.Length { return dashes[(i+i/len(palette))%len(dashes)] }

// dashes are as many as the colours, so that each of the first eight
// series differs in both (in greyscale too: with four, the loss curve,
// series 0, and ReCaLL's, series 4, were both solid and ReCaLL's hid
// the loss's), and shift after them so that series stay distinct past
// eight.
var dashes = [][]vg.Length{
	nil,
	{vg.Points(5), vg.Points(3)},
	{vg.Points(1.5), vg.Points(2)},
	{vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)},
	{vg.Points(9), vg.Points(3)},
	{vg.Points(3), vg.Points(1.5)},
	{vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2), vg.Points(1.5), vg.Points(2)},
	{vg.Points(0.75), vg.Points(1.5)},
}

// newPlot makes a figure with the house style: font sizes from the
// config, a light grid, the legend below the axes (figure.Draw).
func newPlot(cfg Config, title, xlabel, ylabel string) *figure {
	p := plot.New()
	fs := vg.Points(cfg.FontSize)
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = fs * 1.1
	p.Title.Padding = vg.Points(cfg.FontSize * 0.6)
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = fs
		a.Tick.Label.Font.Size = fs * 0.9
		a.Padding = vg.Points(2)
		a.Tick.Marker = stepTicks{} // figures on log or nominal axes set their own
	}
	p.Legend.TextStyle.Font.Size = fs * 0.85
	p.Legend.Padding = vg.Points(1)
	p.Legend.ThumbnailWidth = vg.Points(18)
	return &figure{Plot: p}
}

// namedWriter is one file of a table: its name and what writes it.
type namedWriter struct {
	name  string
	write func(io.Writer) error
}

// writeFiles writes each file into dir atomically (internal/atomicfile),
// in order, and returns the paths written.
func writeFiles(dir string, files ...namedWriter) ([]string, error) {
	var written []string
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		if err := atomicfile.Write(path, f.write); err != nil {
			return written, err
		}
		written = append(written, path)
	}
	return written, nil
}

// pdfDate is every PDF's CreationDate and ModDate: fpdf stamps the clock
// otherwise, and a report written twice from the same runs differed in
// its PDFs alone. SOURCE_DATE_EPOCH (reproducible-builds.org) sets it.
func pdfDate() time.Time {
	if s, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil {
		return time.Unix(s, 0).UTC()
	}
	return time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
}

// setPDFDates sets fpdf's package-wide dates once, before the first PDF.
var setPDFDates = sync.OnceFunc(func() {
	fpdf.SetDefaultCreationDate(pdfDate())
	fpdf.SetDefaultModificationDate(pdfDate())
})

// dpiPNG is a PNG canvas whose file records its resolution (a pHYs
// chunk): without one LaTeX and word processors place a figure given no
// width at 72 or 96 dpi, three or four times the size asked for.
type dpiPNG struct {
	vgimg.PngCanvas
	dpi int
}

func (c dpiPNG) WriteTo(w io.Writer) (int64, error) {
	var buf bytes.Buffer
	if _, err := c.PngCanvas.WriteTo(&buf); err != nil {
		return 0, err
	}
	b := buf.Bytes()
	// The signature (8 bytes) and IHDR (25) come first; pHYs goes
	// before the image data, here right after IHDR.
	const ihdrEnd = 8 + 25
	if len(b) < ihdrEnd || string(b[12:16]) != "IHDR" {
		return 0, fmt.Errorf("png: no IHDR chunk where the encoder puts it")
	}
	ppm := uint32(math.Round(float64(c.dpi) / 0.0254)) // pixels a metre
	chunk := make([]byte, 0, 21)
	chunk = binary.BigEndian.AppendUint32(chunk, 9)
	chunk = append(chunk, "pHYs"...)
	chunk = binary.BigEndian.AppendUint32(chunk, ppm)
	chunk = binary.BigEndian.AppendUint32(chunk, ppm)
	chunk = append(chunk, 1) // unit: the metre
	chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
	n, err := w.Write(slices.Concat(b[:ihdrEnd], chunk, b[ihdrEnd:]))
	return int64(n), err
}

// winAnsiCanvas is a PDF canvas whose text is written in Windows-1252:
// gonum's PDF backend declares its fonts WinAnsiEncoding and wrote the
// labels' UTF-8 bytes, so that "≥" printed as "â‰¥" and an en dash as
// "â€“" in every PDF (PNG and SVG were right).
type winAnsiCanvas struct{ vg.CanvasWriterTo }

func (c winAnsiCanvas) FillString(f font.Face, pt vg.Point, s string) {
	c.CanvasWriterTo.FillString(f, pt, winAnsi(s))
}

// winAnsiSubs spell out the characters the labels use that
// Windows-1252 lacks.
var winAnsiSubs = strings.NewReplacer("≥", ">=", "≤", "<=", "ε", "eps", "δ", "delta", "∞", "inf", "−", "-", "√", "sqrt ", "→", "->")

// winAnsi is s in Windows-1252, with winAnsiSubs' spellings and "?" for
// any other character it cannot hold.
func winAnsi(s string) string {
	s = winAnsiSubs.Replace(s)
	var b strings.Builder
	enc := charmap.Windows1252
	for _, r := range s {
		if c, ok := enc.EncodeRune(r); ok {
			b.WriteByte(c)
		} else {
			b.WriteByte('?')
		}
	}
	return b.String()
}

// save writes p as name.<format> into dir for every configured format,
// cfg.WidthIn wide and cfg.HeightIn high or, where the legend needs more,
// higher (figure.canvasHeight).
func save(p *figure, cfg Config, dir, name string) ([]string, error) {
	setPDFDates()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	w := vg.Length(cfg.WidthIn) * vg.Inch
	h := p.canvasHeight(w, vg.Length(cfg.HeightIn)*vg.Inch)
	var written []string
	for _, f := range cfg.Formats {
		var c vg.CanvasWriterTo
		if f == "png" {
			img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(cfg.DPI))
			c = dpiPNG{vgimg.PngCanvas{Canvas: img}, cfg.DPI}
		} else {
			var err error
			if c, err = draw.NewFormattedCanvas(w, h, f); err != nil {
				return written, fmt.Errorf("figure %s.%s: %w", name, f, err)
			}
			if f == "pdf" {
				c = winAnsiCanvas{c}
			}
		}
		p.Draw(draw.New(c))
		path := filepath.Join(dir, name+"."+f)
		if err := atomicfile.Write(path, func(out io.Writer) error { _, err := c.WriteTo(out); return err }); err != nil {
			return written, err
		}
		written = append(written, path)
	}
	return written, nil
}
