package plots

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestPDFTextIsWinAnsi: a PDF figure's labels are written in the
// Windows-1252 its fonts declare, so "≥", the en dash and ε print as
// ">=", "–" and "eps"; their UTF-8 bytes printed as "â‰¥" and "â€“".
func TestPDFTextIsWinAnsi(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Formats = []string{"pdf"}
	p := newPlot(cfg, "precision–recall at ≤ 100 wrong", "DP-SGD ε = 8", "probability ≥ q (%)")
	dir := t.TempDir()
	if _, err := save(p, cfg, dir, "fig"); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "fig.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	var text []byte
	for _, m := range regexp.MustCompile(`(?s)stream\r?\n(.*?)endstream`).FindAllSubmatch(raw, -1) {
		r, err := zlib.NewReader(bytes.NewReader(m[1]))
		if err != nil {
			continue // not a deflated stream (the font program may be)
		}
		b, _ := io.ReadAll(r)
		text = append(text, b...)
	}
	for _, want := range []string{"precision\x96recall at <= 100 wrong", "DP-SGD eps = 8", "probability >= q"} {
		if !bytes.Contains(text, []byte(want)) {
			t.Errorf("the PDF's content streams lack %q", want)
		}
	}
	if bytes.Contains(text, []byte("\xe2\x80\x93")) || bytes.Contains(text, []byte("\xe2\x89")) {
		t.Error("the PDF's content streams hold UTF-8 bytes, which its WinAnsi fonts print as mojibake")
	}
}

// TestSeriesStylesDistinct: the first sixteen series differ in colour or
// dash from one another, and each of the first eight in its dash alone
// (a greyscale print).
func TestSeriesStylesDistinct(t *testing.T) {
	key := func(i int, withColour bool) string {
		k := fmt.Sprint(seriesDashes(i))
		if withColour {
			k += fmt.Sprint(colorAt(i))
		}
		return k
	}
	for _, tc := range []struct {
		n          int
		withColour bool
	}{{8, false}, {16, true}} {
		seen := map[string]int{}
		for i := range tc.n {
			if j, ok := seen[key(i, tc.withColour)]; ok {
				t.Errorf("series %d and %d look alike (dash %v, colour %v: %v)", j, i, seriesDashes(i), tc.withColour, colorAt(i))
			}
			seen[key(i, tc.withColour)] = i
		}
	}
}

// TestPNGRecordsDPI: a PNG figure carries plots.dpi as its pHYs chunk
// and still decodes.
func TestPNGRecordsDPI(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Formats, cfg.DPI = []string{"png"}, 300
	dir := t.TempDir()
	if _, err := save(newPlot(cfg, "t", "x", "y"), cfg, dir, "fig"); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "fig.png"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("the PNG does not decode: %v", err)
	}
	if w := img.Bounds().Dx(); w != int(cfg.WidthIn*300+0.5) {
		t.Errorf("width %d px, want %v in at 300 dpi", w, cfg.WidthIn)
	}
	i := bytes.Index(raw, []byte("pHYs"))
	if i < 0 {
		t.Fatal("no pHYs chunk")
	}
	// 300 dpi is 11811 pixels a metre, both axes, unit 1 (the metre).
	if x, y, unit := binary.BigEndian.Uint32(raw[i+4:]), binary.BigEndian.Uint32(raw[i+8:]), raw[i+12]; x != 11811 || y != 11811 || unit != 1 {
		t.Errorf("pHYs %d × %d unit %d, want 11811 × 11811 unit 1", x, y, unit)
	}
}
