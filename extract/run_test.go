package extract

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/lossyutf8"
	"github.com/memo-research/memo/internal/provenance"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/train"
)

// TestRunOnATrainedRun builds a small real dataset, trains a few steps and
// attacks the checkpoint through Run, as `memo extract` does.
func TestRunOnATrainedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a dataset and trains a model")
	}
	start := time.Now()
	ctx := context.Background()
	dir, ds, tok := trainTiny(t, func(d *data.Config) {
		d.Targets, d.Controls, d.Validation, d.Background = 4, 4, 2, 8
		d.Repetitions, d.ChunkTokens, d.MinTokens = 2, 64, 40
	}, func(c *train.Config) {
		c.Steps, c.Block, c.BatchSize, c.WarmupSteps = 10, 64, 8, 2
	})
	t.Logf("data + training: %v", time.Since(start).Round(time.Millisecond))

	// The loss the run trained with (its config.toml's, which the caller
	// reads); completions written outside the run must still carry it.
	trained := &loss.Config{Strategy: loss.StrategyHashTable, K: 3, H: 7}
	cfg := DefaultConfig()
	cfg.Suffix, cfg.BatchSize, cfg.Reference, cfg.GradNorm = 16, 3, dir, true
	out := filepath.Join(t.TempDir(), "elsewhere.arrow")
	if err := Run(ctx, cfg, dir, ds, out, trained); err != nil {
		t.Fatal(err)
	}
	rows, err := eval.ReadCompletions(out)
	if err != nil {
		t.Fatal(err)
	}
	controls, err := ds.Docs("control")
	if err != nil {
		t.Fatal(err)
	}
	recallDoc := controls[0].ID
	splits := map[string]int{}
	for _, r := range rows {
		splits[r.Split]++
		if r.Status != StatusOK || len(r.Suffix) != 16 || len(r.Generated) != 16 || len(r.Prefix)+16 != min(r.NTokens, 256) {
			t.Errorf("doc %d: status %s, prefix %d, suffix %d, generated %d of %d tokens", r.DocID, r.Status, len(r.Prefix), len(r.Suffix), len(r.Generated), r.NTokens)
		}
		if r.GeneratedText != tok.DecodeText(r.Generated) || r.SuffixText != tok.DecodeText(r.Suffix) {
			t.Errorf("doc %d: texts are not the decoded ids", r.DocID)
		}
		if r.WindowText != tok.Decode(append(append([]int32(nil), r.Prefix...), r.Suffix...)) || !strings.HasPrefix(r.Text, r.WindowText) {
			t.Errorf("doc %d: window_text %q is not the decoded window (prefix + suffix in mode reference)", r.DocID, r.WindowText)
		}
		if len(r.TokenLosses) != min(r.NTokens, 256)-1 || math.IsNaN(r.Loss) || r.MinK < r.Loss {
			t.Errorf("doc %d: %d token losses, loss %v, mink %v", r.DocID, len(r.TokenLosses), r.Loss, r.MinK)
		}
		// Greedy decoding: the suffix is certain (log 1) exactly when the
		// greedy generation is it.
		if same := reflectEqual(r.Generated, r.Suffix); same && r.PExtract != 0 || !same && !math.IsInf(r.PExtract, -1) {
			t.Errorf("doc %d: p_extract %v with generation == suffix %v", r.DocID, r.PExtract, same)
		}
		if math.IsNaN(r.MinKPP) || math.IsInf(r.MinKPP, 0) || !(r.GradNorm > 0) {
			t.Errorf("doc %d: mink_pp %v, grad_norm %v: want numbers (grad_norm > 0)", r.DocID, r.MinKPP, r.GradNorm)
		}
		if prefixDoc := r.Split == "control" && r.DocID == recallDoc; prefixDoc != math.IsNaN(r.ReCaLL) || !prefixDoc && !(r.ReCaLL > 0) {
			t.Errorf("doc %d: recall %v (prefix from doc %d)", r.DocID, r.ReCaLL, recallDoc)
		}
		// The reference is the model itself: the same losses.
		if math.Abs(r.RefLoss-r.Loss) > 1e-5 {
			t.Errorf("doc %d: ref_loss %v, loss %v: the same model should agree", r.DocID, r.RefLoss, r.Loss)
		}
	}
	if splits["target"] != 4 || splits["control"] != 4 {
		t.Errorf("rows by split %v, want 4 targets and 4 controls", splits)
	}

	// eval scores them and records which model, trained how, and which
	// attack it scored: from the file, not from what it is given.
	sum, err := eval.Run(eval.DefaultConfig(), out, loss.Config{Strategy: loss.StrategyNone}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Members.N != 4 || sum.Controls.N != 4 || filepath.Base(sum.Checkpoint) != "step-000010" || !strings.Contains(string(sum.Extract), `"suffix":16`) {
		t.Errorf("summary: members %d controls %d checkpoint %q extract %s", sum.Members.N, sum.Controls.N, sum.Checkpoint, sum.Extract)
	}
	if sum.Extractable == nil || sum.Extractable.Members[0].Total != 4 || math.IsNaN(float64(sum.MIA.Stat("mink_pp").AUC)) ||
		math.IsNaN(float64(sum.MIA.Stat("recall").AUC)) || math.IsNaN(float64(sum.MIA.Stat("grad_norm").AUC)) {
		t.Errorf("summary: extractable %+v, AUC of mink_pp %v, recall %v, grad_norm %v", sum.Extractable, sum.MIA.Stat("mink_pp").AUC, sum.MIA.Stat("recall").AUC, sum.MIA.Stat("grad_norm").AUC)
	}
	wantGF := eval.GoldfishSummary{GoldfishRecord: provenance.GoldfishRecord{Enabled: true, Strategy: "hash-table", K: 3, H: 7, ExemptIDs: []int32{}}, Source: eval.GoldfishFromCheckpoint}
	if !reflect.DeepEqual(sum.Goldfish, wantGF) {
		t.Errorf("summary goldfish %+v, want the run's %+v", sum.Goldfish, wantGF)
	}
	if sum.Step == nil || *sum.Step != 10 || len(sum.ModelSHA256) != 64 || !strings.Contains(string(sum.Model), `"preset":"nano"`) || sum.Run == "" || sum.ModelParams <= 0 {
		t.Errorf("summary model identity: step %v sha256 %q model %s run %q params %d", sum.Step, sum.ModelSHA256, sum.Model, sum.Run, sum.ModelParams)
	}

	// Three guesses per prompt: guesses.arrow beside the completions, each
	// document's best ranked guess as its generated_ids, and eval's
	// any-of-N columns and curve from it.
	sampled := cfg
	sampled.Reference, sampled.Decoding, sampled.Samples = "", DecodeSample, 3
	gout := filepath.Join(t.TempDir(), "completions.arrow")
	if err := Run(ctx, sampled, dir, ds, gout, nil); err != nil {
		t.Fatal(err)
	}
	gs, err := runfiles.ReadGuesses(runfiles.GuessesPath(gout))
	if err != nil {
		t.Fatal(err)
	}
	comps, err := eval.ReadCompletions(gout)
	if err != nil {
		t.Fatal(err)
	}
	best := map[int64][]int32{}
	for _, c := range comps {
		best[c.DocID] = c.Generated
	}
	if len(gs) != 3*len(comps) {
		t.Fatalf("%d guesses for %d documents, want 3 each", len(gs), len(comps))
	}
	for i, g := range gs {
		if g.Rank != i%3 || len(g.Generated) != 16 || g.SeqLogProb >= 0 || g.GeneratedText != lossyutf8.String([]byte(tok.DecodeText(g.Generated))) {
			t.Errorf("guess %d: rank %d, %d tokens, log p %v", i, g.Rank, len(g.Generated), g.SeqLogProb)
		}
		if g.Rank == 0 && !slices.Equal(g.Generated, best[g.DocID]) {
			t.Errorf("doc %d: best guess %v, completions hold %v", g.DocID, g.Generated, best[g.DocID])
		}
		if g.Rank > 0 && g.SeqLogProb > gs[i-1].SeqLogProb {
			t.Errorf("doc %d: guesses not ranked by log p", g.DocID)
		}
	}
	gsum, err := eval.Run(eval.DefaultConfig(), gout, loss.Config{}, filepath.Dir(gout))
	if err != nil {
		t.Fatal(err)
	}
	if gsum.Guesses == nil || gsum.Guesses.Samples != 3 || gsum.Guesses.NGuesses != 12 {
		t.Errorf("summary guesses %+v, want 3 per document, 12 of members", gsum.Guesses)
	}
	// One guess again: the stale guesses go.
	sampled.Samples = 1
	if err := Run(ctx, sampled, dir, ds, gout, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(runfiles.GuessesPath(gout)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("samples = 1 left %s: %v", runfiles.GuessesPath(gout), err)
	}

	bad := cfg
	bad.Reference, bad.Suffix = "", 300
	if err := Run(ctx, bad, dir, ds, out, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("suffix 300 on a 256-token context: %v, want ErrConfig", err)
	}
	// A reference model that is not there is refused before the attack
	// (it is loaded after it): under a context already cancelled, which
	// the attack would report first.
	stopped, stop := context.WithCancel(ctx)
	stop()
	for _, ref := range []string{filepath.Join(t.TempDir(), "none"), "hf:" + dir} {
		bad = cfg
		bad.Reference = ref
		err := Run(stopped, bad, dir, ds, filepath.Join(t.TempDir(), "ref.arrow"), nil)
		if !badinput.Is(err) || !strings.Contains(err.Error(), "extract.reference = ") {
			t.Errorf("extract.reference = %q: %v, want bad input naming the key", ref, err)
		}
	}
	t.Logf("whole test: %v", time.Since(start).Round(time.Millisecond))
}

// trainTiny builds a small real dataset (a 300-token BPE, no dedup) with
// dmod applied into a new run directory and trains a nano model on it with
// the standard loss and tmod applied (no validation, one final
// checkpoint). It returns the run directory, its dataset and tokenizer.
func reflectEqual(a, b []int32) bool { return slices.Equal(a, b) }

func trainTiny(t *testing.T, dmod func(*data.Config), tmod func(*train.Config)) (string, *data.Dataset, *data.Tokenizer) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	dcfg := data.DefaultConfig()
	dcfg.Tokenizer, dcfg.DedupWords, dcfg.CacheDir = "bpe:300", 0, t.TempDir()
	dmod(&dcfg)
	if err := data.Build(ctx, dcfg, dir); err != nil {
		t.Fatal(err)
	}
	ds, err := data.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ds.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	tcfg := train.DefaultConfig()
	tcfg.EvalEvery, tcfg.CheckpointEvery = 0, 0
	tmod(&tcfg)
	mcfg := model.Config{Preset: "nano", Vocab: tok.VocabSize(), Seed: 1}
	if err := train.Run(ctx, tcfg, mcfg, loss.Config{Strategy: loss.StrategyNone}, ds, dir, train.Options{}); err != nil {
		t.Fatal(err)
	}
	return dir, ds, tok
}
