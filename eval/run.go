package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/provenance"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/loss"
)

// Run scores completions (a completions.arrow file, or a run directory
// holding one) and writes outDir/scores.parquet and outDir/summary.json,
// each atomically.
//
// The summary records the goldfish settings that extract wrote into the
// completions' metadata: those of the checkpoint attacked, wherever the
// file lives. goldfish is recorded instead only when the completions hold
// none (written by an older memo, or from a checkpoint outside a run).
func Run(cfg Config, completions string, goldfish loss.Config, outDir string) (*Summary, error) {
	return RunFiles(cfg, completions, goldfish, filepath.Join(outDir, runfiles.ScoresFile), filepath.Join(outDir, runfiles.SummaryFile))
}

// OutputPaths names the scores and summary of a completions file beside
// it: completions.arrow gives scores.parquet and summary.json, and
// NAME.completions.arrow (or NAME.arrow) gives NAME.scores.parquet and
// NAME.summary.json, so attacks kept side by side keep their own scores.
func OutputPaths(completions string) (scores, summary string) {
	return runfiles.Beside(completions, runfiles.ScoresFile), runfiles.Beside(completions, runfiles.SummaryFile)
}

// RunFiles is Run writing the scores and the summary to the paths given.
func RunFiles(cfg Config, completions string, goldfish loss.Config, scoresPath, summaryPath string) (*Summary, error) {
	return RunCounted(cfg, completions, goldfish, scoresPath, summaryPath, nil)
}

// RunCounted is RunFiles that, when count is not nil, also counts each
// document's window and suffix in the training corpus: it writes
// corpus_counts.parquet beside the scores and summary.json's
// by_corpus_count and counted_corpus (experiments passes the run's
// data/tokindex).
func RunCounted(cfg Config, completions string, goldfish loss.Config, scoresPath, summaryPath string, count *Counter) (*Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	path := CompletionsPath(completions)
	comps, meta, err := readCompletions(path)
	if err != nil {
		return nil, err
	}
	ref, err := referenceLosses(cfg.Reference)
	if err != nil {
		return nil, err
	}
	rows := make([]Score, len(comps))
	unmatched := 0
	for i, c := range comps {
		r := math.NaN()
		if ref != nil {
			var ok bool
			if r, ok = ref.of(c); !ok {
				r, unmatched = math.NaN(), unmatched+1
			}
		}
		rows[i] = ScoreCompletion(c, cfg.MinKFraction, r)
	}
	if unmatched > 0 {
		slog.Warn("eval: windows missing from the reference completions (another dataset, or attacked with another window); their ref_diff is NaN",
			"reference", cfg.Reference, "missing", unmatched, "of", len(comps))
	}
	cal, err := applyCalibrated(rows, SignalsPath(path), cfg.Calibrated)
	if err != nil {
		return nil, err
	}
	gs, err := readGuessScores(path, comps)
	if err != nil {
		return nil, err
	}
	samples := applyGuesses(rows, gs)
	sum := Summarize(rows, cfg, goldfish)
	if gs != nil {
		sum.Guesses = summarizeGuesses(rows, gs, samples, cfg)
	}
	// Absolute, as extract records the checkpoint and run beside it: a
	// summary names the same files wherever it is read from.
	if sum.Completions, err = filepath.Abs(path); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	sum.Calibrated = cal
	sum.Approx = summarizeApprox(comps, meta[provenance.Approx])
	if err := sum.setProvenance(meta); err != nil {
		return nil, fmt.Errorf("eval: %s: %w", path, err)
	}
	for _, sp := range []SplitSummary{sum.Members, sum.Controls} {
		for _, name := range sp.NotAttacked {
			slog.Warn("eval: document not attacked, left out of the extraction rates", "doc", name)
		}
	}
	// The guess scores and counts first: summary.json existing means eval is done.
	if err := writeGuessResults(GuessScoresPath(scoresPath), gs); err != nil {
		return nil, err
	}
	if count != nil {
		counts, err := countCompletions(comps, count.Count)
		if err != nil {
			return nil, err
		}
		sum.ByCorpusCount = summarizeCounts(rows, counts)
		sum.CountedCorpus = &count.Corpus
		if err := writeCorpusCounts(CorpusCountsPath(scoresPath), counts); err != nil {
			return nil, err
		}
	}
	if err := WriteResults(rows, sum, scoresPath, summaryPath); err != nil {
		return nil, err
	}
	slog.Info("eval: scored", "documents", len(rows), "members", sum.Members.N, "exact_match", float64(sum.Members.ExactMatch),
		"rougeL", float64(sum.Members.RougeL), "loss_auc", float64(sum.MIA.LossAUC), "summary", summaryPath)
	return sum, nil
}

// WriteResults writes scores.parquet and summary.json of already scored
// rows, each atomically; Run uses it, and so can a test that needs real
// eval output without a model.
func WriteResults(rows []Score, sum *Summary, scoresPath, summaryPath string) error {
	if err := atomicfile.Write(scoresPath, func(w io.Writer) error { return Scores().WriteParquet(w, rows) }); err != nil {
		return err // atomicfile names the file
	}
	return atomicfile.Write(summaryPath, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	})
}

// summaryKeys are the keys every summary.json has held since the first.
var summaryKeys = []string{"n_documents", "members", "mia"}

// ReadSummary reads a summary.json that Run wrote. A summary written
// before the per-statistic MIA fields existed reads them as undefined
// (NaN), not 0, except the AUC, which it copies from the flat *_auc field
// that has always held the same number.
func ReadSummary(path string) (*Summary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	// A split the file lacks reads as undefined, as a number it lacks does.
	s := Summary{Members: undefinedSplit(), Controls: undefinedSplit()}
	if err := json.Unmarshal(b, &s); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			// Not Go's type names (eval.miaFixed): which key, and what it holds.
			where := ute.Field
			if where == "" {
				where = "the file"
			}
			return nil, fmt.Errorf("read %s: not a summary memo eval wrote: %s holds a JSON %s (rerun memo eval on the completions)", path, where, ute.Value)
		}
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	// A file that parses but holds none of a summary ({} or another
	// tool's JSON) would read as a run of zeros: a report printed 0
	// targets and an AUC of 0.000 from one.
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	for _, k := range summaryKeys {
		if _, ok := keys[k]; !ok {
			return nil, fmt.Errorf("read %s: not a summary memo eval wrote: no %q (rerun memo eval on the completions)", path, k)
		}
	}
	for name, flat := range map[string]Num{"loss": s.MIA.LossAUC, "zlib": s.MIA.ZlibAUC, "mink": s.MIA.MinKAUC, "ref": s.MIA.RefAUC} {
		if st := s.MIA.Stat(name); math.IsNaN(float64(st.AUC)) {
			st.AUC = flat
			s.MIA.SetStat(name, st)
		}
	}
	return &s, nil
}

func undefinedStat() MIAStat {
	n := Num(math.NaN())
	ci := [2]Num{n, n}
	return MIAStat{AUC: n, AUCCI: ci, TPR0_1: n, TPR0_1CI: ci, TPR1: n, TPR1CI: ci}
}

// referenceLosses reads a reference model's completions (a file or a run
// directory) into their mean losses; nil when none is configured.
func referenceLosses(ref string) (*refLosses, error) {
	if ref == "" {
		return nil, nil
	}
	comps, err := ReadCompletions(CompletionsPath(ref))
	if err != nil {
		return nil, fmt.Errorf("eval.reference = %q: %w", ref, err)
	}
	out := &refLosses{byWindow: map[string]float64{}, byText: map[string]float64{}}
	for _, c := range comps {
		l := c.Loss
		if len(c.TokenLosses) > 0 {
			l = MeanLoss(c.TokenLosses)
		}
		out.byText[c.Text] = l
		if c.WindowText != "" {
			out.byWindow[c.WindowText] = l
		}
	}
	return out, nil
}

// refLosses are a reference model's mean losses by the window they were
// taken over, and by document text for files that record no window (an
// older extract's): ref_diff compares two means over the same tokens, so
// a reference attacked over another window of the document has none.
type refLosses struct{ byWindow, byText map[string]float64 }

// of is the reference's mean loss over c's window.
func (r *refLosses) of(c runfiles.Completion) (float64, bool) {
	if c.WindowText != "" && len(r.byWindow) > 0 {
		l, ok := r.byWindow[c.WindowText]
		return l, ok
	}
	l, ok := r.byText[c.Text]
	return l, ok
}

// setProvenance copies what extract recorded about the model and the
// attack into the summary; the checkpoint's goldfish settings replace the
// given ones.
func (s *Summary) setProvenance(meta map[string]string) error {
	s.Checkpoint, s.Run, s.ModelSHA256 = meta[provenance.Checkpoint], meta[provenance.Run], meta[provenance.ModelSHA256]
	for key, dst := range map[string]*json.RawMessage{provenance.Extract: &s.Extract, provenance.Model: &s.Model} {
		if x := meta[key]; x != "" {
			if !json.Valid([]byte(x)) {
				return fmt.Errorf("metadata %s is not JSON: %q", key, x)
			}
			*dst = json.RawMessage(x)
		}
	}
	if x := meta[provenance.Params]; x != "" {
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil || n <= 0 {
			return fmt.Errorf("metadata %s = %q: want a positive parameter count", provenance.Params, x)
		}
		s.ModelParams = n
	}
	if x := meta[provenance.Step]; x != "" {
		step, err := strconv.Atoi(x)
		if err != nil {
			return fmt.Errorf("metadata %s = %q: %w", provenance.Step, x, err)
		}
		s.Step = &step
	}
	if x := meta[provenance.DP]; x != "" {
		dp, err := provenance.ParseDP([]byte(x))
		if err != nil {
			return fmt.Errorf("metadata %s = %q: %w", provenance.DP, x, err)
		}
		s.DP = dp
	}
	if x := meta[provenance.LoRA]; x != "" {
		lo, err := provenance.ParseLoRA([]byte(x))
		if err != nil {
			return fmt.Errorf("metadata %s = %q: %w", provenance.LoRA, x, err)
		}
		s.LoRA = lo
	}
	if x := meta[provenance.Goldfish]; x != "" {
		var g provenance.GoldfishRecord
		if err := json.Unmarshal([]byte(x), &g); err != nil {
			return fmt.Errorf("metadata %s = %q: %w", provenance.Goldfish, x, err)
		}
		if g.ExemptIDs == nil {
			g.ExemptIDs = []int32{} // as GoldfishOf writes it: never null in summary.json
		}
		s.Goldfish = GoldfishSummary{GoldfishRecord: g, Source: GoldfishFromCheckpoint}
	}
	return nil
}
