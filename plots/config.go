// Package plots turns run directories into paper figures and tables: exact
// match against k with confidence intervals, RougeL distributions, memorization
// against repetitions per model size, loss curves and membership-inference ROC
// curves, each saved as PNG, SVG and PDF through gonum/plot.
//
// It reads only the documented artifacts of a run directory (config.toml,
// scores.parquet, summary.json, metrics.arrow) and, for a
// sweep, the sweep.json index written by package experiments.
package plots

import (
	"fmt"
	"strings"
)

// Formats lists the image formats plots can write.
var Formats = []string{"png", "svg", "pdf"}

// Config is the [plots] table of an experiment spec.
type Config struct {
	// Formats are the image formats written for every figure.
	Formats []string `toml:"formats"`
	// WidthIn is the figure width in inches, at least 2.5 (a single paper column is about 3.3); titles, axis labels and legend names too long for it are wrapped onto more lines.
	WidthIn float64 `toml:"width_in"`
	// HeightIn is the figure height in inches, at least 2. The legend goes below the axes, never over them: a legend taller than 30 % of this height makes the figure taller instead, the axes keeping 70 % of it. So do axes whose wrapped title and labels would leave the data less than a third of this height (small sizes at 11 pt); tick labels too close to read apart are thinned, every other one dropped.
	HeightIn float64 `toml:"height_in"`
	// DPI is the resolution of PNG output.
	DPI int `toml:"dpi"`
	// FontSize is the axis-label size in points; titles are a little larger, ticks a little smaller.
	FontSize float64 `toml:"font_size"`
	// Smooth is the moving-average window of loss curves in steps; 0 picks about 1/100 of the run.
	Smooth int `toml:"smooth"`
}

// MinWidthIn and MinHeightIn are the smallest figure memo draws: below
// them the axes' tick labels, title and axis labels of an 11 pt font
// leave no room for the data and run off the canvas (a review drew a
// 1 in high figure with its ticks above the top edge; at 2 × 1.5 in
// every figure kind had text outside it, at 2 × 2 in the two-panel and
// per-size ones, at 2.5 × 2 in none: TestTextInsideCanvas).
const (
	MinWidthIn  float64 = 2.5
	MinHeightIn float64 = 2
)

// DefaultConfig writes all three formats at a size that reads well at half a page width.
func DefaultConfig() Config {
	return Config{Formats: []string{"png", "svg", "pdf"}, WidthIn: 5, HeightIn: 3.5, DPI: 200, FontSize: 11}
}

// Validate checks every key and names the offending one in its error.
func (c Config) Validate() error {
	if len(c.Formats) == 0 {
		return fmt.Errorf("plots.formats is empty: want one or more of %s", strings.Join(Formats, ", "))
	}
	for _, f := range c.Formats {
		ok := false
		for _, g := range Formats {
			ok = ok || f == g
		}
		if !ok {
			return fmt.Errorf("plots.formats: %q is not one of %s", f, strings.Join(Formats, ", "))
		}
	}
	if c.WidthIn < MinWidthIn || c.WidthIn > 50 {
		return fmt.Errorf("plots.width_in = %g: must be in [%g, 50] inches", c.WidthIn, MinWidthIn)
	}
	if c.HeightIn < MinHeightIn || c.HeightIn > 50 {
		return fmt.Errorf("plots.height_in = %g: must be in [%g, 50] inches", c.HeightIn, MinHeightIn)
	}
	if c.DPI < 30 || c.DPI > 1200 {
		return fmt.Errorf("plots.dpi = %d: must be in [30, 1200]", c.DPI)
	}
	if c.FontSize < 4 || c.FontSize > 48 {
		return fmt.Errorf("plots.font_size = %g: must be in [4, 48] points", c.FontSize)
	}
	if c.Smooth < 0 {
		return fmt.Errorf("plots.smooth = %d: must be >= 0 (0 picks a window)", c.Smooth)
	}
	return nil
}
