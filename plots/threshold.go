package plots

import (
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/memo-research/memo/eval"
)

// thresholdRow is one run of the scale study's table: the smallest
// repetition count at which half its targets are extracted, as eval
// computed it (summary.json's repetition_threshold), with the model's
// parameter count as extract recorded it.
type thresholdRow struct {
	run    string
	model  string
	params int64
	loss   string
	k      int
	t      *eval.RepetitionThreshold
}

// thresholdRows are the runs with a repetition threshold, by parameter
// count, then the standard loss before goldfish.
func thresholdRows(runs []*runData) []thresholdRow {
	var rows []thresholdRow
	for _, r := range runs {
		if t := r.Summary.RepetitionThreshold; t != nil {
			rows = append(rows, thresholdRow{run: r.Name, model: r.Preset, params: r.Summary.ModelParams, loss: r.goldfishLabel(), k: r.K, t: t})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].params != rows[j].params {
			return rows[i].params < rows[j].params
		}
		return rows[i].k < rows[j].k
	})
	return rows
}

// writeThresholdTables writes threshold.md and threshold.csv into dir when
// some run has targets at two or more repetition counts.
func writeThresholdTables(dir string, runs []*runData) ([]string, error) {
	rows := thresholdRows(runs)
	if len(rows) == 0 {
		return nil, nil
	}
	return writeFiles(dir,
		namedWriter{"threshold.md", func(w io.Writer) error { return writeThresholdMarkdown(w, rows) }},
		namedWriter{"threshold.csv", func(w io.Writer) error { return writeThresholdCSV(w, rows) }})
}

// repsText shows a count of a threshold, or "> max" when eval found none
// among the counts tested.
func repsText(v *int, max int) string {
	if v == nil {
		return fmt.Sprintf("> %d", max)
	}
	return strconv.Itoa(*v)
}

func paramsText(n int64) string {
	if n <= 0 {
		return "–"
	}
	return strconv.FormatInt(n, 10)
}

// writeThresholdMarkdown names each row by model and loss, and by its run
// too where those do not tell two rows apart (a sweep of another key: an
// lr sweep's rows read the same).
func writeThresholdMarkdown(out io.Writer, rows []thresholdRow) error {
	seen, runCol := map[string]bool{}, false
	for _, w := range rows {
		key := w.model + "\x00" + w.loss
		runCol = runCol || seen[key]
		seen[key] = true
	}
	var b strings.Builder
	if runCol {
		b.WriteString("| run ")
	}
	b.WriteString("| model | parameters | loss | repetitions to extract half exactly [CI] | repetitions to half with RougeL >= 0.5 [CI] |\n")
	if runCol {
		b.WriteString("| --- ")
	}
	b.WriteString("| --- | ---: | --- | ---: | ---: |\n")
	for _, w := range rows {
		cell := func(t eval.Threshold) string {
			return fmt.Sprintf("%s [%s, %s]", repsText(t.Repetitions, w.t.MaxRepetitions),
				repsText(t.CI[0], w.t.MaxRepetitions), repsText(t.CI[1], w.t.MaxRepetitions))
		}
		if runCol {
			fmt.Fprintf(&b, "| %s ", w.run)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", w.model, paramsText(w.params), w.loss, cell(w.t.ExactMatch), cell(w.t.RougeL))
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// writeThresholdCSV leaves a cell empty (NaN in pandas) where eval found no
// count: above max_repetitions.
func writeThresholdCSV(out io.Writer, rows []thresholdRow) error {
	cw := csv.NewWriter(out)
	if err := cw.Write([]string{"run", "model", "params", "loss", "goldfish_k", "max_repetitions",
		"exact_match_threshold", "exact_match_threshold_ci_low", "exact_match_threshold_ci_high",
		"rougeL_threshold", "rougeL_threshold_ci_low", "rougeL_threshold_ci_high"}); err != nil {
		return err
	}
	cnt := func(v *int) string {
		if v == nil {
			return ""
		}
		return strconv.Itoa(*v)
	}
	for _, w := range rows {
		params := ""
		if w.params > 0 {
			params = strconv.FormatInt(w.params, 10)
		}
		e, r := w.t.ExactMatch, w.t.RougeL
		if err := cw.Write([]string{w.run, w.model, params, w.loss, strconv.Itoa(w.k), strconv.Itoa(w.t.MaxRepetitions),
			cnt(e.Repetitions), cnt(e.CI[0]), cnt(e.CI[1]), cnt(r.Repetitions), cnt(r.CI[0]), cnt(r.CI[1])}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
