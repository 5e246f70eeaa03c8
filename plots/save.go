package plots

import (
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"codeberg.org/go-pdf/fpdf"
	"gonum.org/v1/plot"
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

// dashes cycle after colours so that series stay distinct past eight.
var dashes = [][]vg.Length{nil, {vg.Points(5), vg.Points(3)}, {vg.Points(1.5), vg.Points(2)}, {vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)}}

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
	p.Legend.Top = true
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

// save writes p as name.<format> into dir for every configured format.
func save(p *figure, cfg Config, dir, name string) ([]string, error) {
	setPDFDates()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	w, h := vg.Length(cfg.WidthIn)*vg.Inch, vg.Length(cfg.HeightIn)*vg.Inch
	var written []string
	for _, f := range cfg.Formats {
		var c vg.CanvasWriterTo
		if f == "png" {
			img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(cfg.DPI))
			c = vgimg.PngCanvas{Canvas: img}
		} else {
			var err error
			if c, err = draw.NewFormattedCanvas(w, h, f); err != nil {
				return written, fmt.Errorf("figure %s.%s: %w", name, f, err)
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
