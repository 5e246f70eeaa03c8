package plots

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/badinput"
)

// Run draws the figures of one run directory into runDir/figures, and
// removes the figures memo draws that this run no longer has (one an
// earlier memo drew, a format no longer asked for); any other file
// there is left alone. read reads its spec.
func Run(runDir string, cfg Config, read SpecReader) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	r, err := loadRun(runDir, "", nil, read)
	if err != nil {
		return fmt.Errorf("plots %s: %w", runDir, err)
	}
	dir := filepath.Join(runDir, FiguresDir)
	written, err := drawAll(cfg, []*runData{r}, nil, dir, "")
	if err != nil {
		return err
	}
	return removeStaleFigures(dir, written)
}

// figureNames are the names of every figure drawAll may draw: a figure
// file of one of these names and a format memo writes is memo's.
var figureNames = []string{
	"exact-match-vs-k", "rougel", "memorization-vs-repetitions", "rougel-vs-repetitions",
	"loss", "mia-roc", "mia-roc-loglog", "extractable-vs-n", "extraction-pr",
	"threshold-vs-params", "extraction-vs-corpus-count", "memorization-over-training",
	"extraction-vs-mass-kept", "extraction-vs-kv-bytes", "memorization-vs-utility",
}

// removeStaleFigures removes from dir the files named as memo names
// figures (figureNames, in any format) that are not among written.
func removeStaleFigures(dir string, written []string) error {
	for _, name := range figureNames {
		for _, format := range Formats {
			path := filepath.Join(dir, name+"."+format)
			if slices.Contains(written, path) {
				continue
			}
			if err := atomicfile.RemoveStale(path); err != nil {
				return err
			}
		}
	}
	return nil
}

// The report's places in a sweep or run directory: memo report writes
// only into a report/ that is new or holds its table.md (cmd/memo checks).
const (
	ReportDir  = "report"
	FiguresDir = "figures"
	TableFile  = "table.md"
)

// RemoveReport removes dir's report/, when memo report wrote it (it holds
// table.md): what a sweep does when its grid changed, so that a sweep cut
// short leaves no report of the old grid that reads as finished. The
// directory is renamed away first and removed whole after: a removal cut
// short leaves a temporary directory, not a report/ missing some files.
func RemoveReport(dir string) error {
	out := filepath.Join(dir, ReportDir)
	if _, err := os.Stat(filepath.Join(out, TableFile)); err != nil {
		return nil
	}
	tmp, err := os.MkdirTemp(dir, "."+ReportDir+".tmp-")
	if err != nil {
		return fmt.Errorf("remove the old report: %w", err)
	}
	if err := os.Rename(out, filepath.Join(tmp, ReportDir)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("remove the old report: %w", err)
	}
	return os.RemoveAll(tmp)
}

// Report writes the comparison table (table.md, table.csv, table.tex) and the
// figures of a sweep directory, or of a single run directory, into dir/report.
// Sweep points that have not finished are left out and logged. read reads
// each run's spec.
func Report(dir string, cfg Config, read SpecReader) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	runs, axes, left, err := loadDir(dir, read)
	if err != nil {
		return fmt.Errorf("report %s: %w", dir, err)
	}
	for _, l := range left {
		slog.Warn("report: left out", "run", l.Name, "why", l.Why)
	}
	// The report is built beside report/ and renamed into place whole: a
	// report cut short (a kill, a full disk) is never taken for a finished
	// one, and files of an earlier report (figures of another format) do
	// not linger in the new one.
	tmp, err := atomicfile.MkdirTemp(dir, "."+ReportDir+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // gone after the rename; what is left of a failure
	if len(runs) == 0 && len(left) == 0 {
		return badinput.Errorf("report %s: its sweep.json lists no points", dir)
	}
	if len(runs) == 0 {
		// No point is current: the report says so in place of the last
		// one, whose numbers were of points the sweep no longer has (a
		// rerun with a changed key, every point refused).
		if _, err := writeTables(tmp, axes, nil, left); err != nil {
			return err
		}
		if err := replaceDir(tmp, filepath.Join(dir, ReportDir)); err != nil {
			return err
		}
		return badinput.Wrap(noPointError(fmt.Sprintf("report %s: none of the %d sweep points can be reported (%s); logs in %s", dir, len(left), leftReasons(left), filepath.Join(dir, "logs"))))
	}
	if err := writeReport(tmp, cfg, runs, axes, left); err != nil {
		return err
	}
	return replaceDir(tmp, filepath.Join(dir, ReportDir))
}

// leftReasons counts the left-out points by reason: "3 not finished: no
// scores.parquet and summary.json yet; 1 run made from an older version of
// the sweep's spec".
func leftReasons(left []leftOut) string {
	count := map[string]int{}
	var order []string
	for _, l := range left {
		if count[l.Why] == 0 {
			order = append(order, l.Why)
		}
		count[l.Why]++
	}
	parts := make([]string, len(order))
	for i, why := range order {
		parts[i] = fmt.Sprintf("%d %s", count[why], why)
	}
	return strings.Join(parts, "; ")
}

// replaceDir renames the directory tmp to out, moving an existing out
// aside first and removing it after.
func replaceDir(tmp, out string) error {
	old := ""
	if _, err := os.Lstat(out); err == nil {
		old = tmp + ".old"
		if err := os.Rename(out, old); err != nil {
			return err
		}
	}
	if err := atomicfile.RenameDir(tmp, out); err != nil {
		if old != "" {
			_ = os.Rename(old, out) // the old report back in place
		}
		return err
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}

// writeReport writes the report's tables and figures into out. A report
// leaving out sweep points says so in every Markdown table and figure
// title, not in table.md alone: calibrated.md or a figure quoted on its
// own read as the whole sweep.
func writeReport(out string, cfg Config, runs []*runData, axes []string, left []leftOut) error {
	// repetitions.md names its series as the figures' legends do; the
	// other tables name a run by its directory, as sweep.json does.
	labelRuns(runs, axes)
	if _, err := writeTables(out, axes, tableRows(runs, axes), left); err != nil {
		return err
	}
	var tables []string
	for _, write := range []func(string, []*runData) ([]string, error){
		writeRepsTables, writeThresholdTables, writeApproxTables, writeCalibratedTables, writeCountTables,
	} {
		w, err := write(out, runs)
		if err != nil {
			return err
		}
		tables = append(tables, w...)
	}
	if note := partialNote(len(runs), left); note != "" {
		for _, path := range tables {
			if strings.HasSuffix(path, ".md") {
				if err := appendNote(path, note); err != nil {
					return err
				}
			}
		}
	}
	_, err := drawAll(cfg, runs, axes, filepath.Join(out, FiguresDir), partialTitle(len(runs), left))
	return err
}

// appendNote adds note under the Markdown table at path: the report is
// written in a temporary directory, renamed whole when done.
func appendNote(path, note string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, "\n"+note+"\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// partialTitle is what a figure's title adds when the report leaves out
// sweep points, "partial: 1 of 2 points"; "" when it leaves out none.
func partialTitle(shown int, left []leftOut) string {
	if len(left) == 0 {
		return ""
	}
	return fmt.Sprintf("partial: %d of %d points", shown, shown+len(left))
}

// drawAll makes every figure the data support and saves it into dir; a
// figure without data (no metrics, one repetition count, no MIA scores)
// is skipped, not faked.
func drawAll(cfg Config, runs []*runData, axes []string, dir, partial string) ([]string, error) {
	var written []string
	err := eachFigure(cfg, runs, axes, func(name string, p *figure) error {
		if partial != "" {
			p.Title.Text = strings.TrimSpace(p.Title.Text + " (" + partial + ")")
		}
		w, err := save(p, cfg, dir, name)
		written = append(written, w...)
		return err
	})
	return written, err
}

// eachFigure passes every figure the data support to emit, by name, in
// a fixed order; a test draws them all without saving.
func eachFigure(cfg Config, runs []*runData, axes []string, emit func(name string, p *figure) error) error {
	labelRuns(runs, axes)
	for _, fig := range []struct {
		name string
		make func() (*figure, error)
	}{
		{"exact-match-vs-k", func() (*figure, error) { return exactVsK(cfg, runs, axes) }},
		{"rougel", func() (*figure, error) { return rougeBoxes(cfg, runs, axes) }},
		{"memorization-vs-repetitions", func() (*figure, error) { return repsCurves(cfg, runs, "exact") }},
		{"rougel-vs-repetitions", func() (*figure, error) { return repsCurves(cfg, runs, "rougeL") }},
		{"threshold-vs-params", func() (*figure, error) { return thresholdVsParams(cfg, runs) }},
		{"extraction-vs-mass-kept", func() (*figure, error) {
			return approxFigure(cfg, runs, "Extraction under sparse attention", "exact attention mass kept",
				func(a *eval.ApproxSummary) float64 { return float64(a.AttnMassKept) }, false)
		}},
		{"extraction-vs-kv-bytes", func() (*figure, error) {
			return approxFigure(cfg, runs, "Extraction against KV cache traffic", "KV bytes read per token",
				func(a *eval.ApproxSummary) float64 { return float64(a.KVBytesPerToken) }, true)
		}},
		{"loss", func() (*figure, error) { p, _, err := lossCurves(cfg, runs); return p, err }},
		{"mia-roc", func() (*figure, error) { return rocCurves(cfg, runs, eval.MIAStatistics()[0].Label) }},
		{"mia-roc-loglog", func() (*figure, error) { return rocLogLog(cfg, runs) }},
		{"extractable-vs-n", func() (*figure, error) { return extractableCurves(cfg, runs) }},
		{"extraction-pr", func() (*figure, error) { return prCurves(cfg, runs) }},
		{"memorization-over-training", func() (*figure, error) { return memorizationCurves(cfg, runs) }},
		{"extraction-vs-corpus-count", func() (*figure, error) { return extractionVsCount(cfg, runs) }},
		{"memorization-vs-utility", func() (*figure, error) { return tradeoffFigure(cfg, runs) }},
	} {
		if !slices.Contains(figureNames, fig.name) {
			panic("plots: figure " + fig.name + " is missing from figureNames") // removeStaleFigures would leave it
		}
		p, err := fig.make()
		if err != nil {
			return fmt.Errorf("figure %s: %w", fig.name, err)
		}
		if p == nil {
			slog.Debug("figure skipped: no data", "figure", fig.name)
			continue
		}
		if err := emit(fig.name, p); err != nil {
			return err
		}
	}
	return nil
}
