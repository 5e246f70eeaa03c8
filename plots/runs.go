package plots

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/pelletier/go-toml/v2"
)

var nanValue = math.NaN()

// Split names of data/docs.arrow that the figures use.
const (
	splitTarget  = "target"
	splitControl = "control"
)

// docScore is one document of scores.parquet: the per-document values
// figures draw as distributions. Rates, intervals and AUCs are not
// recomputed from these; they come from the run's summary.json (eval).
type docScore struct {
	ID     int64
	Split  string
	Exact  bool
	RougeL float64
	// Attacked is false when extraction skipped the document (status != "ok").
	Attacked bool
	MIA      map[string]float64 // score label -> value as scores.parquet holds it
}

// miaScore names a membership-inference column of scores.parquet, how a
// figure labels it and where summary.json holds its statistics; which way
// it points is eval's (higherMember).
type miaScore struct {
	cols  []string
	label string
	stat  func(*eval.MIASummary) eval.MIAStat
}

// higherMember is eval.MIAStatistics' direction of the column: true for
// Min-K%++ and ReCaLL, false for the losses.
func (s miaScore) higherMember() bool {
	for _, x := range eval.MIAStatistics {
		if slices.Contains(s.cols, x.Column) {
			return x.HigherMember
		}
	}
	return false
}

var miaScores = []miaScore{
	{[]string{"loss", "mia_loss"}, "loss", func(m *eval.MIASummary) eval.MIAStat { return m.Loss }},
	{[]string{"zlib", "zlib_ratio", "mia_zlib"}, "zlib ratio", func(m *eval.MIASummary) eval.MIAStat { return m.Zlib }},
	{[]string{"min_k", "mink", "min_k_loss", "mia_min_k"}, "min-k% loss", func(m *eval.MIASummary) eval.MIAStat { return m.MinK }},
	{[]string{"ref_diff", "reference_diff", "ref_loss_diff", "mia_ref"}, "reference-model difference", func(m *eval.MIASummary) eval.MIAStat { return m.Ref }},
	{[]string{"mink_pp"}, "min-k%++", func(m *eval.MIASummary) eval.MIAStat { return m.MinKPP }},
	{[]string{"recall"}, "ReCaLL", func(m *eval.MIASummary) eval.MIAStat { return m.ReCaLL }},
	{[]string{"grad_norm"}, "gradient norm", func(m *eval.MIASummary) eval.MIAStat { return m.GradNorm }},
}

// runData is what the figures need from one run directory.
type runData struct {
	Name   string
	Dir    string
	Values map[string]any // sweep axis values; empty for a lone run
	Config map[string]any // resolved config.toml
	Docs   []docScore     // every document, attacked or not
	// Summary is the run's summary.json: every rate, interval and AUC a
	// table or figure shows comes from it, so they are eval's numbers.
	Summary *eval.Summary
	Metrics *frame // nil when metrics.arrow is missing
	// GuessScores and Memorization are guess_scores.parquet and
	// memorization.parquet, nil when eval wrote none (loadDynamics).
	GuessScores, Memorization *frame
	K, H                      int
	Strategy                  string
	Preset                    string
}

// standard says the run trained with the standard loss (perhaps shortened
// to a goldfish run's supervised tokens).
func (r *runData) standard() bool { return r.K == 0 || r.Strategy == "none" }

// goldfishLabel says which loss a run trained with, as a table or legend shows it.
func (r *runData) goldfishLabel() string {
	if r.standard() {
		if m := int(lookupFloat(r.Config, "train.match_supervised_tokens")); m > 0 {
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
func (r *runData) docs(split string) []docScore {
	var out []docScore
	for _, d := range r.Docs {
		if d.Split == split && d.Attacked {
			out = append(out, d)
		}
	}
	return out
}

// miaValues are a membership score of every document of split, attacked
// or not, oriented so that higher means member (eval.MemberScore):
// exactly what eval scores the MIA statistics on.
func (r *runData) miaValues(split string, s miaScore) []float64 {
	var out []float64
	for _, d := range r.Docs {
		if v, ok := d.MIA[s.label]; ok && d.Split == split {
			out = append(out, eval.MemberScore(v, s.higherMember()))
		}
	}
	return out
}

// loadRun reads one run directory. scores.parquet and summary.json are
// required: without them there is nothing to report.
func loadRun(dir, name string, values map[string]any) (*runData, error) {
	r := &runData{Name: name, Dir: dir, Values: values, Config: map[string]any{}}
	if r.Name == "" {
		r.Name = filepath.Base(dir)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "config.toml")); err == nil {
		if err := toml.Unmarshal(b, &r.Config); err != nil {
			return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, "config.toml"), err)
		}
	}
	r.K = int(lookupFloat(r.Config, "goldfish.k"))
	r.H = int(lookupFloat(r.Config, "goldfish.h"))
	r.Strategy, _ = lookup(r.Config, "goldfish.strategy").(string)
	r.Preset, _ = lookup(r.Config, "model.preset").(string)
	if from, _ := lookup(r.Config, "model.init_from").(string); from != "" {
		// An imported model: its directory names it (the preset key is a
		// default that does not apply).
		r.Preset = filepath.Base(strings.TrimPrefix(from, "hf:"))
	}
	if r.Preset == "" {
		if d := lookupFloat(r.Config, "model.dim"); d > 0 {
			r.Preset = fmt.Sprintf("d=%d, %d layers", int(d), int(lookupFloat(r.Config, "model.layers")))
		}
	}

	// A file eval wrote that cannot be read is bad input (exit 2 in the CLI).
	docs, err := readScores(filepath.Join(dir, "scores.parquet"))
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	r.Docs = docs
	if r.Summary, err = eval.ReadSummary(filepath.Join(dir, "summary.json")); err != nil {
		return nil, badinput.Errorf("the run's numbers come from eval: %w", err)
	}

	if err := r.loadDynamics(); err != nil {
		return nil, err
	}
	m, err := readArrow(filepath.Join(dir, "metrics.arrow"))
	switch {
	case err == nil:
		r.Metrics = m
	case errors.Is(err, os.ErrNotExist):
	default:
		return nil, badinput.Wrap(err)
	}
	return r, nil
}

func readScores(path string) ([]docScore, error) {
	f, err := readParquet(path)
	if err != nil {
		return nil, err
	}
	ids, _, _ := f.col("doc_id")
	split, ok := f.str("split")
	if !ok {
		return nil, fmt.Errorf("read %s: no string column \"split\"", path)
	}
	exact, ok := f.boolean("exact_match", "exact")
	if !ok {
		return nil, fmt.Errorf("read %s: no column \"exact_match\"", path)
	}
	rouge, _, ok := f.col("rougeL", "rouge_l", "rougel")
	if !ok {
		return nil, fmt.Errorf("read %s: no column \"rougeL\"", path)
	}
	status, _ := f.str("status")
	docs := make([]docScore, f.n)
	for i := range docs {
		d := &docs[i]
		d.Attacked = status == nil || status[i] == "ok"
		d.Split, d.Exact, d.RougeL = split[i], exact[i], rouge[i]
		if ids != nil {
			d.ID = int64(ids[i])
		}
		d.MIA = map[string]float64{}
	}
	for _, s := range miaScores {
		if v, _, ok := f.col(s.cols...); ok {
			for i := range docs {
				docs[i].MIA[s.label] = v[i]
			}
		}
	}
	// Documents the attack could not run on (too short for prefix + suffix)
	// have no extraction result: eval leaves them out of the rates (docs
	// does here) but scores their membership (miaValues).
	skipped := 0
	for _, d := range docs {
		if !d.Attacked {
			skipped++
		}
	}
	if skipped > 0 {
		slog.Warn("documents not attacked are left out of the extraction figures", "file", path, "count", skipped)
	}
	return docs, nil
}

// lookup follows a dotted key through nested TOML tables.
func lookup(m map[string]any, key string) any {
	var cur any = m
	for _, part := range strings.Split(key, ".") {
		t, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = t[part]
	}
	return cur
}

func lookupFloat(m map[string]any, key string) float64 {
	switch v := lookup(m, key).(type) {
	case int64:
		return float64(v)
	case float64:
		return v
	case int:
		return float64(v)
	}
	return 0
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

// loadDir reads a sweep directory (with sweep.json) or a single run
// directory. Sweep points without scores yet (failed or unfinished) are
// skipped and reported in missing.
func loadDir(dir string) (runs []*runData, axes []string, missing []string, err error) {
	b, err := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if errors.Is(err, os.ErrNotExist) {
		r, err := loadRun(dir, "", nil)
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
		return nil, nil, nil, fmt.Errorf("read %s: %w", filepath.Join(dir, "sweep.json"), err)
	}
	for _, p := range idx.Points {
		rd := p.Dir
		if !filepath.IsAbs(rd) {
			rd = filepath.Join(dir, rd)
		}
		r, err := loadRun(rd, p.Name, p.Values)
		if errors.Is(err, os.ErrNotExist) {
			missing = append(missing, p.Name)
			continue
		}
		if err != nil {
			return nil, nil, nil, err
		}
		// A column only extra points ([[sweep_points]]) set takes every
		// other run's value from its config.
		if r.Values == nil {
			r.Values = map[string]any{}
		}
		for _, a := range idx.Axes {
			if _, ok := r.Values[a]; !ok {
				r.Values[a] = lookup(r.Config, a)
			}
		}
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		return nil, nil, nil, fmt.Errorf("%s: none of the %d sweep runs has scores.parquet and summary.json yet", dir, len(idx.Points))
	}
	return runs, idx.Axes, missing, nil
}
