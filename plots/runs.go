package plots

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/runfiles"
)

var nanValue = math.NaN()

// Split names of data/docs.arrow that the figures use.
const (
	splitTarget  = "target"
	splitControl = "control"
)

// runData is what the figures need from one run directory.
type runData struct {
	Name   string
	Dir    string
	Values map[string]any // sweep axis values; empty for a lone run
	Spec   RunSpec        // the run's spec; zero when it has none
	// Docs are scores.parquet's rows, every document, attacked or not:
	// the per-document values figures draw as distributions. Rates,
	// intervals and AUCs are not recomputed from these.
	Docs []eval.Score
	// Summary is the run's summary.json: every rate, interval and AUC a
	// table or figure shows comes from it, so they are eval's numbers.
	Summary *eval.Summary
	Metrics []runfiles.Metric // none when metrics.arrow is missing
	// GuessScores and Memorization are guess_scores.parquet and
	// memorization.parquet, nil when eval wrote none (loadDynamics).
	GuessScores  []eval.GuessScore
	Memorization []eval.Memorization
	K, H         int
	Strategy     string
	Preset       string
	// Label names the run in legends, Variant what sets it apart besides
	// its loss (labelRuns).
	Label, Variant string
}

// standard says the run trained with the standard loss (perhaps shortened
// to a goldfish run's supervised tokens).
func (r *runData) standard() bool { return r.K == 0 || r.Strategy == "none" }

// goldfishLabel says which loss a run trained with, as a table or legend shows it.
func (r *runData) goldfishLabel() string {
	if r.standard() {
		if m := r.Spec.MatchSupervisedTokens; m > 0 {
			return fmt.Sprintf("standard, tokens of k=%d", m)
		}
		return "standard"
	}
	if r.Strategy == "hash-table" || r.Strategy == "hash-avalanche" || r.Strategy == "rolling" {
		return fmt.Sprintf("goldfish k=%d, h=%d", r.K, r.H)
	}
	return fmt.Sprintf("goldfish k=%d (%s)", r.K, r.Strategy)
}

// docs returns the attacked documents of a split: those with an extraction
// result, as eval counts them in the split's rates.
func (r *runData) docs(split string) []eval.Score {
	var out []eval.Score
	for _, d := range r.Docs {
		if d.Split == split && d.Status == eval.StatusOK {
			out = append(out, d)
		}
	}
	return out
}

// miaValues are a membership score of every document of split, attacked
// or not, oriented so that higher means member (eval.MemberScore):
// exactly what eval scores the MIA statistics on.
func (r *runData) miaValues(split string, s eval.MIAStatistic) []float64 {
	var out []float64
	for i := range r.Docs {
		if d := &r.Docs[i]; d.Split == split {
			out = append(out, eval.MemberScore(s.Value(d), s.HigherMember))
		}
	}
	return out
}

// loadRun reads one run directory, its spec through read. scores.parquet
// and summary.json are required: without them there is nothing to report.
func loadRun(dir, name string, values map[string]any, read SpecReader) (*runData, error) {
	r := &runData{Name: name, Dir: dir, Values: values}
	if r.Name == "" {
		r.Name = filepath.Base(dir)
	}
	spec, err := read(dir)
	if err != nil {
		return nil, err
	}
	if spec != nil {
		r.Spec = *spec
	}
	r.K, r.H, r.Strategy = r.Spec.Goldfish.K, r.Spec.Goldfish.H, r.Spec.Goldfish.Strategy
	r.Preset = r.Spec.Model

	// A file eval wrote that cannot be read is bad input (exit 2 in the CLI).
	docs, err := readScores(filepath.Join(dir, runfiles.ScoresFile))
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	r.Docs = docs
	if r.Summary, err = eval.ReadSummary(filepath.Join(dir, runfiles.SummaryFile)); err != nil {
		return nil, badinput.Errorf("the run's numbers come from eval: %w", err)
	}
	if spec == nil {
		// memo eval --out's scores have no config.toml: summary.json says
		// which loss and model the completions came from.
		r.fromSummary()
	}

	if err := r.loadDynamics(); err != nil {
		return nil, err
	}
	if r.Metrics, err = runfiles.ReadMetrics(filepath.Join(dir, runfiles.MetricsFile)); err != nil {
		return nil, badinput.Wrap(err)
	}
	return r, nil
}

// fromSummary takes the goldfish settings and the model's name from
// summary.json, for a run without a spec.
func (r *runData) fromSummary() {
	if g := r.Summary.Goldfish; g.Enabled {
		r.K, r.H, r.Strategy = g.K, g.H, g.Strategy
	}
	var m struct {
		Preset      string `json:"preset"`
		Dim, Layers int
	}
	if len(r.Summary.Model) == 0 || json.Unmarshal(r.Summary.Model, &m) != nil {
		return
	}
	switch {
	case m.Preset != "":
		r.Preset = m.Preset
	case m.Dim > 0:
		r.Preset = fmt.Sprintf("d=%d, %d layers", m.Dim, m.Layers)
	}
}

// readScores reads scores.parquet. Documents the attack could not run on
// (too short for prefix + suffix) have no extraction result: eval leaves
// them out of the rates (docs does here) but scores their membership
// (miaValues).
func readScores(path string) ([]eval.Score, error) {
	docs, err := eval.ReadScores(path)
	if err != nil {
		return nil, err
	}
	skipped := 0
	for _, d := range docs {
		if d.Status != eval.StatusOK {
			skipped++
		}
	}
	if skipped > 0 {
		slog.Warn("documents not attacked are left out of the extraction figures", "file", path, "count", skipped)
	}
	return docs, nil
}

// sweepIndex mirrors the sweep.json that experiments writes beside the runs
// of a sweep; plots keeps its own copy of the shape to avoid an import cycle.
type sweepIndex struct {
	Name   string   `json:"name"`
	Axes   []string `json:"axes"`
	Points []struct {
		Name   string         `json:"name"`
		Dir    string         `json:"dir"`
		Values map[string]any `json:"values"`
	} `json:"points"`
}

// leftOut is a sweep point the report does not show, and why.
type leftOut struct {
	Name, Why string
}

// loadDir reads a sweep directory (with sweep.json) or a single run
// directory. Sweep points without scores yet (failed or unfinished) and
// stale ones are skipped and reported in left.
func loadDir(dir string, read SpecReader) (runs []*runData, axes []string, left []leftOut, err error) {
	b, err := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if errors.Is(err, os.ErrNotExist) {
		_, errConfig := os.Stat(filepath.Join(dir, runfiles.ConfigFile))
		_, errScores := os.Stat(filepath.Join(dir, runfiles.ScoresFile))
		if errors.Is(errConfig, os.ErrNotExist) && errors.Is(errScores, os.ErrNotExist) {
			// A run, or memo eval --out's scores without one, is reported.
			return nil, nil, nil, badinput.Errorf("holds neither a run's %s, a sweep's sweep.json nor memo eval's %s: want a run or sweep directory", runfiles.ConfigFile, runfiles.ScoresFile)
		}
		if errors.Is(errScores, os.ErrNotExist) {
			// Not a file to name as if it were lost: the run stopped short.
			return nil, nil, nil, badinput.Errorf("the run has not finished: no %s yet (its eval stage has not run; `memo run` on its spec, or without --stages, finishes it)", runfiles.ScoresFile)
		}
		r, err := loadRun(dir, "", nil, read)
		if errors.Is(err, ErrUnfinishedRun) {
			return nil, nil, nil, badinput.Wrap(err)
		}
		if err != nil {
			return nil, nil, nil, err
		}
		return []*runData{r}, nil, nil, nil
	}
	if err != nil {
		return nil, nil, nil, err
	}
	var idx sweepIndex
	if err := json.Unmarshal(b, &idx); err != nil {
		// memo sweep writes it whole (temp and rename): a damaged one is
		// bad input, as a damaged run file is.
		return nil, nil, nil, badinput.Errorf("read %s: %w", filepath.Join(dir, "sweep.json"), err)
	}
	for _, p := range idx.Points {
		rd := p.Dir
		if !filepath.IsAbs(rd) {
			rd = filepath.Join(dir, rd)
		}
		r, err := loadRun(rd, p.Name, p.Values, read)
		if errors.Is(err, os.ErrNotExist) {
			left = append(left, leftOut{p.Name, "not finished: no " + runfiles.ScoresFile + " and " + runfiles.SummaryFile + " yet"})
			continue
		}
		if errors.Is(err, ErrStaleRun) {
			left = append(left, leftOut{p.Name, ErrStaleRun.Error()})
			continue
		}
		if errors.Is(err, ErrUnfinishedRun) {
			_, why, _ := strings.Cut(err.Error(), ": ")
			left = append(left, leftOut{p.Name, "not finished: " + why})
			continue
		}
		if err != nil {
			// One damaged point is the point's problem: it aborted the
			// whole sweep's report, and memo sweep's failure summary.
			why, _, _ := strings.Cut(err.Error(), "\n")
			left = append(left, leftOut{p.Name, "unreadable: " + why})
			continue
		}
		// A column only extra points ([[sweep_points]]) set takes every
		// other run's value from its config.
		if r.Values == nil {
			r.Values = map[string]any{}
		}
		for _, a := range idx.Axes {
			if _, ok := r.Values[a]; !ok {
				var v any
				if r.Spec.Value != nil {
					v = r.Spec.Value(a)
				}
				r.Values[a] = v
			}
		}
		runs = append(runs, r)
	}
	return runs, idx.Axes, left, nil
}
