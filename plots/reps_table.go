package plots

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// repsRow is one point of the memorization-against-repetitions figures, as
// numbers: the figure alone cannot be quoted in a paper's text. They are
// summary.json's by_repetitions entries: Wilson interval of the exact-match
// rate, bootstrap interval of the mean RougeL.
type repsRow struct {
	series            string
	reps, n           int
	exact, exLo, exHi float64
	rouge, rgLo, rgHi float64
}

func repsRows(runs []*runData) []repsRow {
	g := groupByReps(runs)
	if len(g.reps) < 2 {
		return nil
	}
	var rows []repsRow
	for _, s := range g.series {
		for _, r := range g.reps {
			sp, ok := g.points[repsKey{s, r}]
			if !ok {
				continue
			}
			rows = append(rows, repsRow{series: s, reps: r, n: sp.N,
				exact: float64(sp.ExactMatch), exLo: float64(sp.ExactMatchWilsonCI[0]), exHi: float64(sp.ExactMatchWilsonCI[1]),
				rouge: float64(sp.RougeL), rgLo: float64(sp.RougeLCI[0]), rgHi: float64(sp.RougeLCI[1])})
		}
	}
	return rows
}

// writeRepsTables writes repetitions.md and repetitions.csv into dir when the
// runs hold targets at two or more repetition counts, and nothing otherwise.
func writeRepsTables(dir string, runs []*runData) ([]string, error) {
	rows := repsRows(runs)
	if rows == nil {
		return nil, nil
	}
	return writeFiles(dir,
		namedWriter{"repetitions.md", func(w io.Writer) error { return writeRepsMarkdown(w, rows) }},
		namedWriter{"repetitions.csv", func(w io.Writer) error { return writeRepsCSV(w, rows) }})
}

func writeRepsMarkdown(out io.Writer, rows []repsRow) error {
	var b strings.Builder
	b.WriteString("| model | repetitions | targets | exact match % [95% CI] | RougeL [95% CI] |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: |\n")
	for _, w := range rows {
		fmt.Fprintf(&b, "| %s | %d | %d | %s [%s, %s] | %s [%s, %s] |\n", w.series, w.reps, w.n,
			pct(w.exact), pct(w.exLo), pct(w.exHi), num(w.rouge, 3), num(w.rgLo, 3), num(w.rgHi, 3))
	}
	_, err := io.WriteString(out, b.String())
	return err
}

func writeRepsCSV(out io.Writer, rows []repsRow) error {
	cw := csv.NewWriter(out)
	f := csvFloat
	if err := cw.Write([]string{"model", "repetitions", "targets", "exact_match", "exact_match_wilson_ci_low",
		"exact_match_wilson_ci_high", "rougeL", "rougeL_ci_low", "rougeL_ci_high"}); err != nil {
		return err
	}
	for _, w := range rows {
		if err := cw.Write([]string{w.series, strconv.Itoa(w.reps), strconv.Itoa(w.n), f(w.exact), f(w.exLo),
			f(w.exHi), f(w.rouge), f(w.rgLo), f(w.rgHi)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
