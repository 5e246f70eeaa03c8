package plots

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/eval"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg/draw"
)

// The approx table and figures take their numbers from summary.json's
// "approx" and members: two losses, three methods each.
func TestApproxTableAndFigures(t *testing.T) {
	var runs []*runData
	for _, k := range []int{0, 4} {
		for i, m := range []struct {
			method string
			mass   float64
			bytes  float64
		}{{"exact", 1, 4096}, {"kv4", 1, 768}, {"loki-r4-k0.25", 0.6, 1536}} {
			s := &eval.Summary{Approx: &eval.ApproxSummary{Method: m.method, N: 8, ExactAgree: eval.Num(24 - 4*i), FullAgreement: eval.Num(1 - 0.25*float64(i)),
				AttnMassKept: eval.Num(m.mass), KVBytesPerToken: eval.Num(m.bytes), SpecAccept: eval.Num(nanValue)}}
			s.Members = eval.SplitSummary{N: 8, ExactMatch: eval.Num(0.5 / float64(1+i+k)), ExactMatchWilsonCI: [2]eval.Num{0.1, 0.8}}
			runs = append(runs, &runData{Name: m.method, K: k, H: 13, Strategy: "hash-table", Summary: s})
		}
	}
	dir := t.TempDir()
	written, err := writeApproxTables(dir, runs)
	if err != nil || len(written) != 2 {
		t.Fatalf("%v %v", written, err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "approx.md"))
	for _, want := range []string{"| standard | loki-r4-k0.25 | 8 | 16.7 [10.0, 80.0] |", "| 0.600 | 1536 | – |", "| goldfish k=4, h=13 | exact | 8 | 10.0 [10.0, 80.0] |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("approx.md lacks %q:\n%s", want, md)
		}
	}
	// approx.csv holds the same numbers unrounded, one a column.
	recs, err := csv.NewReader(strings.NewReader(mustRead(t, filepath.Join(dir, "approx.csv")))).ReadAll()
	if err != nil || len(recs) != 7 {
		t.Fatalf("approx.csv: %d records, %v", len(recs), err)
	}
	wantRow := []string{"loki-r4-k0.25", "standard", "loki-r4-k0.25", "8", "0.16666666666666666", "0.1", "0.8",
		"0.0", "0.0", "16.0", "0.5", "0.6", "1536.0", ""}
	if strings.Join(recs[3], ",") != strings.Join(wantRow, ",") {
		t.Errorf("approx.csv row 3 %q, want %q", recs[3], wantRow)
	}
	cfg := DefaultConfig()
	for name, x := range map[string]func(*eval.ApproxSummary) float64{
		"mass":  func(a *eval.ApproxSummary) float64 { return float64(a.AttnMassKept) },
		"bytes": func(a *eval.ApproxSummary) float64 { return float64(a.KVBytesPerToken) },
	} {
		p, err := approxFigure(cfg, runs, "t", "x", x, name == "bytes")
		if err != nil || p == nil {
			t.Fatalf("%s: %v %v", name, p, err)
		}
		if _, err := save(p, cfg, outDir(t, "approx-"+name), "approx-"+name); err != nil {
			t.Fatal(err)
		}
	}
	// Without approximate attacks there is nothing to draw or tabulate.
	exact := []*runData{{Name: "plain", Summary: &eval.Summary{}}}
	if p, _ := approxFigure(cfg, exact, "t", "x", func(a *eval.ApproxSummary) float64 { return 1 }, false); p != nil {
		t.Error("a figure without approximate attacks")
	}
	if w, _ := writeApproxTables(dir, exact); w != nil {
		t.Error("tables without approximate attacks")
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMethodLabels: methods at one point, or near enough to print over
// each other, share a label, a line each; a point in the last fifth of
// the x range is labelled on its left; a list rises above a point in the
// lower half and hangs below one in the upper.
func TestMethodLabels(t *testing.T) {
	type want struct {
		text   string
		left   bool
		yalign text.YAlignment
	}
	for _, tc := range []struct {
		name    string
		xs, ys  []float64
		methods []string
		logX    bool
		want    []want
	}{
		{"one point, and apart", []float64{0.4, 1, 0.8, 1}, []float64{100, 100, 100, 100}, []string{"loki", "exact", "sift", "kv8"}, false,
			[]want{{"loki", false, draw.YBottom}, {"exact\nkv8", true, draw.YTop}, {"sift", false, draw.YBottom}}},
		{"near on a log axis", []float64{28180, 28529, 4096, 200000}, []float64{12.5, 15, 50, 0}, []string{"loki-r4-k0.5", "sift-q0.5", "kv4", "exact"}, true,
			[]want{{"loki-r4-k0.5\nsift-q0.5", false, draw.YBottom}, {"kv4", false, draw.YBottom}, {"exact", true, draw.YBottom}}},
		{"a list at 0 % rises", []float64{1, 1, 0.5}, []float64{0, 0, 40}, []string{"exact", "kv8", "loki"}, false,
			[]want{{"exact\nkv8", true, draw.YBottom}, {"loki", false, draw.YBottom}}},
	} {
		pts := &errPoints{}
		lo, hi := math.Inf(1), math.Inf(-1)
		for i, x := range tc.xs {
			pts.add(x, tc.ys[i], tc.ys[i], tc.ys[i])
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
		lbs, err := methodLabels(pts, tc.methods, DefaultConfig(), lo, hi, tc.logX)
		if err != nil {
			t.Fatal(err)
		}
		if len(lbs) != len(tc.want) {
			t.Fatalf("%s: %d labels, want %d", tc.name, len(lbs), len(tc.want))
		}
		for i, w := range tc.want {
			lb := lbs[i].(*plotter.Labels)
			st := lb.TextStyle[0]
			if lb.Labels[0] != w.text || (lb.Offset.X < 0) != w.left || (st.XAlign == draw.XRight) != w.left {
				t.Errorf("%s: label %q offset %v align %v; want %q, left %v", tc.name, lb.Labels[0], lb.Offset.X, st.XAlign, w.text, w.left)
			}
			if strings.Contains(w.text, "\n") && st.YAlign != w.yalign {
				t.Errorf("%s: list %q y-aligned %v, want %v", tc.name, w.text, st.YAlign, w.yalign)
			}
		}
	}
}

// TestPadAxis: the range widens by a fraction of its width (a factor on a
// log axis), by at least the floor, and not at all with neither.
func TestPadAxis(t *testing.T) {
	for _, tc := range []struct {
		name                string
		lo, hi, frac, floor float64
		log                 bool
		wantMin, wantMax    float64
	}{
		{"linear", 2, 4, 0.1, 0, false, 1.8, 4.2},
		{"linear floor", 3, 3.1, 0.1, 0.05, false, 2.95, 3.15},
		{"log", 100, 1000, 0.25, 0, true, 80, 1250},
		{"one value, no floor", 5, 5, 0.1, 0, false, 0, 0},
	} {
		var ax plot.Axis
		padAxis(&ax, tc.lo, tc.hi, tc.frac, tc.floor, tc.log)
		if math.Abs(ax.Min-tc.wantMin) > 1e-12 || math.Abs(ax.Max-tc.wantMax) > 1e-12 {
			t.Errorf("%s: [%g, %g], want [%g, %g]", tc.name, ax.Min, ax.Max, tc.wantMin, tc.wantMax)
		}
	}
}
