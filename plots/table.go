package plots

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/provenance"
)

// row is one run of the comparison table. Every number but the final
// training loss is the run's summary.json, as eval wrote it.
type row struct {
	Run                     string
	Values                  []string // one per sweep axis
	Loss                    string
	Model                   string
	Targets                 int
	Exact, ExactLo, ExactHi float64 // Wilson interval
	Rouge                   float64
	Controls                int
	CExact, CExactLo, CExHi float64
	CRouge                  float64
	MIA                     eval.MIAStat // loss-score membership inference
	MIAControls             int          // the controls MIA scored
	FinalLoss               float64

	// DP is the run's DP-SGD record (nil: trained without), ValLoss its
	// final validation loss: dptable.go's columns.
	DP      *provenance.DPRecord
	ValLoss float64
}

func tableRows(runs []*runData, axes []string) []row {
	rows := make([]row, 0, len(runs))
	for _, r := range runs {
		w := row{Run: r.Name, Loss: r.goldfishLabel(), Model: r.modelText()}
		for _, a := range axes {
			w.Values = append(w.Values, fmt.Sprint(r.Values[a]))
		}
		s := r.Summary
		w.Targets, w.Exact, w.ExactLo, w.ExactHi = s.Members.N, float64(s.Members.ExactMatch),
			float64(s.Members.ExactMatchWilsonCI[0]), float64(s.Members.ExactMatchWilsonCI[1])
		w.Controls, w.CExact, w.CExactLo, w.CExHi = s.Controls.N, float64(s.Controls.ExactMatch),
			float64(s.Controls.ExactMatchWilsonCI[0]), float64(s.Controls.ExactMatchWilsonCI[1])
		w.Rouge, w.CRouge = float64(s.Members.RougeL), float64(s.Controls.RougeL)
		w.MIA, w.MIAControls = s.MIA.Stat("loss"), s.MIA.NControls
		w.DP, w.ValLoss = s.DP, finalValLoss(r)
		w.FinalLoss = math.NaN()
		for i := len(r.Metrics) - 1; i >= 0; i-- {
			if y := r.Metrics[i].LossAll; !math.IsNaN(y) {
				w.FinalLoss = y
				break
			}
		}
		rows = append(rows, w)
	}
	return rows
}

func pct(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return strconv.FormatFloat(100*v, 'f', 1, 64)
}

func num(v float64, prec int) string {
	if math.IsNaN(v) {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

func header(axes []string) []string {
	h := []string{"run"}
	h = append(h, axes...)
	return append(h, "loss", "model", "targets", "exact match % [95% CI]", "RougeL", "controls", "controls exact %", "controls RougeL",
		"MIA AUC (loss)", "AUC 95% CI", "TPR@0.1%FPR % [95% CI]", "TPR@1%FPR % [95% CI]", "final train loss")
}

// interval formats a value and its interval with f ("–" for undefined).
func interval(v float64, ci [2]eval.Num, f func(float64) string) string {
	if math.IsNaN(float64(ci[0])) && math.IsNaN(float64(ci[1])) {
		return f(v) // no interval: none of "[–, –]"
	}
	return fmt.Sprintf("%s [%s, %s]", f(v), f(float64(ci[0])), f(float64(ci[1])))
}

// aucInterval is the AUC's interval column: "–" without one
// (eval.bootstrap = 0), not "[–, –]".
func aucInterval(ci [2]eval.Num) string {
	if math.IsNaN(float64(ci[0])) && math.IsNaN(float64(ci[1])) {
		return "–"
	}
	return fmt.Sprintf("[%s, %s]", num(float64(ci[0]), 3), num(float64(ci[1]), 3))
}

func (w row) cells() []string {
	c := []string{w.Run}
	c = append(c, w.Values...)
	return append(c, w.Loss, w.Model, strconv.Itoa(w.Targets),
		interval(w.Exact, [2]eval.Num{eval.Num(w.ExactLo), eval.Num(w.ExactHi)}, pct),
		num(w.Rouge, 3), strconv.Itoa(w.Controls), pct(w.CExact), num(w.CRouge, 3),
		num(float64(w.MIA.AUC), 3), aucInterval(w.MIA.AUCCI),
		interval(float64(w.MIA.TPR0_1), w.MIA.TPR0_1CI, pct), interval(float64(w.MIA.TPR1), w.MIA.TPR1CI, pct),
		num(w.FinalLoss, 3))
}

func writeMarkdown(out io.Writer, axes []string, rows []row) error {
	dp := dpColumns(rows)
	h := append(header(axes), dpHeads(dp)...)
	var b strings.Builder
	b.WriteString("| " + strings.Join(h, " | ") + " |\n|")
	for i := range h {
		if i == 0 || i == 1+len(axes) || i == 2+len(axes) {
			b.WriteString(" --- |")
		} else {
			b.WriteString(" ---: |")
		}
	}
	b.WriteString("\n")
	for _, w := range rows {
		b.WriteString("| " + strings.Join(append(w.cells(), dpCells(dp, w)...), " | ") + " |\n")
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// csvColumns are table.csv's numeric columns after run, the axes, loss,
// model: the name and the value of a row. Numbers are plain fractions
// (csvFloat: the fewest digits that read back as the same float64, so the
// file agrees with summary.json to the last bit) or counts (csvCounts).
var csvColumns = []struct {
	name string
	val  func(row) float64
}{
	{"targets", func(w row) float64 { return float64(w.Targets) }},
	{"exact_match", func(w row) float64 { return w.Exact }},
	{"exact_match_wilson_ci_low", func(w row) float64 { return w.ExactLo }},
	{"exact_match_wilson_ci_high", func(w row) float64 { return w.ExactHi }},
	{"rougeL", func(w row) float64 { return w.Rouge }},
	{"controls", func(w row) float64 { return float64(w.Controls) }},
	{"controls_exact_match", func(w row) float64 { return w.CExact }},
	{"controls_exact_match_wilson_ci_low", func(w row) float64 { return w.CExactLo }},
	{"controls_exact_match_wilson_ci_high", func(w row) float64 { return w.CExHi }},
	{"controls_rougeL", func(w row) float64 { return w.CRouge }},
	{"mia_auc_loss", func(w row) float64 { return float64(w.MIA.AUC) }},
	{"mia_auc_loss_ci_low", func(w row) float64 { return float64(w.MIA.AUCCI[0]) }},
	{"mia_auc_loss_ci_high", func(w row) float64 { return float64(w.MIA.AUCCI[1]) }},
	{"mia_tpr_at_0.1pct_fpr_loss", func(w row) float64 { return float64(w.MIA.TPR0_1) }},
	{"mia_tpr_at_0.1pct_fpr_loss_ci_low", func(w row) float64 { return float64(w.MIA.TPR0_1CI[0]) }},
	{"mia_tpr_at_0.1pct_fpr_loss_ci_high", func(w row) float64 { return float64(w.MIA.TPR0_1CI[1]) }},
	{"mia_tpr_at_1pct_fpr_loss", func(w row) float64 { return float64(w.MIA.TPR1) }},
	{"mia_tpr_at_1pct_fpr_loss_ci_low", func(w row) float64 { return float64(w.MIA.TPR1CI[0]) }},
	{"mia_tpr_at_1pct_fpr_loss_ci_high", func(w row) float64 { return float64(w.MIA.TPR1CI[1]) }},
	{"final_train_loss", func(w row) float64 { return w.FinalLoss }},
}

// csvCounts are the columns of table.csv that count (documents, steps):
// integers there, where every other number is a float (csvFloat).
var csvCounts = map[string]bool{"targets": true, "controls": true, "dp_steps": true}

func writeCSV(out io.Writer, axes []string, rows []row) error {
	cw := csv.NewWriter(out)
	h := []string{"run"}
	h = append(h, axes...)
	h = append(h, "loss", "model")
	cols := csvColumns
	for _, c := range dpColumns(rows) {
		cols = append(cols[:len(cols):len(cols)], struct {
			name string
			val  func(row) float64
		}{c.csv, c.val})
	}
	for _, c := range cols {
		h = append(h, c.name)
	}
	if err := cw.Write(h); err != nil {
		return err
	}
	for _, w := range rows {
		rec := []string{w.Run}
		rec = append(rec, w.Values...)
		rec = append(rec, w.Loss, w.Model)
		for _, c := range cols {
			v := c.val(w)
			switch {
			case csvCounts[c.name] && !math.IsNaN(v):
				rec = append(rec, strconv.FormatFloat(v, 'f', -1, 64))
			default:
				rec = append(rec, csvFloat(v))
			}
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// texEscaper makes a cell plain LaTeX: its specials escaped, and the
// non-ASCII characters memo's own cells hold (DP ε, δ, σ, ∞) in math
// mode, since pdflatex stops at a Greek letter it has no font set up for.
var texEscaper = strings.NewReplacer(`\`, `\textbackslash{}`, "&", `\&`, "%", `\%`, "$", `\$`, "#", `\#`, "_", `\_`, "{", `\{`, "}", `\}`, "~", `\textasciitilde{}`, "^", `\textasciicircum{}`, "–", "--",
	"ε", `$\varepsilon$`, "δ", `$\delta$`, "σ", `$\sigma$`, "∞", `$\infty$`, "≥", `$\geq$`, "≤", `$\leq$`, "×", `$\times$`, "…", `\ldots{}`)

// writeLaTeX writes a booktabs table body that \input{} drops into a paper.
func writeLaTeX(out io.Writer, axes []string, rows []row) error {
	dp := dpColumns(rows)
	h := append(header(axes), dpHeads(dp)...)
	cells := make([][]string, len(rows))
	for i, w := range rows {
		cells[i] = append(w.cells(), dpCells(dp, w)...)
	}
	return writeBooktabs(out, "l"+strings.Repeat("l", len(axes)+2)+strings.Repeat("r", len(h)-len(axes)-3), h, cells)
}

// writeBooktabs writes a booktabs tabular of head and rows, every cell
// escaped for LaTeX; align has a column letter (l, r) per column.
func writeBooktabs(out io.Writer, align string, head []string, rows [][]string) error {
	var b strings.Builder
	b.WriteString("% generated by memo report; needs \\usepackage{booktabs}\n")
	b.WriteString("\\begin{tabular}{" + align + "}\n\\toprule\n")
	line := func(cells []string) {
		esc := make([]string, len(cells))
		for i, c := range cells {
			esc[i] = texEscaper.Replace(c)
		}
		b.WriteString(strings.Join(esc, " & ") + " \\\\\n")
	}
	line(head)
	b.WriteString("\\midrule\n")
	for _, r := range rows {
		line(r)
	}
	b.WriteString("\\bottomrule\n\\end{tabular}\n")
	_, err := io.WriteString(out, b.String())
	return err
}

// writeTables writes table.md, table.csv and table.tex into dir.
// A partial report (left not empty) says so under table.md's table and in
// a comment atop table.tex; table.csv holds the rows alone, and
// left_out.csv (a header alone when none is) the points left out and why,
// for a script that reads the CSV and would not see the note.
func writeTables(dir string, axes []string, rows []row, left []leftOut) ([]string, error) {
	notes := []string{partialNote(len(rows), left), lowFPRNote(rowControls(rows)...)}
	return writeFiles(dir,
		namedWriter{TableFile, func(w io.Writer) error {
			if err := writeMarkdown(w, axes, rows); err != nil {
				return err
			}
			for _, note := range notes {
				if note != "" {
					if _, err := io.WriteString(w, "\n"+note+"\n"); err != nil {
						return err
					}
				}
			}
			return nil
		}},
		namedWriter{"table.csv", func(w io.Writer) error { return writeCSV(w, axes, rows) }},
		namedWriter{LeftOutFile, func(w io.Writer) error { return writeLeftOut(w, left) }},
		namedWriter{"table.tex", func(w io.Writer) error {
			for _, note := range notes {
				if note != "" {
					if _, err := io.WriteString(w, "% "+note+"\n"); err != nil {
						return err
					}
				}
			}
			return writeLaTeX(w, axes, rows)
		}})
}

// LeftOutFile lists the sweep points a report leaves out: columns point
// and reason, one row a point.
const LeftOutFile = "left_out.csv"

func writeLeftOut(out io.Writer, left []leftOut) error {
	cw := csv.NewWriter(out)
	if err := cw.Write([]string{"point", "reason"}); err != nil {
		return err
	}
	for _, l := range left {
		if err := cw.Write([]string{l.Name, l.Why}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// rowControls is the controls each row's membership inference scored.
func rowControls(rows []row) []int {
	out := make([]int, len(rows))
	for i, w := range rows {
		out[i] = w.MIAControls
	}
	return out
}

// lowFPRNote says, under a table of TPR at low FPR, that a rate over at
// most 1/FPR controls allows no false positive at all (the FPR must be
// below the limit): with 1,000 controls "TPR@0.1%FPR" is the TPR at FPR
// 0, not a measurement at 0.1 %. "" when every count (above zero)
// resolves both rates.
func lowFPRNote(controls ...int) string {
	least := 0
	for _, n := range controls {
		if n > 0 && (least == 0 || n < least) {
			least = n
		}
	}
	var short []string
	for _, fpr := range eval.LowFPRs {
		// As eval.TPRAtFPR compares: one false positive is 1/n, which
		// must be below the limit.
		if least > 0 && 1/float64(least) >= fpr {
			short = append(short, fmt.Sprintf("TPR@%s%%FPR", strconv.FormatFloat(100*fpr, 'f', -1, 64)))
		}
	}
	if len(short) == 0 {
		return ""
	}
	return fmt.Sprintf("%s over as few as %d controls: with at most 1/FPR controls such a rate allows no false positive, so it is the TPR at FPR 0 (as LiRA reads a ROC curve), not a measurement at that FPR.",
		strings.Join(short, " and "), least)
}

// partialNote says which sweep points a report of shown runs leaves out and
// why; "" when it leaves out none.
func partialNote(shown int, left []leftOut) string {
	if len(left) == 0 {
		return ""
	}
	parts := make([]string, len(left))
	for i, l := range left {
		parts[i] = l.Name + " (" + l.Why + ")"
	}
	return fmt.Sprintf("Partial: %d of the sweep's %d points; left out: %s.", shown, shown+len(left), strings.Join(parts, "; "))
}
