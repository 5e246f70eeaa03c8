package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"

	"github.com/memo-research/memo/loss"
)

// Run scores completions (a completions.arrow file, or a run directory
// holding one) and writes outDir/scores.parquet and outDir/summary.json,
// each atomically. goldfish is recorded in the summary.
func Run(cfg Config, completions string, goldfish loss.Config, outDir string) (*Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	path := completionsPath(completions)
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
			if r, ok = ref[c.Text]; !ok {
				r, unmatched = math.NaN(), unmatched+1
			}
		}
		rows[i] = ScoreCompletion(c, cfg.MinKFraction, r)
	}
	if unmatched > 0 {
		slog.Warn("eval: documents missing from the reference completions; their ref_diff is NaN",
			"reference", cfg.Reference, "missing", unmatched, "of", len(comps))
	}
	sum := Summarize(rows, cfg, goldfish)
	sum.Completions = path
	sum.Checkpoint = meta["memo.checkpoint"]
	if x := meta["memo.extract"]; json.Valid([]byte(x)) {
		sum.Extract = json.RawMessage(x)
	}
	for _, sp := range []SplitSummary{sum.Members, sum.Controls} {
		for _, name := range sp.NotAttacked {
			slog.Warn("eval: document not attacked, left out of the extraction rates", "doc", name)
		}
	}
	if err := writeAtomic(filepath.Join(outDir, "scores.parquet"), func(w io.Writer) error { return writeScores(w, rows) }); err != nil {
		return nil, err
	}
	err = writeAtomic(filepath.Join(outDir, "summary.json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	})
	if err != nil {
		return nil, err
	}
	slog.Info("eval: scored", "documents", len(rows), "members", sum.Members.N, "exact_match", float64(sum.Members.ExactMatch),
		"rougeL", float64(sum.Members.RougeL), "loss_auc", float64(sum.MIA.LossAUC), "out", outDir)
	return sum, nil
}

// referenceLosses reads a reference model's completions (a file or a run
// directory) into mean loss by document text; nil when none is configured.
func referenceLosses(ref string) (map[string]float64, error) {
	if ref == "" {
		return nil, nil
	}
	comps, err := ReadCompletions(completionsPath(ref))
	if err != nil {
		return nil, fmt.Errorf("eval.reference = %q: %w", ref, err)
	}
	out := make(map[string]float64, len(comps))
	for _, c := range comps {
		l := c.Loss
		if len(c.TokenLosses) > 0 {
			l = MeanLoss(c.TokenLosses)
		}
		out[c.Text] = l
	}
	return out, nil
}
