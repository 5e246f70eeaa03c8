package plots

import (
	"math"
	"strings"
	"testing"

	"github.com/memo-research/memo/eval"
)

// TestCalibratedMarkdownHeader: calibrated.md's header counts the members
// and controls attacked, as summary.json's mia does, beside the table's
// rows over the same documents; it read "8 candidates (2 members)", the
// candidates the references scored beside the members attacked, when
// extract.max_docs = 2 attacked 2 of 4 targets and 2 of 4 controls.
func TestCalibratedMarkdownHeader(t *testing.T) {
	at := eval.CalibratedAUC{AUC: 1, TPR0_1: 1, TPR1: 1, NMembers: 2, NControls: 2}
	attacks := map[string]eval.CalibratedAUC{}
	for _, a := range eval.CalibratedAttacks() {
		attacks[a.Name] = at
	}
	sum := &eval.Summary{
		MIA: eval.MIASummary{NMembers: 2, NControls: 2},
		Calibrated: &eval.CalibratedSummary{References: 2, Candidates: 8, Population: 3,
			ByReferences: []eval.CalibratedAtK{{K: 1, RMIAA: 1, Attacks: attacks}, {K: 2, RMIAA: 0.35, Attacks: attacks}}},
	}
	var b strings.Builder
	if err := writeCalibratedMarkdown(&b, []*runData{{Name: "run", Summary: sum}}); err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(b.String(), "\n")
	if want := "run: 2 members, 2 controls, 3 population samples;"; !strings.HasPrefix(head, want) {
		t.Errorf("header %q, want it to start %q", head, want)
	}
	if !strings.Contains(b.String(), "| lira_online | 2 | 1.000 | 100.0 | 100.0 | 2, 2 |") {
		t.Errorf("no lira_online row over 2, 2:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "\nOffline RMIA's a: K = 1: 1.00, K = 2: 0.35\n") {
		t.Errorf("no line of offline RMIA's a at each K:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "\nTPR@0.1%FPR and TPR@1%FPR over as few as 2 controls: ") {
		t.Errorf("no note that the low-FPR rates are at FPR 0:\n%s", b.String())
	}
}

// TestCalibratedTablesSameRows: calibrated.md holds calibrated.csv's rows,
// those of an attack K references score no document by included ("–"); it
// dropped them, and the two files read as different tables.
func TestCalibratedTablesSameRows(t *testing.T) {
	none := eval.CalibratedAUC{AUC: eval.Num(math.NaN()), TPR0_1: eval.Num(math.NaN()), TPR1: eval.Num(math.NaN())}
	scored := eval.CalibratedAUC{AUC: 0.75, TPR0_1: 0, TPR1: 0.5, NMembers: 4, NControls: 4}
	atK := func(k int, online eval.CalibratedAUC) eval.CalibratedAtK {
		attacks := map[string]eval.CalibratedAUC{}
		for _, a := range eval.CalibratedAttacks() {
			attacks[a.Name] = scored
		}
		attacks["lira_online"] = online
		return eval.CalibratedAtK{K: k, Attacks: attacks}
	}
	runs := []*runData{{Name: "run", Summary: &eval.Summary{
		MIA:        eval.MIASummary{NMembers: 4, NControls: 4},
		Calibrated: &eval.CalibratedSummary{References: 2, ByReferences: []eval.CalibratedAtK{atK(1, none), atK(2, scored)}},
	}}}
	var md, csv strings.Builder
	if err := writeCalibratedMarkdown(&md, runs); err != nil {
		t.Fatal(err)
	}
	if err := writeCalibratedCSV(&csv, calibratedRows(runs)); err != nil {
		t.Fatal(err)
	}
	mdRows := strings.Count(md.String(), "\n| ") - 2 // less the header and its rule
	csvRows := strings.Count(csv.String(), "\n") - 1
	if mdRows != csvRows || csvRows != 2*len(eval.CalibratedAttacks()) {
		t.Errorf("calibrated.md has %d rows, calibrated.csv %d; want %d each:\n%s\n%s", mdRows, csvRows, 2*len(eval.CalibratedAttacks()), md.String(), csv.String())
	}
	if !strings.Contains(md.String(), "| lira_online | 1 | – | – | – | 0, 0 |") {
		t.Errorf("no unscored lira_online row at K = 1:\n%s", md.String())
	}
	// calibrated.tex: the same rows, escaped, under the low-FPR note.
	var tex strings.Builder
	if err := writeCalibratedLaTeX(&tex, runs, calibratedRows(runs)); err != nil {
		t.Fatal(err)
	}
	if texRows := strings.Count(tex.String(), `\\`) - 1; texRows != csvRows {
		t.Errorf("calibrated.tex has %d rows, calibrated.csv %d:\n%s", texRows, csvRows, tex.String())
	}
	for _, want := range []string{"% TPR@0.1%FPR and TPR@1%FPR over as few as 4 controls", `run & attack & K & AUC & TPR@0.1\%FPR \% &`,
		`run & lira\_online & 1 & -- & -- & -- & 0 & 0 \\`, `run & lira\_online & 2 & 0.750 & 0.0 & 50.0 & 4 & 4 \\`, `\bottomrule`} {
		if !strings.Contains(tex.String(), want) {
			t.Errorf("calibrated.tex lacks %q:\n%s", want, tex.String())
		}
	}
}

// TestThresholdMarkdownNamesRuns: rows that model and loss do not tell
// apart (an lr sweep) get a run column; rows they do keep the table as
// docs/RESULTS.md quotes it.
func TestThresholdMarkdownNamesRuns(t *testing.T) {
	th := &eval.RepetitionThreshold{MaxRepetitions: 8}
	for _, tc := range []struct {
		rows   []thresholdRow
		runCol bool
	}{
		{[]thresholdRow{{run: "lr=0.003", model: "nano", loss: "standard", t: th}, {run: "lr=0.01", model: "nano", loss: "standard", t: th}}, true},
		{[]thresholdRow{{run: "k=0", model: "nano", loss: "standard", t: th}, {run: "k=4", model: "nano", loss: "goldfish k=4, h=13", t: th}}, false},
	} {
		var b strings.Builder
		if err := writeThresholdMarkdown(&b, tc.rows); err != nil {
			t.Fatal(err)
		}
		if got := strings.HasPrefix(b.String(), "| run | model |"); got != tc.runCol {
			t.Errorf("run column %v, want %v:\n%s", got, tc.runCol, b.String())
		}
		if tc.runCol && !strings.Contains(b.String(), "| lr=0.01 | nano | – | standard |") {
			t.Errorf("no lr=0.01 row:\n%s", b.String())
		}
		if n := strings.Count(b.String(), "\n"); n != 2+len(tc.rows) {
			t.Errorf("%d lines, want %d", n, 2+len(tc.rows))
		}
	}
}

// TestLogROCFollowsTies: a segment of tied scores, straight in linear
// rates, is drawn in pieces that stay on it, so that on log axes the
// curve reads the ROC's TPR at every FPR (drawn straight from the floor
// it read 0.10 at FPR 0.05 where the ROC has about 0.38).
func TestLogROCFollowsTies(t *testing.T) {
	pts := []eval.ROCPoint{{FPR: 0, TPR: 0}, {FPR: 0.125, TPR: 0.9375}, {FPR: 1, TPR: 1}}
	xy := logROC(pts, 0.03125)
	if len(xy) != 3+2*(tieSegmentPoints-1) {
		t.Fatalf("%d points, want both tied segments in %d pieces", len(xy), tieSegmentPoints)
	}
	for _, p := range xy {
		if p.X < 0.03125 || p.Y < 0.03125 {
			t.Fatalf("point %v below the floor", p)
		}
		if p.X > 0.04 && p.X < 0.125 {
			if want := p.X * 0.9375 / 0.125; math.Abs(p.Y-want) > 1e-9 {
				t.Errorf("at FPR %.4f the curve reads TPR %.4f, the ROC %.4f", p.X, p.Y, want)
			}
		}
	}
}

// TestPRCurveOfNoExtraction: with no member extracted the
// precision–recall curve is one point (every guess at 0, 0), which a line of no length did
// not draw (an empty box): it is drawn as a marker.
func TestPRCurveOfNoExtraction(t *testing.T) {
	var gs []eval.GuessScore
	for d := range 2 {
		for s := range 3 {
			gs = append(gs, eval.GuessScore{DocID: int64(d), Split: splitTarget, Sample: s, SeqLogProb: -float64(s)})
		}
	}
	r := &runData{Name: "r", GuessScores: gs, Summary: &eval.Summary{Guesses: &eval.GuessSummary{Samples: 3, MaxWrong: 100}}}
	r.Summary.Guesses.Members.N = 2
	for _, q := range eval.PRCurve(r.memberGuesses(), 2) {
		if q.Recall != 0 || q.Precision != 0 {
			t.Fatalf("the curve of no exact guess has point %+v; this test wants them all at 0, 0", q)
		}
	}
	p, err := prCurves(DefaultConfig(), []*runData{r})
	if err != nil || p == nil {
		t.Fatalf("prCurves: %v, %v", p, err)
	}
	// A line reports glyph boxes of its width (1.5 pt); the marker's is
	// its diameter (6 pt).
	var n int
	for _, b := range p.Plot.GlyphBoxes(p.Plot) {
		if b.Rectangle.Size().X > 4 {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d markers drawn for the one-point curve, want 1", n)
	}
}

// TestCalibratedLowFPRNoteCountsRows: the note under the calibrated
// tables counts the controls each row scored, not the loss attack's: at
// K = 1 the offline attacks score only the controls the one model left
// out, and 700 of 1,500 cannot resolve 0.1 % FPR (a review's finding).
func TestCalibratedLowFPRNoteCountsRows(t *testing.T) {
	full := eval.CalibratedAUC{AUC: 0.9, NMembers: 1500, NControls: 1500}
	half := eval.CalibratedAUC{AUC: 0.8, NMembers: 700, NControls: 700}
	atK := func(k int, offline eval.CalibratedAUC) eval.CalibratedAtK {
		attacks := map[string]eval.CalibratedAUC{}
		for _, a := range eval.CalibratedAttacks() {
			attacks[a.Name] = full
		}
		attacks["lira_offline"] = offline
		return eval.CalibratedAtK{K: k, Attacks: attacks}
	}
	for _, tt := range []struct {
		name string
		k1   eval.CalibratedAUC
		want bool
	}{{"every row over 1,500", full, false}, {"a K = 1 row over 700", half, true}} {
		runs := []*runData{{Name: "run", Summary: &eval.Summary{
			MIA:        eval.MIASummary{NMembers: 1500, NControls: 1500},
			Calibrated: &eval.CalibratedSummary{References: 2, ByReferences: []eval.CalibratedAtK{atK(1, tt.k1), atK(2, full)}},
		}}}
		var md, tex strings.Builder
		if err := writeCalibratedMarkdown(&md, runs); err != nil {
			t.Fatal(err)
		}
		if err := writeCalibratedLaTeX(&tex, runs, calibratedRows(runs)); err != nil {
			t.Fatal(err)
		}
		const note = "TPR@0.1%FPR over as few as 700 controls"
		if got := strings.Contains(md.String(), note); got != tt.want {
			t.Errorf("%s: calibrated.md has the note: %v, want %v:\n%s", tt.name, got, tt.want, md.String())
		}
		if got := strings.Contains(tex.String(), note); got != tt.want {
			t.Errorf("%s: calibrated.tex has the note: %v, want %v", tt.name, got, tt.want)
		}
	}
}
