package plots

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/provenance"
	"github.com/memo-research/memo/internal/runfiles"
	"gonum.org/v1/plot"
)

// outDir returns a temp dir, or $MEMO_PLOTS_OUT/name when set so that the
// figures can be looked at after the test.
func outDir(t *testing.T, name string) string {
	if d := os.Getenv("MEMO_PLOTS_OUT"); d != "" {
		p := filepath.Join(d, name)
		os.RemoveAll(p)
		return p
	}
	return t.TempDir()
}

// readCSV reads every record of a CSV file.
func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	recs, err := csv.NewReader(fh).ReadAll()
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return recs
}

// TestMovingAverage: a window centred on each point (not trailing it),
// cut short at the ends, NaNs skipped.
func TestMovingAverage(t *testing.T) {
	for _, tc := range []struct {
		y    []float64
		w    int
		want []float64
	}{
		{[]float64{1, 3, math.NaN(), 5}, 2, []float64{2, 3, 5, 5}},
		{[]float64{1, 2, 3, 4, 5}, 3, []float64{1.5, 2, 3, 4, 4.5}},
		// A ramp's centred average is the ramp: a trailing one lags.
		{[]float64{0, 1, 2, 3, 4, 5, 6}, 5, []float64{1, 1.5, 2, 3, 4, 4.5, 5}},
		{[]float64{4, 5}, 1, []float64{4, 5}},
	} {
		got := movingAverage(tc.y, tc.w)
		if !slices.Equal(got, tc.want) {
			t.Errorf("movingAverage(%v, %d) = %v, want %v", tc.y, tc.w, got, tc.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.Formats = []string{"gif"} }, `plots.formats: "gif"`},
		{func(c *Config) { c.Formats = nil }, "plots.formats is empty"},
		{func(c *Config) { c.DPI = 5 }, "plots.dpi = 5"},
		{func(c *Config) { c.WidthIn = 0 }, "plots.width_in = 0"},
		{func(c *Config) { c.WidthIn = 2 }, "plots.width_in = 2: must be in [2.5, 50] inches"},
		{func(c *Config) { c.HeightIn = 1 }, "plots.height_in = 1: must be in [2, 50] inches"},
		{func(c *Config) { c.FontSize = 100 }, "plots.font_size = 100"},
		{func(c *Config) { c.Smooth = -1 }, "plots.smooth = -1"},
	} {
		c := DefaultConfig()
		tc.mut(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want it to contain %q", err, tc.want)
		}
	}
}

var singleRunFigures = []string{"exact-match-vs-k", "rougel", "loss", "mia-roc", "extractable-vs-n"}

func checkFigures(t *testing.T, dir string, names []string) {
	t.Helper()
	for _, n := range names {
		for _, f := range Formats {
			st, err := os.Stat(filepath.Join(dir, n+"."+f))
			if err != nil {
				t.Errorf("figure missing: %v", err)
				continue
			}
			if st.Size() < 1000 {
				t.Errorf("%s.%s is only %d bytes", n, f, st.Size())
			}
		}
	}
}

func TestReportGoldfishSweep(t *testing.T) {
	dir := outDir(t, "goldfish")
	writeSynthRun(t, filepath.Join(dir, "k=0"), synthRun{name: "k=0", k: 0, preset: "tiny", targets: 32, exact: 28, rouge: 0.9, steps: 400}, 1)
	writeSynthRun(t, filepath.Join(dir, "k=4"), synthRun{name: "k=4", k: 4, preset: "tiny", targets: 32, exact: 0, rouge: 0.45, steps: 400}, 2)
	writeSweepIndex(t, dir, "goldfish-vs-standard", []string{"goldfish.k"}, []synthPoint{
		{"k=0", "k=0", map[string]any{"goldfish.k": 0}},
		{"k=4", "k=4", map[string]any{"goldfish.k": 4}},
		{"k=8", "k=8", map[string]any{"goldfish.k": 8}}, // unfinished: no scores, left out
	})
	if err := Report(dir, DefaultConfig(), readSynthSpec); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report")
	checkFigures(t, filepath.Join(out, "figures"), singleRunFigures)
	if _, err := os.Stat(filepath.Join(out, "figures", "memorization-vs-repetitions.png")); err == nil {
		t.Error("repetitions figure drawn though every target was seen once")
	}
	if _, err := os.Stat(filepath.Join(out, "repetitions.csv")); err == nil {
		t.Error("repetitions table written though every target was seen once")
	}

	md, err := os.ReadFile(filepath.Join(out, "table.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| k=0 | 0 | standard | tiny | 32 | 87.5 [", "| k=4 | 4 | goldfish k=4, h=13 | tiny | 32 | 0.0 [0.0, 10.7]"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("table.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(string(md), "| k=8 |") {
		t.Error("unfinished run k=8 appears in the table")
	}
	// A partial report says so, and what it leaves out (a review found
	// nothing but a log line telling a reader k=8 was missing).
	const partial = "Partial: 2 of the sweep's 3 points; left out: k=8 (not finished: no scores.parquet and summary.json yet)."
	if !strings.Contains(string(md), "\n"+partial+"\n") {
		t.Errorf("table.md does not say the report is partial (%q):\n%s", partial, md)
	}
	// 32 controls resolve neither low FPR: the table says its TPRs
	// there are at FPR 0.
	if !strings.Contains(string(md), "\nTPR@0.1%FPR and TPR@1%FPR over as few as 32 controls: ") {
		t.Errorf("table.md does not say its low-FPR rates are at FPR 0:\n%s", md)
	}
	tex, err := os.ReadFile(filepath.Join(out, "table.tex"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(tex), "% "+partial+"\n% TPR@0.1%FPR and TPR@1%FPR over as few as 32 controls") {
		t.Errorf("table.tex does not open with the partial note:\n%s", tex)
	}
	if !strings.Contains(string(tex), `\toprule`) || !strings.Contains(string(tex), `exact match \% [95\% CI]`) {
		t.Errorf("table.tex not escaped booktabs:\n%s", tex)
	}

	recs := readCSV(t, filepath.Join(out, "table.csv"))
	if len(recs) != 3 {
		t.Fatalf("table.csv has %d records, want header + 2", len(recs))
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	em, _ := strconv.ParseFloat(recs[1][col["exact_match"]], 64)
	auc0, _ := strconv.ParseFloat(recs[1][col["mia_auc_loss"]], 64)
	ce, _ := strconv.ParseFloat(recs[2][col["controls_exact_match"]], 64)
	if em != 0.875 || ce != 0 {
		t.Errorf("csv exact_match = %v, controls = %v; want 0.875, 0", em, ce)
	}
	if auc0 < 0.8 {
		t.Errorf("standard-loss MIA AUC = %v; synthetic losses separate members, want > 0.8", auc0)
	}
	// What table.csv leaves out is in a CSV too: a script that reads the
	// CSVs alone would not see the note.
	if left := readCSV(t, filepath.Join(out, LeftOutFile)); len(left) != 2 || strings.Join(left[0], ",") != "point,reason" ||
		left[1][0] != "k=8" || left[1][1] != "not finished: no scores.parquet and summary.json yet" {
		t.Errorf("%s = %q, want its header and k=8 with its reason", LeftOutFile, left)
	}

	// A grid none of whose points can be reported replaces the report
	// with one that says so: a review's rerun with a changed key (every
	// point refused) left the old numbers standing.
	writeSweepIndex(t, dir, "goldfish-vs-standard", []string{"goldfish.k"}, []synthPoint{
		{"k=8", "k=8", map[string]any{"goldfish.k": 8}},
	})
	err = Report(dir, DefaultConfig(), readSynthSpec)
	if !badinput.Is(err) || !strings.Contains(err.Error(), "none of the 1 sweep points can be reported (1 not finished") {
		t.Errorf("a report of no finished point: %v", err)
	}
	if md, err = os.ReadFile(filepath.Join(out, "table.md")); err != nil || strings.Contains(string(md), "| k=0 |") || !strings.Contains(string(md), "Partial: 0 of the sweep's 1 points") {
		t.Errorf("table.md after a report of no finished point (%v):\n%s", err, md)
	}
}

// TestReportLeavesOutADamagedPoint: a sweep point whose files are damaged
// is left out of the report, named with why, rather than failing the
// whole report (and memo sweep's failure summary with it).
func TestReportLeavesOutADamagedPoint(t *testing.T) {
	dir := outDir(t, "damaged")
	writeSynthRun(t, filepath.Join(dir, "k=0"), synthRun{name: "k=0", k: 0, preset: "tiny", targets: 8, exact: 6, rouge: 0.9, steps: 40, reps: []int{1, 4}}, 1)
	writeSynthRun(t, filepath.Join(dir, "k=4"), synthRun{name: "k=4", k: 4, preset: "tiny", targets: 8, exact: 0, rouge: 0.4, steps: 40, reps: []int{1, 4}}, 2)
	writeSweepIndex(t, dir, "damaged", []string{"goldfish.k"}, []synthPoint{
		{"k=0", "k=0", map[string]any{"goldfish.k": 0}},
		{"k=4", "k=4", map[string]any{"goldfish.k": 4}},
	})
	if err := os.WriteFile(filepath.Join(dir, "k=4", "scores.parquet"), []byte("PAR1 cut short"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Report(dir, DefaultConfig(), readSynthSpec); err != nil {
		t.Fatalf("a sweep with one damaged point: %v", err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report", "table.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| k=0 |") || strings.Contains(string(md), "| k=4 |") || !strings.Contains(string(md), "Partial: 1 of the sweep's 2 points; left out: k=4 (unreadable: ") {
		t.Errorf("table.md:\n%s", md)
	}
	// Every other table and every figure says so too: one quoted alone
	// read as the whole sweep.
	reps, err := os.ReadFile(filepath.Join(dir, "report", "repetitions.md"))
	if err != nil || !strings.Contains(string(reps), "Partial: 1 of the sweep's 2 points") {
		t.Errorf("repetitions.md (%v):\n%s", err, reps)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "report", "figures", "memorization-vs-repetitions.svg"))
	if err != nil || !strings.Contains(string(svg), "partial: 1 of 2 points") {
		t.Errorf("memorization-vs-repetitions.svg names no partial sweep (%v)", err)
	}
}

func TestReportRepetitionsPerModel(t *testing.T) {
	dir := outDir(t, "catastrophic")
	var pts []synthPoint
	// Bigger models memorize at fewer repetitions: the figure must show three
	// rising curves in that order.
	for i, preset := range []string{"nano", "tiny", "small"} {
		thresh := 16 >> i
		name := "preset=" + preset
		writeSynthRun(t, filepath.Join(dir, name), synthRun{name: name, preset: preset, targets: 40, reps: []int{1, 2, 4, 8, 16},
			exactReps: func(r int) bool { return r >= thresh }, rouge: 0.5, steps: 200}, uint64(i))
		pts = append(pts, synthPoint{name, name, map[string]any{"model.preset": preset}})
	}
	writeSweepIndex(t, dir, "catastrophic", []string{"model.preset"}, pts)
	if err := Report(dir, DefaultConfig(), readSynthSpec); err != nil {
		t.Fatal(err)
	}
	checkFigures(t, filepath.Join(dir, "report", "figures"), append(singleRunFigures, "memorization-vs-repetitions", "rougel-vs-repetitions"))

	// The same points as numbers: 40 targets over 5 counts is 8 per point;
	// preset i memorizes from 16>>i repetitions on.
	recs := readCSV(t, filepath.Join(dir, "report", "repetitions.csv"))
	if len(recs) != 1+3*5 {
		t.Fatalf("repetitions.csv has %d rows, want a header and 15", len(recs))
	}
	for _, r := range recs[1:] {
		reps, _ := strconv.Atoi(r[1])
		thresh := map[string]int{"nano": 16, "tiny": 8, "small": 4}[r[0]]
		want := "0.0" // a float column, written as one (csvFloat)
		if reps >= thresh {
			want = "1.0"
		}
		if r[2] != "8" || r[3] != want {
			t.Errorf("row %q: want 8 targets and exact_match %s", r, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "report", "repetitions.md")); err != nil {
		t.Error(err)
	}
}

func TestRunSingle(t *testing.T) {
	dir := outDir(t, "single")
	writeSynthRun(t, dir, synthRun{name: "goldfish-k4", k: 4, preset: "tiny", targets: 16, exact: 1, rouge: 0.5, steps: 1000, unattacked: 3}, 3)
	cfg := DefaultConfig()
	cfg.Formats = []string{"png"}
	// What an earlier memo drew and this one does not: gone after Run;
	// the user's own file stays.
	stale := filepath.Join(dir, "figures", "extractable-vs-n.pdf")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(dir, "figures", "my-own.svg") // not a name memo draws
	if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Run(dir, cfg, readSynthSpec); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("an earlier run's figure %s is still there (%v)", stale, err)
	}
	if b, err := os.ReadFile(mine); err != nil || string(b) != "mine" {
		t.Errorf("the user's own %s: %q, %v; want it untouched", mine, b, err)
	}
	for _, n := range singleRunFigures {
		if _, err := os.Stat(filepath.Join(dir, "figures", n+".png")); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "figures", n+".pdf")); err == nil {
			t.Errorf("%s.pdf written though formats = [png]", n)
		}
	}
	r, err := loadRun(dir, "", nil, readSynthSpec)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.docs(splitControl)); n != 13 {
		t.Errorf("%d controls kept, want 16 - 3 not attacked", n)
	}
}

func TestRunWithoutScores(t *testing.T) {
	err := Run(t.TempDir(), DefaultConfig(), readSynthSpec)
	if err == nil || !strings.Contains(err.Error(), "scores.parquet") {
		t.Fatalf("Run on an empty dir = %v, want an error naming scores.parquet", err)
	}
}

func TestCrowdedK(t *testing.T) {
	if _, _, ok := crowdedK([]string{"standard", "goldfish k=4"}); ok {
		t.Error("two settings shortened")
	}
	_, short, ok := crowdedK([]string{"standard", "goldfish k=3", "goldfish k=4", "goldfish k=8\nmodel.preset=tiny"})
	want := []string{"standard", "k=3", "k=4", "k=8\nmodel.preset=tiny"}
	if !ok || !slices.Equal(short, want) {
		t.Errorf("crowdedK = %q, %v; want %q", short, ok, want)
	}
}

func TestAUCLegend(t *testing.T) {
	// Three decimals, as the tables and memo eval print it: 0.9965 is not
	// the 1.00 of a perfect attack.
	st := eval.MIAStat{AUC: 0.9965, AUCCI: [2]eval.Num{0.986, 1}}
	if got, want := aucLegend("loss", st), "loss (AUC 0.997 [0.986, 1.000])"; got != want {
		t.Errorf("aucLegend = %q, want %q", got, want)
	}
	st.AUCCI = [2]eval.Num{eval.Num(math.NaN()), eval.Num(math.NaN())}
	if got, want := aucLegend("loss", st), "loss (AUC 0.997)"; got != want {
		t.Errorf("without an interval: %q, want %q", got, want)
	}
}

// The scale study: per size and loss, the repetition threshold eval
// computed, as a table and a figure against parameter count.
func TestReportThresholdVsParams(t *testing.T) {
	dir := outDir(t, "threshold")
	var pts []synthPoint
	params := map[string]int64{"nano": 150_000, "tiny": 560_000, "small": 3_700_000}
	for i, preset := range []string{"nano", "tiny", "small"} {
		for _, k := range []int{0, 4} {
			thresh := 16 >> i // standard: from 16, 8, 4 repetitions on
			if k == 4 {
				thresh = 1 << 30 // goldfish: never
			}
			name := fmt.Sprintf("k=%d_preset=%s", k, preset)
			writeSynthRun(t, filepath.Join(dir, name), synthRun{name: name, k: k, preset: preset, targets: 40, reps: []int{1, 2, 4, 8, 16},
				exactReps: func(r int) bool { return r >= thresh }, rouge: 0.1, steps: 50, params: params[preset]}, uint64(10*i+k))
			pts = append(pts, synthPoint{name, name, map[string]any{"goldfish.k": k, "model.preset": preset}})
		}
	}
	writeSweepIndex(t, dir, "catastrophic", []string{"goldfish.k", "model.preset"}, pts)
	if err := Report(dir, DefaultConfig(), readSynthSpec); err != nil {
		t.Fatal(err)
	}
	checkFigures(t, filepath.Join(dir, "report", "figures"), []string{"threshold-vs-params"})
	// 8 targets per count, all or none extracted: 0/8 has Wilson upper
	// bound 0.324, 8/8 lower bound 0.676, so the threshold and both ends
	// of its interval are the first count memorized; goldfish never
	// reaches half, so its cells are empty (above max_repetitions 16).
	want := [][]string{
		{"run", "model", "params", "loss", "goldfish_k", "max_repetitions", "exact_match_threshold", "exact_match_threshold_ci_low", "exact_match_threshold_ci_high",
			"rougeL_threshold", "rougeL_threshold_ci_low", "rougeL_threshold_ci_high"},
		{"k=0_preset=nano", "nano", "150000", "standard", "0", "16", "16", "16", "16", "16", "16", "16"},
		{"k=4_preset=nano", "nano", "150000", "goldfish k=4, h=13", "4", "16", "", "", "", "", "", ""},
		{"k=0_preset=tiny", "tiny", "560000", "standard", "0", "16", "8", "8", "8", "8", "8", "8"},
		{"k=4_preset=tiny", "tiny", "560000", "goldfish k=4, h=13", "4", "16", "", "", "", "", "", ""},
		{"k=0_preset=small", "small", "3700000", "standard", "0", "16", "4", "4", "4", "4", "4", "4"},
		{"k=4_preset=small", "small", "3700000", "goldfish k=4, h=13", "4", "16", "", "", "", "", "", ""},
	}
	got := readCSV(t, filepath.Join(dir, "report", "threshold.csv"))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("threshold.csv:\n got %q\nwant %q", got, want)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report", "threshold.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| small | 3700000 | goldfish k=4, h=13 | > 16 [> 16, > 16] | > 16 [> 16, > 16] |") {
		t.Errorf("threshold.md lacks the small goldfish row:\n%s", md)
	}
}

// TestEveryMIAStatisticPointsEvalsWay: the ROC figure draws each statistic
// oriented as eval scores it, so the AUC of the drawn values is the AUC
// summary.json holds, for the statistics higher for members (Min-K%++,
// ReCaLL) as for the losses.
func TestEveryMIAStatisticPointsEvalsWay(t *testing.T) {
	dir := outDir(t, "mia-directions")
	writeSynthRun(t, dir, synthRun{name: "standard", preset: "tiny", targets: 30, exact: 3, rouge: 0.5, steps: 10}, 5)
	r, err := loadRun(dir, "", nil, readSynthSpec)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range eval.MIAStatistics() {
		want := float64(r.Summary.MIA.Stat(s.Name).AUC)
		if s.Name == "ref" || s.Name == "mink" || s.Needs == eval.NeedSignals {
			continue // NaN in the synthetic run
		}
		got := eval.AUC(r.miaValues(splitTarget, s), r.miaValues(splitControl, s))
		if math.Abs(got-want) > 1e-12 || !(want > 0.6) {
			t.Errorf("%s: AUC of the drawn values %v, summary.json %v (want equal, and > 0.6 on separated data)", s.Label, got, want)
		}
	}
}

// The equal-supervised-tokens control is a standard-loss run of its own on
// the k figures' axis and in the table, and its column is no series of
// its own (it is part of the objective the axis names).
func TestMatchedTokensLabel(t *testing.T) {
	std := &runData{K: 0, Strategy: "hash-table", Spec: RunSpec{MatchSupervisedTokens: 0}}
	matched := &runData{K: 0, Strategy: "hash-table", Spec: RunSpec{MatchSupervisedTokens: 4},
		Values: map[string]any{"goldfish.k": int64(0), "train.match_supervised_tokens": int64(4)}}
	gf := &runData{K: 4, H: 13, Strategy: "hash-table"}
	if got := matched.goldfishLabel(); got != "standard, tokens of k=4" {
		t.Errorf("matched label %q", got)
	}
	runs := []*runData{gf, matched, std}
	if got := strings.Join(kOrder(runs, kCategory(runs)), " | "); got != "standard | standard, tokens of k=4 | goldfish k=4" {
		t.Errorf("k order %q", got)
	}
	labelRuns([]*runData{gf, matched, std}, []string{"goldfish.k", "train.match_supervised_tokens"})
	if matched.Variant != "" || matched.Label != "standard, tokens of k=4" {
		t.Errorf("matched variant %q, label %q; want none and its loss", matched.Variant, matched.Label)
	}
}

// TestKCategoryByH: a sweep over the goldfish context width gives each h
// a category of its own (they shared "goldfish k=4" and were drawn over
// each other), while runs of one h keep the short name.
func TestKCategoryByH(t *testing.T) {
	std := &runData{K: 0, Strategy: "hash-table"}
	h7 := &runData{K: 4, H: 7, Strategy: "hash-table"}
	h13 := &runData{K: 4, H: 13, Strategy: "hash-table"}
	k8 := &runData{K: 8, H: 13, Strategy: "hash-table"}
	tests := []struct {
		runs []*runData
		want string
	}{
		{[]*runData{k8, h13, std}, "standard | goldfish k=4 | goldfish k=8"},
		{[]*runData{h13, std, h7}, "standard | goldfish k=4, h=7 | goldfish k=4, h=13"},
		{[]*runData{k8, h7, h13}, "goldfish k=4, h=7 | goldfish k=4, h=13 | goldfish k=8, h=13"},
	}
	for _, tt := range tests {
		if got := strings.Join(kOrder(tt.runs, kCategory(tt.runs)), " | "); got != tt.want {
			t.Errorf("categories %q, want %q", got, tt.want)
		}
	}
}

// TestReportGoldfishHSweep: a sweep over goldfish.h reports each width as
// a row and draws the k figures.
func TestReportGoldfishHSweep(t *testing.T) {
	dir := outDir(t, "goldfish-h")
	var points []synthPoint
	for i, h := range []int{7, 13} {
		name := fmt.Sprintf("h=%d", h)
		writeSynthRun(t, filepath.Join(dir, name), synthRun{name: name, k: 4, h: h, preset: "tiny", targets: 32, exact: 4 * i, rouge: 0.5, steps: 100}, uint64(i+1))
		points = append(points, synthPoint{name, name, map[string]any{"goldfish.h": h}})
	}
	writeSweepIndex(t, dir, "goldfish-h", []string{"goldfish.h"}, points)
	if err := Report(dir, DefaultConfig(), readSynthSpec); err != nil {
		t.Fatal(err)
	}
	checkFigures(t, filepath.Join(dir, "report", "figures"), singleRunFigures)
	md := mustRead(t, filepath.Join(dir, "report", "table.md"))
	for _, want := range []string{"| goldfish k=4, h=7 |", "| goldfish k=4, h=13 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("table.md lacks %q:\n%s", want, md)
		}
	}
}

// TestLabelRuns: a mitigations sweep's legends say each run in words,
// never by its directory name, and key names shared by two axes keep
// enough of their key to differ.
func TestLabelRuns(t *testing.T) {
	eps := 7.994
	lora := func(rank int) RunSpec {
		return RunSpec{Value: func(key string) any {
			return map[string]any{"train.lora.enabled": true, "train.lora.rank": int64(rank)}[key]
		}}
	}
	vals := func(k int, lr float64, more ...any) map[string]any {
		m := map[string]any{"goldfish.k": int64(k), "train.lr": lr, "train.dp.enabled": false, "train.lora.enabled": false, "extract.top_k": int64(0)}
		for i := 0; i+1 < len(more); i += 2 {
			m[more[i].(string)] = more[i+1]
		}
		return m
	}
	runs := []*runData{
		{Name: "k=0", K: 0, Strategy: "hash-table", Values: vals(0, 0.003)},
		{Name: "k=4", K: 4, H: 13, Strategy: "hash-table", Values: vals(4, 0.003)},
		{Name: "k=0_enabled=true_target_epsilon=8", K: 0, Strategy: "hash-table", Values: vals(0, 0.003, "train.dp.enabled", true),
			Summary: &eval.Summary{DP: &provenance.DPRecord{Epsilon: &eps}}},
		{Name: "k=4_train-lora-enabled=true_lr=0.01", K: 4, H: 13, Strategy: "hash-table", Values: vals(4, 0.01, "train.lora.enabled", true), Spec: lora(8)},
		// The summary's record, where there is one, over the spec's.
		{Name: "k=0_train-lora-enabled=true_lr=0.01", K: 0, Strategy: "hash-table", Values: vals(0, 0.01, "train.lora.enabled", true), Spec: lora(8),
			Summary: &eval.Summary{LoRA: &provenance.LoRARecord{Rank: 16}}},
	}
	labelRuns(runs, []string{"extract.top_k", "goldfish.k", "train.dp.enabled", "train.lora.enabled", "train.lr"})
	for i, want := range []string{
		"standard, lr=0.003",
		"goldfish k=4, h=13, lr=0.003",
		"standard, DP-SGD ε=7.99, lr=0.003",
		"goldfish k=4, h=13, LoRA r=8, lr=0.01",
		"standard, LoRA r=16, lr=0.01",
	} {
		if runs[i].Label != want {
			t.Errorf("run %s: label %q, want %q", runs[i].Name, runs[i].Label, want)
		}
	}
	// The table names a LoRA run's model with its rank, as the legend does.
	for i, want := range []string{"tiny", "tiny", "tiny", "tiny, LoRA r=8", "tiny, LoRA r=16"} {
		runs[i].Preset = "tiny"
		if got := runs[i].modelText(); got != want {
			t.Errorf("run %s: table model %q, want %q", runs[i].Name, got, want)
		}
	}
	if got := shortKeys([]string{"train.dp.enabled", "train.lora.enabled", "train.lr"}); got["train.dp.enabled"] != "dp.enabled" || got["train.lora.enabled"] != "lora.enabled" || got["train.lr"] != "lr" {
		t.Errorf("short keys %v", got)
	}
}

// TestLabelRunsTellsApart: runs the words for the loss, DP-SGD and LoRA
// would name alike (a goldfish.seed sweep, a DP sweep over max_grad_norm
// at one ε, a LoRA alpha sweep) are told apart by the keys that differ
// among them, or by name where none does: one label each, which the
// figures group by and the repetitions table keys its rows on.
func TestLabelRunsTellsApart(t *testing.T) {
	eps := 7.99
	dp := &eval.Summary{DP: &provenance.DPRecord{Epsilon: &eps}}
	for _, tc := range []struct {
		name string
		axes []string
		runs []*runData
		want []string
	}{
		{"goldfish.seed", []string{"goldfish.seed"}, []*runData{
			{Name: "a", K: 4, H: 13, Strategy: "hash-table", Values: map[string]any{"goldfish.seed": int64(0)}},
			{Name: "b", K: 4, H: 13, Strategy: "hash-table", Values: map[string]any{"goldfish.seed": int64(1)}},
		}, []string{"goldfish k=4, h=13, seed=0", "goldfish k=4, h=13, seed=1"}},
		{"max_grad_norm at one ε", []string{"train.dp.max_grad_norm"}, []*runData{
			{Name: "a", Strategy: "hash-table", Summary: dp, Values: map[string]any{"train.dp.max_grad_norm": 0.5}},
			{Name: "b", Strategy: "hash-table", Summary: dp, Values: map[string]any{"train.dp.max_grad_norm": 1.0}},
		}, []string{"standard, DP-SGD ε=7.99, max_grad_norm=0.5", "standard, DP-SGD ε=7.99, max_grad_norm=1"}},
		{"same settings", []string{"train.lr"}, []*runData{
			{Name: "a", Strategy: "hash-table", Values: map[string]any{"train.lr": 0.01}},
			{Name: "b", Strategy: "hash-table", Values: map[string]any{"train.lr": 0.01}},
			{Name: "c", Strategy: "hash-table", Values: map[string]any{"train.lr": 0.02}},
		}, []string{"standard, lr=0.01, a", "standard, lr=0.01, b", "standard, lr=0.02"}},
	} {
		labelRuns(tc.runs, tc.axes)
		for i, r := range tc.runs {
			if r.Label != tc.want[i] {
				t.Errorf("%s: run %s labelled %q, want %q", tc.name, r.Name, r.Label, tc.want[i])
			}
		}
	}
}

// TestReportReplacedWhole: a report is built beside report/ and renamed
// into place, so a second report leaves nothing of the first (a figure of
// another format, a file of its own) and no temporary directory; a
// report that fails leaves the old one as it was.
func TestReportReplacedWhole(t *testing.T) {
	dir := outDir(t, "whole")
	writeSynthRun(t, filepath.Join(dir, "k=0"), synthRun{name: "k=0", k: 0, preset: "tiny", targets: 32, exact: 28, rouge: 0.9, steps: 400}, 1)
	writeSweepIndex(t, dir, "whole", []string{"goldfish.k"}, []synthPoint{{"k=0", "k=0", map[string]any{"goldfish.k": 0}}})
	if err := Report(dir, DefaultConfig(), readSynthSpec); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, ReportDir, "figures", "stale.svg")
	if err := os.WriteFile(stale, []byte("<svg/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Report(dir, DefaultConfig(), readSynthSpec); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("a file of the earlier report is still in report/")
	}
	if _, err := os.Stat(filepath.Join(dir, ReportDir, TableFile)); err != nil {
		t.Errorf("the new report has no %s: %v", TableFile, err)
	}
	if st, err := os.Stat(filepath.Join(dir, ReportDir)); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("report/ mode %v (%v), want 0755 like every other directory", st.Mode().Perm(), err)
	}
	bad := DefaultConfig()
	bad.Formats = []string{"bmp"}
	if err := Report(dir, bad, readSynthSpec); err == nil {
		t.Error("a report in an unknown format was written")
	}
	if _, err := os.Stat(filepath.Join(dir, ReportDir, TableFile)); err != nil {
		t.Errorf("a failed report took the old one away: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "."+ReportDir+".tmp-*"))
	if len(left) > 0 {
		t.Errorf("temporary directories left: %v", left)
	}
}

// TestExtractableSkipsGreedy: a greedy attack's probabilistic extraction
// is flat by construction and draws no figure; a sampled one draws it.
func TestExtractableSkipsGreedy(t *testing.T) {
	run := func(decoding string) *runData {
		at := []eval.ExtractableAt{{N: 1, Total: 4, Fraction: 0.25, WilsonCI: [2]eval.Num{0.05, 0.7}}, {N: 10, Total: 4, Fraction: 0.5, WilsonCI: [2]eval.Num{0.15, 0.85}}}
		return &runData{Name: decoding, Summary: &eval.Summary{Extract: []byte(`{"decoding":"` + decoding + `"}`),
			Extractable: &eval.ExtractableSummary{Q: 0.5, Members: at, Controls: at}}}
	}
	cfg := DefaultConfig()
	if p, err := extractableCurves(cfg, []*runData{run("greedy")}); err != nil || p != nil {
		t.Errorf("greedy: figure %v, err %v; want none", p != nil, err)
	}
	if p, err := extractableCurves(cfg, []*runData{run("greedy"), run("sample")}); err != nil || p == nil {
		t.Errorf("sample: figure %v, err %v; want one", p != nil, err)
	}
}

// TestLogTicks: rate axes get 1-2-5 labels under two decades and decades
// past them; byte axes 1-2-5 with SI suffixes within half a step of the data.
func TestLogTicks(t *testing.T) {
	labels := func(ts plot.ConstantTicks) string {
		var out []string
		for _, tk := range ts {
			out = append(out, tk.Label)
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		got  plot.ConstantTicks
		want string
	}{
		{rateTicks(0.0625), "0.1 0.2 0.5 1"},
		{rateTicks(0.005), "0.01 0.1 1"},
		{rateTicks(0.01), "0.01 0.02 0.05 0.1 0.2 0.5 1"},
		{countTicks(9500, 52000), "10k 20k 50k"},
		{countTicks(800, 3e6), "1k 2k 5k 10k 20k 50k 100k 200k 500k 1M 2M"},
	} {
		if got := labels(tc.got); got != tc.want {
			t.Errorf("ticks %q, want %q", got, tc.want)
		}
	}
}

// TestDistinctTrainings: attack-only points share their trainer's
// metrics and draw one loss curve, labelled by its loss.
func TestDistinctTrainings(t *testing.T) {
	m := func(loss float64) []runfiles.Metric {
		return []runfiles.Metric{{Step: 1, LossAll: loss}, {Step: 2, LossAll: loss / 2}}
	}
	runs := []*runData{
		{Label: "standard, approximation=exact", Metrics: m(3)},
		{Label: "standard, approximation=kv8", Metrics: m(3)},
		{Label: "goldfish, approximation=exact", K: 4, H: 13, Strategy: "hash-table", Metrics: m(4)},
		{Label: "goldfish, approximation=kv8", K: 4, H: 13, Strategy: "hash-table", Metrics: m(4)},
	}
	kept, labels := distinctTrainings(runs)
	if len(kept) != 2 || kept[0] != runs[0] || kept[1] != runs[2] {
		t.Fatalf("kept %d runs, want the first and third", len(kept))
	}
	if labels[0] != runs[0].goldfishLabel() || labels[1] != runs[2].goldfishLabel() || labels[0] == labels[1] {
		t.Errorf("labels %q, want each run's loss", labels)
	}
	// Runs that each trained keep their own labels.
	if kept, labels := distinctTrainings(runs[1:3]); len(kept) != 2 || labels[0] != runs[1].Label {
		t.Errorf("two trainings: kept %d, labels %q", len(kept), labels)
	}
	// One loss, two learning rates, each attacked two ways: a curve a
	// rate, named by the rate alone (a review's case).
	lr := []*runData{
		{Variant: "lr=0.001, approximation=exact", Metrics: m(3)},
		{Variant: "lr=0.001, approximation=kv8", Metrics: m(3)},
		{Variant: "lr=0.01, approximation=exact", Metrics: m(5)},
		{Variant: "lr=0.01, approximation=kv8", Metrics: m(5)},
	}
	for _, r := range lr {
		r.Label = joinLabel(r.goldfishLabel(), r.Variant)
	}
	want := []string{joinLabel(lr[0].goldfishLabel(), "lr=0.001"), joinLabel(lr[0].goldfishLabel(), "lr=0.01")}
	if _, labels := distinctTrainings(lr); !slices.Equal(labels, want) {
		t.Errorf("shared trainings of one loss: labels %q, want %q", labels, want)
	}
}

func TestStepTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []string // the labelled ticks
	}{
		{1, 200, []string{"50", "100", "150", "200"}},
		{0, 100, []string{"0", "20", "40", "60", "80", "100"}},
		{0.05, 7.7, []string{"1", "2", "3", "4", "5", "6", "7"}},
		{0, 1, []string{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}},
		{-0.3, 0.3, []string{"-0.3", "-0.2", "-0.1", "0.0", "0.1", "0.2", "0.3"}},
		{0.33, 1.02, []string{"0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1.0"}},
		{0, 80, []string{"0", "20", "40", "60", "80"}},
		{25, 200, []string{"50", "100", "150", "200"}},
	} {
		var got []string
		for _, tk := range (stepTicks{}).Ticks(tc.lo, tc.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("[%v, %v]: %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
	// Ranges a float's rounding wide, huge or empty end (a review found
	// the first three looping forever) with some ticks.
	for _, r := range [][2]float64{{1, 1 + 4e-16}, {123.456, 123.456 + 1e-13}, {1e17, 1e17 + 100}, {5, 5}, {0, math.Inf(1)}, {math.NaN(), 1}, {-1e300, 1e300}} {
		done := make(chan int)
		go func() { done <- len((stepTicks{}).Ticks(r[0], r[1])) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("Ticks(%v, %v) did not return", r[0], r[1])
		}
	}
}

// TestReportOfOneDirectory: a run's directory, or memo eval --out's (scores
// without a config.toml), is reported; a directory with neither a run, a
// sweep nor scores is refused as bad input, naming what it lacks.
func TestReportOfOneDirectory(t *testing.T) {
	scored := outDir(t, "scored")
	writeSynthRun(t, scored, synthRun{name: "scored", k: 4, preset: "tiny", targets: 8, exact: 0, rouge: 0.3, steps: 40}, 1)
	if _, err := os.Stat(filepath.Join(scored, runfiles.ConfigFile)); err == nil {
		t.Fatal("the synthetic run has a config.toml: it does not stand for memo eval --out")
	}
	if err := Report(scored, DefaultConfig(), readSynthSpec); err != nil {
		t.Errorf("scores without a config.toml: %v", err)
	}
	// Without a spec, the loss comes from summary.json: a goldfish model
	// was once labelled "standard" here.
	md, err := os.ReadFile(filepath.Join(scored, "report", "table.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| goldfish k=4, h=13 |") {
		t.Errorf("memo eval --out's goldfish scores not labelled as such:\n%s", md)
	}
	err = Report(t.TempDir(), DefaultConfig(), readSynthSpec)
	if !badinput.Is(err) || !strings.Contains(err.Error(), "holds neither a run's config.toml, a sweep's sweep.json nor memo eval's scores.parquet") {
		t.Errorf("an empty directory: %v, want bad input naming what it lacks", err)
	}
	// A damaged sweep.json, or one whose points never finished, is bad
	// input (exit 2), not a failure of the machine.
	for _, index := range []string{`{"points": [`, `{"name":"x","points":[]}`} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "sweep.json"), []byte(index), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := Report(dir, DefaultConfig(), readSynthSpec); !badinput.Is(err) {
			t.Errorf("sweep.json %s: %v, want bad input", index, err)
		}
	}
}
