// Package registrytest proves the rule of eval's statistic registry: a
// membership statistic registered in one file, and nowhere else, is a
// scores.parquet column, a summary.json mia.<name> entry and a curve of
// the ROC figure. It is a package of its own so that
// the statistic it registers stays out of every other test (eval's golden
// scores.parquet among them).
package registrytest

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/plots"
)

// The whole of a new statistic: its descriptor and its computation.
const (
	testName  = "test_repetitions"
	testLabel = "repetitions (test statistic)"
)

func init() {
	eval.RegisterMIAStatistic(eval.MIAStatistic{
		Name: testName, Label: testLabel, HigherMember: true, Needs: eval.NeedTokenLosses, Order: 1000,
		PerDoc: func(c *runfiles.Completion, _ *eval.Score, _ eval.DocInput) float64 { return float64(c.Repetitions) },
	})
}

func TestRegisteredStatisticReachesEveryOutput(t *testing.T) {
	dir := t.TempDir()
	var comps []runfiles.Completion
	for i := 0; i < 8; i++ {
		c := runfiles.Completion{DocID: int64(i), Split: "target", Status: "ok", Repetitions: 1 + i%3,
			Suffix: []int32{1, 2}, Generated: []int32{1, 3}, SuffixText: "a b", GeneratedText: "a c",
			Text: strings.Repeat("x", 10+i) + " a b", TokenLosses: []float32{1, 2, float32(i)}, RefLoss: math.NaN()}
		if i >= 4 {
			c.Split, c.Repetitions = "control", 0
		}
		comps = append(comps, c)
	}
	if err := runfiles.WriteCompletions(filepath.Join(dir, "completions.arrow"), comps, nil); err != nil {
		t.Fatal(err)
	}
	sum, err := eval.Run(eval.DefaultConfig(), dir, loss.Config{Strategy: loss.StrategyNone}, dir)
	if err != nil {
		t.Fatal(err)
	}

	// scores.parquet: a column after the registry's others, before the
	// guess columns, holding the value PerDoc computed.
	schema := eval.Scores().Schema()
	if i, j := schema.FieldIndices(testName), schema.FieldIndices("any_exact_match"); len(i) != 1 || i[0] != j[0]-1 {
		t.Errorf("column %s at %v, any_exact_match at %v: want just before it", testName, i, j)
	}
	rows, err := eval.ReadScores(filepath.Join(dir, "scores.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if got := r.Stats[testName]; got != float64(r.Repetitions) {
			t.Errorf("doc %d: %s = %v, want %d", r.DocID, testName, got, r.Repetitions)
		}
	}

	// summary.json: mia.<name>, last of the statistics, read back by
	// ReadSummary; members are separated perfectly.
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		MIA map[string]json.RawMessage `json:"mia"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw.MIA[testName]; !ok {
		t.Errorf("summary.json has no mia.%s", testName)
	}
	if i, j := strings.Index(string(b), `"`+testName+`"`), strings.Index(string(b), `"counterfactual_mem"`); !(i > j && j > 0) {
		t.Errorf("mia.%s at byte %d, counterfactual_mem at %d: want it after the registry's others", testName, i, j)
	}
	back, err := eval.ReadSummary(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := back.MIA.Stat(testName); got.AUC != 1 || sum.MIA.Stat(testName).AUC != 1 {
		t.Errorf("AUC %v read back, %v returned; want 1", got.AUC, sum.MIA.Stat(testName).AUC)
	}

	// The ROC figure draws it, labelled.
	cfg := plots.DefaultConfig()
	cfg.Formats = []string{"svg"}
	if err := plots.Run(dir, cfg, func(string) (*plots.RunSpec, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "figures", "mia-roc.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(svg), testLabel) {
		t.Errorf("mia-roc.svg has no curve labelled %q", testLabel)
	}
}
