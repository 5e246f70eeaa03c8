package plots

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/provenance"
)

// A comparison with DP-SGD runs gains the DP columns (ε, δ, σ, q, C,
// steps, final validation loss) and the memorization-against-utility
// figure; the same comparison without them has neither, and its table is
// byte for byte the one written before the columns existed.
func TestReportDPColumns(t *testing.T) {
	eps := 7.93
	dp8 := &provenance.DPRecord{Epsilon: &eps, Delta: 1e-5, NoiseMultiplier: 0.71, SampleRate: 0.01, MaxGradNorm: 1, Steps: 400, Rows: 1600}
	noNoise := &provenance.DPRecord{Delta: 1e-5, SampleRate: 0.01, MaxGradNorm: 1, Steps: 400, Rows: 1600}
	write := func(name string, withDP bool) string {
		dir := outDir(t, name)
		runs := []synthRun{
			{name: "k=0", k: 0, preset: "tiny", targets: 32, exact: 28, rouge: 0.9, steps: 400},
			{name: "k=4", k: 4, preset: "tiny", targets: 32, exact: 0, rouge: 0.45, steps: 400},
		}
		if withDP {
			runs = append(runs, synthRun{name: "dp8", k: 0, preset: "tiny", targets: 32, exact: 3, rouge: 0.5, steps: 400, dp: dp8},
				synthRun{name: "dp-inf", k: 0, preset: "tiny", targets: 32, exact: 20, rouge: 0.8, steps: 400, dp: noNoise})
		}
		var pts []synthPoint
		for i, r := range runs {
			writeSynthRun(t, filepath.Join(dir, r.name), r, uint64(i+1))
			pts = append(pts, synthPoint{r.name, r.name, map[string]any{"goldfish.k": r.k}})
		}
		writeSweepIndex(t, dir, name, []string{"goldfish.k"}, pts)
		if err := Report(dir, DefaultConfig(), readSynthSpec); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(dir, "report")
	}
	plain, dp := write("dp-none", false), write("dp-some", true)

	md, err := os.ReadFile(filepath.Join(plain, "table.md"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(md), "DP ε") || strings.Contains(string(md), "val loss") {
		t.Errorf("a table without DP-SGD runs has DP columns:\n%s", md)
	}
	if _, err := os.Stat(filepath.Join(plain, "figures", "memorization-vs-utility.png")); err == nil {
		t.Error("memorization-vs-utility drawn for a comparison without DP-SGD")
	}

	md, err = os.ReadFile(filepath.Join(dp, "table.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	for _, want := range []string{"| DP ε | DP δ | DP σ | DP q | DP C | DP steps | final val loss |",
		"| 7.93 | 1e-05 | 0.710 | 0.01 | 1 | 400 |", "| ∞ | 1e-05 | 0.000 | 0.01 | 1 | 400 |", "| – | – | – | – | – | – |"} {
		if !strings.Contains(s, want) {
			t.Errorf("table.md lacks %q:\n%s", want, s)
		}
	}
	recs := readCSV(t, filepath.Join(dp, "table.csv"))
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, c := range []string{"dp_epsilon", "dp_delta", "dp_noise_multiplier", "dp_sample_rate", "dp_max_grad_norm", "dp_steps", "final_val_loss"} {
		if _, ok := col[c]; !ok {
			t.Fatalf("table.csv lacks column %s: %v", c, recs[0])
		}
	}
	byRun := map[string][]string{}
	for _, r := range recs[1:] {
		byRun[r[0]] = r
	}
	if got := byRun["dp8"][col["dp_epsilon"]]; got != "7.93" {
		t.Errorf("dp8's dp_epsilon = %q, want 7.93", got)
	}
	if got := byRun["k=0"][col["dp_epsilon"]]; got != "" {
		t.Errorf("k=0's dp_epsilon = %q, want empty", got)
	}
	// ε of σ = 0 is infinite: empty, as summary.json's null, with the
	// row's noise multiplier 0 saying why.
	if got, sigma := byRun["dp-inf"][col["dp_epsilon"]], byRun["dp-inf"][col["dp_noise_multiplier"]]; got != "" || sigma != "0.0" {
		t.Errorf("σ = 0's dp_epsilon = %q, dp_noise_multiplier = %q; want empty and 0.0", got, sigma)
	}
	if v, err := strconv.ParseFloat(byRun["k=4"][col["final_val_loss"]], 64); err != nil || !(v > 0) {
		t.Errorf("k=4's final_val_loss = %q (%v), want the last validation loss", byRun["k=4"][col["final_val_loss"]], err)
	}
	checkFigures(t, filepath.Join(dp, "figures"), []string{"memorization-vs-utility"})

	// pdflatex stops at a raw ε: table.tex is ASCII, the Greek in math.
	tex, err := os.ReadFile(filepath.Join(dp, "table.tex"))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range tex {
		if c >= 0x80 {
			t.Fatalf("table.tex has a non-ASCII byte at %d: %q", i, tex[max(0, i-20):min(len(tex), i+20)])
		}
	}
	for _, want := range []string{`DP $\varepsilon$ & DP $\delta$ & DP $\sigma$`, `$\infty$`} {
		if !strings.Contains(string(tex), want) {
			t.Errorf("table.tex lacks %q:\n%s", want, tex)
		}
	}
}

// TestReportSkipsRunsWithNoMember: a DP-SGD run whose targets were all
// too short to attack has no exact-match rate (NaN); the memorization-
// against-utility figure leaves it out instead of failing the report
// ("plotter: NaN data point"), which then lost table.md too.
func TestReportSkipsRunsWithNoMember(t *testing.T) {
	eps := 7.99
	rec := &provenance.DPRecord{Epsilon: &eps, Delta: 1e-5, NoiseMultiplier: 0.5, SampleRate: 0.01, MaxGradNorm: 1, Steps: 80, Rows: 1280}
	dir := outDir(t, "no-member")
	runs := []synthRun{
		{name: "std", preset: "tiny", targets: 16, exact: 8, rouge: 0.8, steps: 200},
		{name: "dp", preset: "tiny", targets: 16, exact: 0, rouge: 0.1, steps: 200, dp: rec},
		{name: "dp-short", preset: "tiny", targets: 16, exact: 0, rouge: 0.1, steps: 200, dp: rec, unattacked: 32},
	}
	var pts []synthPoint
	for i, r := range runs {
		writeSynthRun(t, filepath.Join(dir, r.name), r, uint64(i))
		pts = append(pts, synthPoint{r.name, r.name, map[string]any{"x": r.name}})
	}
	writeSweepIndex(t, dir, "no-member", []string{"x"}, pts)
	if err := Report(dir, DefaultConfig(), readSynthSpec); err != nil {
		t.Fatal(err)
	}
	checkFigures(t, filepath.Join(dir, "report", "figures"), []string{"memorization-vs-utility"})
}
