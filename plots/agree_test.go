package plots

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// csvFromSummary maps each number table.csv shares with summary.json to
// its place there (a path of keys and array indexes); some have two, the
// flat field kept for older readers and the per-statistic one.
var csvFromSummary = map[string][][]any{
	"targets":                             {{"members", "n"}},
	"exact_match":                         {{"members", "exact_match"}},
	"exact_match_wilson_ci_low":           {{"members", "exact_match_wilson_ci", 0}},
	"exact_match_wilson_ci_high":          {{"members", "exact_match_wilson_ci", 1}},
	"rougeL":                              {{"members", "rougeL"}},
	"controls":                            {{"controls", "n"}},
	"controls_exact_match":                {{"controls", "exact_match"}},
	"controls_exact_match_wilson_ci_low":  {{"controls", "exact_match_wilson_ci", 0}},
	"controls_exact_match_wilson_ci_high": {{"controls", "exact_match_wilson_ci", 1}},
	"controls_rougeL":                     {{"controls", "rougeL"}},
	"mia_auc_loss":                        {{"mia", "loss_auc"}, {"mia", "loss", "auc"}},
	"mia_auc_loss_ci_low":                 {{"mia", "loss", "auc_ci", 0}},
	"mia_auc_loss_ci_high":                {{"mia", "loss", "auc_ci", 1}},
	"mia_tpr_at_0.1pct_fpr_loss":          {{"mia", "loss", "tpr_at_0.1pct_fpr"}},
	"mia_tpr_at_0.1pct_fpr_loss_ci_low":   {{"mia", "loss", "tpr_at_0.1pct_fpr_ci", 0}},
	"mia_tpr_at_0.1pct_fpr_loss_ci_high":  {{"mia", "loss", "tpr_at_0.1pct_fpr_ci", 1}},
	// eval's default FPR is 1 %, so mia.loss_tpr is this number too.
	"mia_tpr_at_1pct_fpr_loss":         {{"mia", "loss", "tpr_at_1pct_fpr"}, {"mia", "loss_tpr"}},
	"mia_tpr_at_1pct_fpr_loss_ci_low":  {{"mia", "loss", "tpr_at_1pct_fpr_ci", 0}},
	"mia_tpr_at_1pct_fpr_loss_ci_high": {{"mia", "loss", "tpr_at_1pct_fpr_ci", 1}},
}

// jsonAt follows path through decoded JSON; ok is false when a step is missing.
func jsonAt(v any, path []any) (any, bool) {
	for _, step := range path {
		switch k := step.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[k]; !ok {
				return nil, false
			}
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				return nil, false
			}
			v = a[k]
		}
	}
	return v, true
}

// The report's table.csv and each run's summary.json agree on every number
// they share, to the last bit: the table is eval's numbers, not a second
// computation. The sweep has documents the attack skipped (eval counts them
// in the MIA statistics, not in the rates) and rates whose decimals a short
// format would cut.
func TestTableCSVAgreesWithSummaryJSON(t *testing.T) {
	dir := t.TempDir()
	runs := []synthRun{
		{name: "k=0", k: 0, preset: "tiny", targets: 30, exact: 19, rouge: 0.83, steps: 50, unattacked: 3},
		{name: "k=4", k: 4, preset: "tiny", targets: 30, exact: 1, rouge: 0.41, steps: 50, unattacked: 2},
		{name: "k=32", k: 32, preset: "tiny", targets: 30, exact: 7, rouge: 0.6, steps: 50},
	}
	var pts []synthPoint
	for i, r := range runs {
		writeSynthRun(t, filepath.Join(dir, r.name), r, uint64(10+i))
		pts = append(pts, synthPoint{r.name, r.name, map[string]any{"goldfish.k": r.k}})
	}
	writeSweepIndex(t, dir, "agree", []string{"goldfish.k"}, pts)
	if err := Report(dir, DefaultConfig(), readSynthSpec); err != nil {
		t.Fatal(err)
	}
	recs := readCSV(t, filepath.Join(dir, "report", "table.csv"))
	if len(recs) != 1+len(runs) {
		t.Fatalf("table.csv has %d records, want a header and %d", len(recs), len(runs))
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	// Every numeric column but the training loss (metrics.arrow's) must be
	// checked here, so that a new column cannot drift from summary.json.
	for _, c := range csvColumns {
		if _, ok := csvFromSummary[c.name]; !ok && c.name != "final_train_loss" {
			t.Errorf("table.csv column %q has no counterpart in summary.json checked by this test", c.name)
		}
	}
	checked := 0
	for _, rec := range recs[1:] {
		run := rec[col["run"]]
		raw, err := os.ReadFile(filepath.Join(dir, run, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var sum any
		if err := json.Unmarshal(raw, &sum); err != nil {
			t.Fatal(err)
		}
		for name, paths := range csvFromSummary {
			i, ok := col[name]
			if !ok {
				t.Errorf("table.csv lacks column %q", name)
				continue
			}
			cell := rec[i]
			for _, p := range paths {
				v, ok := jsonAt(sum, p)
				if !ok {
					t.Errorf("%s: summary.json has no %v", run, p)
					continue
				}
				checked++
				if v == nil {
					if cell != "" {
						t.Errorf("%s: %s = %q in table.csv, null at %v in summary.json", run, name, cell, p)
					}
					continue
				}
				got, err := strconv.ParseFloat(cell, 64)
				if want := v.(float64); err != nil || got != want {
					t.Errorf("%s: %s = %q in table.csv, %v at %v in summary.json", run, name, cell, want, p)
				}
			}
		}
		// The skipped documents are in the MIA counts, as eval scores them.
		if n, _ := jsonAt(sum, []any{"mia", "n_controls"}); n.(float64) != 30 {
			t.Errorf("%s: mia.n_controls = %v, want all 30 controls", run, n)
		}
	}
	if checked < len(runs)*len(csvFromSummary) {
		t.Errorf("checked %d numbers, want at least %d", checked, len(runs)*len(csvFromSummary))
	}
	if v, _ := strconv.ParseFloat(recs[1][col["mia_auc_loss_ci_low"]], 64); math.IsNaN(v) || v <= 0 || v > 1 {
		t.Errorf("AUC interval low %v: want a bootstrap interval in (0, 1]", v)
	}
}
