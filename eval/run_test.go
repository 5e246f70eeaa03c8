package eval

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/memo-research/memo/internal/arrowsafe"
	"github.com/memo-research/memo/internal/provenance"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/loss"
)

// testSchema is the part of completions.arrow (runfiles.CompletionsSchema)
// that eval cannot do without, plus title, status, repetitions and
// token_losses: a file without the other columns (written before they
// existed) still reads.
var testSchema = columnsOf(runfiles.CompletionsSchema, "doc_id", "split", "title", "status", "repetitions",
	"suffix_ids", "generated_ids", "suffix_text", "generated_text", "text", "loss", "mink", "ref_loss", "token_losses")

// testSchemaWithWindow is testSchema with window_text, which pairs a
// document's losses with a reference's over the same window.
var testSchemaWithWindow = columnsOf(runfiles.CompletionsSchema, "doc_id", "split", "title", "status", "repetitions",
	"suffix_ids", "generated_ids", "suffix_text", "generated_text", "text", "window_text", "loss", "mink", "ref_loss", "token_losses")

// columnsOf is the schema of the named columns of s, in that order.
func columnsOf(s *arrow.Schema, names ...string) *arrow.Schema {
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		idx := s.FieldIndices(n)
		if len(idx) != 1 {
			panic("no column " + n)
		}
		fields[i] = s.Field(idx[0])
	}
	return arrow.NewSchema(fields, nil)
}

func writeTestCompletions(t *testing.T, path string, cs []runfiles.Completion) {
	t.Helper()
	writeTestCompletionsMeta(t, path, cs, nil)
}

// writeTestCompletionsMeta writes cs with meta as the schema's metadata,
// in testSchema's columns only.
func writeTestCompletionsMeta(t testing.TB, path string, cs []runfiles.Completion, meta map[string]string) {
	t.Helper()
	schema := testSchema
	if meta != nil {
		md := arrow.MetadataFrom(meta)
		schema = arrow.NewSchema(testSchema.Fields(), &md)
	}
	if err := runfiles.WriteCompletionsAs(path, schema, cs); err != nil {
		t.Fatal(err)
	}
}

// crafted: three attacked members (one exact, one half right, one with a
// different ending), one member too short, and two controls; losses chosen
// so that members rank below controls except one tie.
func crafted() []runfiles.Completion {
	nan := math.NaN()
	return []runfiles.Completion{
		{DocID: 1, Split: "target", Status: "ok", Repetitions: 4, Suffix: []int32{1, 2, 3, 4}, Generated: []int32{1, 2, 3, 4},
			SuffixText: "the cat sat down", GeneratedText: "the cat sat down", Text: "aaaa the cat sat down", TokenLosses: []float32{0.1, 0.1, 0.1, 0.1, 0.1}, Loss: 0.1, RefLoss: nan},
		{DocID: 2, Split: "target", Status: "ok", Repetitions: 4, Suffix: []int32{1, 2, 3, 4}, Generated: []int32{1, 2, 9, 9},
			SuffixText: "the cat sat down", GeneratedText: "the cat ran away", Text: "bbbb the cat sat down", TokenLosses: []float32{0.5, 0.5}, RefLoss: nan},
		{DocID: 3, Split: "target", Status: "ok", Repetitions: 1, Suffix: []int32{5, 6}, Generated: []int32{7, 6},
			SuffixText: "Hello, world", GeneratedText: "hello!", Text: "cccc Hello, world", TokenLosses: []float32{2, 2}, RefLoss: nan},
		{DocID: 4, Split: "target", Title: "tiny doc", Status: "too_short", Repetitions: 1, Text: "dd", TokenLosses: []float32{0.2}, RefLoss: nan},
		{DocID: 5, Split: "control", Status: "ok", Suffix: []int32{1, 2}, Generated: []int32{3, 4},
			SuffixText: "x y", GeneratedText: "z w", Text: "eeee x y", TokenLosses: []float32{2, 2}, RefLoss: nan},
		{DocID: 6, Split: "control", Status: "ok", Suffix: []int32{1, 2}, Generated: []int32{1, 4},
			SuffixText: "x y", GeneratedText: "x w", Text: "ffff x y", TokenLosses: []float32{3, 3}, RefLoss: nan},
	}
}

func TestRunWritesScoresAndSummary(t *testing.T) {
	dir := t.TempDir()
	writeTestCompletions(t, filepath.Join(dir, "completions.arrow"), crafted())
	gf := loss.Config{Strategy: "hash-table", K: 4, H: 13}
	sum, err := Run(DefaultConfig(), dir, gf, dir)
	if err != nil {
		t.Fatal(err)
	}
	m := sum.Members
	if m.N != 3 || m.NNotAttacked != 1 || len(m.NotAttacked) != 1 {
		t.Errorf("members n %d, not attacked %d %v: want 3 and 1", m.N, m.NNotAttacked, m.NotAttacked)
	}
	// Exact: 1 of 3. Token accuracy: (1 + 0.5 + 0.5) / 3.
	if !near(float64(m.ExactMatch), 1.0/3) || !near(float64(m.TokenAccuracy), 2.0/3) {
		t.Errorf("members exact %v accuracy %v, want 1/3 and 2/3", m.ExactMatch, m.TokenAccuracy)
	}
	// RougeL: 1; "the cat sat down" vs "the cat ran away" = 0.5; "hello world" vs "hello" = 2·1·0.5/1.5.
	if want := (1 + 0.5 + 2.0/3) / 3; !near(float64(m.RougeL), want) {
		t.Errorf("members rougeL %v, want %v", m.RougeL, want)
	}
	if lo, hi := float64(m.ExactMatchCI[0]), float64(m.ExactMatchCI[1]); !(lo >= 0 && lo <= 1.0/3 && hi >= 1.0/3 && hi <= 1) {
		t.Errorf("exact match CI [%v, %v] should hold 1/3", lo, hi)
	}
	// Controls: token accuracy (0 + 0.5) / 2, no exact match.
	if c := sum.Controls; c.N != 2 || !near(float64(c.ExactMatch), 0) || !near(float64(c.TokenAccuracy), 0.25) {
		t.Errorf("controls %+v", c)
	}
	// Member losses 0.1, 0.5, 2, 0.2 against control losses 2, 3: member scores
	// (−loss) beat both controls except loss 2, which ties one and beats one:
	// (2 + 2 + 1.5 + 2) / 8.
	if !near(float64(sum.MIA.LossAUC), 7.5/8) {
		t.Errorf("loss AUC %v, want %v", sum.MIA.LossAUC, 7.5/8)
	}
	if !math.IsNaN(float64(sum.MIA.RefAUC)) {
		t.Errorf("ref AUC %v without a reference, want NaN (null)", sum.MIA.RefAUC)
	}
	if len(sum.ByRepetitions) != 2 || sum.ByRepetitions[1].Repetitions != 4 || !near(float64(sum.ByRepetitions[1].ExactMatch), 0.5) {
		t.Errorf("by repetitions %+v", sum.ByRepetitions)
	}

	// summary.json has the names the issue fixes.
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	js := map[string]map[string]any{}
	for _, sec := range []string{"members", "controls", "mia", "goldfish"} {
		var m map[string]any
		if err := json.Unmarshal(top[sec], &m); err != nil {
			t.Fatalf("summary.json %s: %v", sec, err)
		}
		js[sec] = m
	}
	for sec, keys := range map[string][]string{
		"members":  {"n", "exact_match", "exact_match_ci", "token_accuracy", "rougeL"},
		"controls": {"n", "exact_match", "exact_match_ci", "token_accuracy", "rougeL"},
		"mia":      {"loss_auc", "zlib_auc", "mink_auc"},
		"goldfish": {"strategy", "k", "h"},
	} {
		for _, k := range keys {
			if _, ok := js[sec][k]; !ok {
				t.Errorf("summary.json: %s.%s missing", sec, k)
			}
		}
	}
	if js["goldfish"]["k"] != 4.0 || js["mia"]["ref_auc"] != nil {
		t.Errorf("goldfish %v, mia.ref_auc %v", js["goldfish"], js["mia"]["ref_auc"])
	}
	// Two controls: the smallest false positive rate they show is 1/2.
	if r := js["mia"]["fpr_resolution"]; r != 0.5 {
		t.Errorf("mia.fpr_resolution %v with 2 controls, want 0.5", r)
	}

	// scores.parquet: one row per document, readable by a Parquet reader.
	tbl, err := arrowsafe.ReadParquetFile(filepath.Join(dir, "scores.parquet"), 64)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	if tbl.NumRows() != 6 || tbl.NumCols() != int64(Scores().Schema().NumFields()) {
		t.Fatalf("scores.parquet has %d rows × %d columns, want 6 × %d", tbl.NumRows(), tbl.NumCols(), Scores().Schema().NumFields())
	}
	fd := tbl.Column(Scores().Schema().FieldIndices("first_divergence")[0]).Data().Chunk(0).(*array.Int32)
	if got := fd.Int32Values(); got[0] != 4 || got[1] != 2 || got[2] != 0 || got[3] != -1 {
		t.Errorf("first_divergence %v, want 4 2 0 -1 ...", got)
	}
	// Same inputs, same summary: the bootstrap is seeded.
	again, err := Run(DefaultConfig(), dir, gf, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if again.Members.ExactMatchCI != sum.Members.ExactMatchCI {
		t.Errorf("CI changed between runs: %v vs %v", again.Members.ExactMatchCI, sum.Members.ExactMatchCI)
	}

	// The completions' path is absolute, as the checkpoint's and run's
	// are, however eval was given it.
	t.Chdir(dir)
	rel, err := Run(DefaultConfig(), "completions.arrow", gf, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "completions.arrow"); rel.Completions != want || sum.Completions != want {
		t.Errorf("completions %q (given a relative path), %q (a directory); want %q", rel.Completions, sum.Completions, want)
	}
}

func TestRunReferenceAndErrors(t *testing.T) {
	dir, refDir := t.TempDir(), t.TempDir()
	cs := crafted()
	writeTestCompletions(t, filepath.Join(dir, "completions.arrow"), cs)
	// The reference model finds every document as hard as the target model
	// does, except the members, which it finds harder: ref_diff separates.
	ref := crafted()
	for i := range ref {
		if ref[i].Split == "target" {
			ref[i].TokenLosses = []float32{9}
		}
	}
	writeTestCompletions(t, filepath.Join(refDir, "completions.arrow"), ref)
	cfg := DefaultConfig()
	cfg.Reference = refDir
	sum, err := Run(cfg, filepath.Join(dir, "completions.arrow"), loss.Config{Strategy: "none"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !near(float64(sum.MIA.RefAUC), 1) || !near(float64(sum.MIA.RefTPR), 1) {
		t.Errorf("ref AUC %v, TPR %v: want 1 and 1", sum.MIA.RefAUC, sum.MIA.RefTPR)
	}
	// With windows recorded, the losses pair by window: a reference
	// attacked over other windows of the same documents has no mean over
	// the tokens the target's covers.
	for _, tc := range []struct {
		name    string
		refWin  func(text string) string
		wantNaN bool
	}{
		{"same windows", func(text string) string { return text }, false},
		{"other windows", func(text string) string { return text[1:] }, true},
	} {
		withWin, refWin := crafted(), append([]runfiles.Completion(nil), ref...)
		for i := range withWin {
			withWin[i].WindowText, refWin[i].WindowText = withWin[i].Text, tc.refWin(refWin[i].Text)
		}
		wdir, wref := t.TempDir(), t.TempDir()
		for path, cs := range map[string][]runfiles.Completion{filepath.Join(wdir, "completions.arrow"): withWin, filepath.Join(wref, "completions.arrow"): refWin} {
			if err := runfiles.WriteCompletionsAs(path, testSchemaWithWindow, cs); err != nil {
				t.Fatal(err)
			}
		}
		wcfg := DefaultConfig()
		wcfg.Reference = wref
		got, err := Run(wcfg, wdir, loss.Config{Strategy: "none"}, wdir)
		if err != nil {
			t.Fatal(err)
		}
		if auc := float64(got.MIA.RefAUC); math.IsNaN(auc) != tc.wantNaN || !tc.wantNaN && !near(auc, 1) {
			t.Errorf("%s: ref AUC %v, want NaN %v (else 1)", tc.name, auc, tc.wantNaN)
		}
	}
	if _, err := Run(DefaultConfig(), filepath.Join(dir, "missing.arrow"), loss.Config{}, dir); err == nil {
		t.Error("a missing completions file should fail")
	}
	bad := filepath.Join(dir, "bad.arrow")
	os.WriteFile(bad, []byte("not arrow"), 0o644)
	if _, err := Run(DefaultConfig(), bad, loss.Config{}, dir); err == nil {
		t.Error("a corrupt completions file should fail")
	}
	cfg.MinKFraction = 2
	if _, err := Run(cfg, dir, loss.Config{}, dir); err == nil {
		t.Error("a bad config should fail")
	}
}

// TestGoldfishFromCompletionsMetadata: the goldfish settings in
// summary.json are the attacked checkpoint's, as extract recorded them in
// completions.arrow, not the ones eval is given (those of whatever
// config.toml sits beside the file); the given ones fill in only when the
// file records none.
func TestGoldfishFromCompletionsMetadata(t *testing.T) {
	given := loss.Config{Strategy: "none"}
	recorded := map[string]string{
		provenance.Goldfish:    `{"enabled":true,"strategy":"hash-table","k":3,"h":7,"start":0,"seed":5,"exempt_ids":[2,5]}`,
		provenance.Checkpoint:  "/runs/k3/checkpoints/step-000040",
		provenance.Run:         "/runs/k3",
		provenance.Step:        "40",
		provenance.ModelSHA256: "abc123",
		provenance.Model:       `{"preset":"nano","vocab":300}`,
		provenance.Extract:     `{"mode":"fixed","suffix":16}`,
		provenance.Params:      "123456",
	}
	for _, tc := range []struct {
		name    string
		meta    map[string]string
		want    GoldfishSummary
		step    int // -1: none recorded
		wantErr string
	}{
		{"recorded", recorded, GoldfishSummary{provenance.GoldfishRecord{Enabled: true, Strategy: "hash-table", K: 3, H: 7, Seed: 5, ExemptIDs: []int32{2, 5}}, GoldfishFromCheckpoint}, 40, ""},
		{"older file", nil, GoldfishSummary{provenance.GoldfishRecord{Strategy: "none", ExemptIDs: []int32{}}, GoldfishGiven}, -1, ""},
		{"bare checkpoint", map[string]string{provenance.Checkpoint: "/ckpt"}, GoldfishSummary{provenance.GoldfishRecord{Strategy: "none", ExemptIDs: []int32{}}, GoldfishGiven}, -1, ""},
		{"corrupt", map[string]string{provenance.Goldfish: "{k:"}, GoldfishSummary{}, -1, "memo.goldfish"},
		{"bad step", map[string]string{provenance.Step: "x"}, GoldfishSummary{}, -1, "memo.step"},
		{"bad params", map[string]string{provenance.Params: "-3"}, GoldfishSummary{}, -1, "memo.params"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "elsewhere.arrow")
			writeTestCompletionsMeta(t, path, crafted(), tc.meta)
			sum, err := Run(DefaultConfig(), path, given, dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(sum.Goldfish, tc.want) {
				t.Errorf("goldfish %+v, want %+v", sum.Goldfish, tc.want)
			}
			if tc.step < 0 {
				if sum.Step != nil {
					t.Errorf("step %d, want none", *sum.Step)
				}
				return
			}
			if sum.Step == nil || *sum.Step != tc.step || sum.Run != "/runs/k3" || sum.ModelSHA256 != "abc123" || sum.ModelParams != 123456 ||
				string(sum.Model) != recorded[provenance.Model] || string(sum.Extract) != recorded[provenance.Extract] {
				t.Errorf("provenance: step %v run %q sha %q model %s extract %s", sum.Step, sum.Run, sum.ModelSHA256, sum.Model, sum.Extract)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			var js struct {
				Goldfish map[string]any `json:"goldfish"`
				Model    map[string]any `json:"model"`
			}
			if err := json.Unmarshal(raw, &js); err != nil {
				t.Fatal(err)
			}
			if js.Goldfish["strategy"] != "hash-table" || js.Goldfish["k"] != 3.0 || js.Goldfish["h"] != 7.0 || js.Model["preset"] != "nano" {
				t.Errorf("summary.json goldfish %v model %v", js.Goldfish, js.Model)
			}
		})
	}
}

// TestZlibOverTheScoredWindow: the zlib ratio divides the window's loss
// by the compressed length of the window's text, not of the whole document.
func TestZlibOverTheScoredWindow(t *testing.T) {
	window := "the window the losses cover"
	doc := window + strings.Repeat(" and a long tail the model never saw, varied 1234567890", 40)
	for _, tc := range []struct {
		name       string
		windowText string
		want       string
	}{
		{"window recorded", window, window},
		{"older file without window_text", "", doc},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := runfiles.Completion{Split: "target", Status: StatusOK, Text: doc, WindowText: tc.windowText, TokenLosses: []float32{2, 4}, RefLoss: math.NaN()}
			s := ScoreCompletion(c, 0.2, math.NaN())
			if s.ZlibLen != ZlibLen(tc.want) || !near(s.ZlibRatio, 3/float64(ZlibLen(tc.want))) {
				t.Errorf("zlib length %d ratio %v, want %d and %v", s.ZlibLen, s.ZlibRatio, ZlibLen(tc.want), 3/float64(ZlibLen(tc.want)))
			}
		})
	}
	if ZlibLen(window) >= ZlibLen(doc) {
		t.Fatal("test texts do not separate the two spans")
	}
}

func TestOutputPaths(t *testing.T) {
	for _, tc := range []struct{ in, scores, summary string }{
		{"run/completions.arrow", "run/scores.parquet", "run/summary.json"},
		{"run/checkpoints/step-000020.fixed-p8-s8.greedy.0a1b2c3d.completions.arrow",
			"run/checkpoints/step-000020.fixed-p8-s8.greedy.0a1b2c3d.scores.parquet",
			"run/checkpoints/step-000020.fixed-p8-s8.greedy.0a1b2c3d.summary.json"},
		{"out/attack.arrow", "out/attack.scores.parquet", "out/attack.summary.json"},
		{"attack", "attack.scores.parquet", "attack.summary.json"},
	} {
		if sc, su := OutputPaths(tc.in); sc != tc.scores || su != tc.summary {
			t.Errorf("OutputPaths(%q) = %q, %q; want %q, %q", tc.in, sc, su, tc.scores, tc.summary)
		}
	}
}

// A summary.json from before the per-statistic MIA fields reads them as
// undefined, not as 0, and keeps its AUC.
func TestReadSummaryOfAnOlderSummary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "summary.json")
	old := `{"n_documents": 4, "members": {"n": 2, "exact_match": 0.5}, "by_repetitions": [{"repetitions": 3, "n": 1, "exact_match": 1}], "mia": {"n_members": 2, "n_controls": 2, "loss_auc": 0.75, "zlib_auc": null, "fpr": 0.01, "loss_tpr": 0.5}}`
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSummary(path)
	if err != nil {
		t.Fatal(err)
	}
	ls := s.MIA.Stat("loss")
	if ls.AUC != 0.75 || !math.IsNaN(float64(ls.TPR1)) || !math.IsNaN(float64(ls.AUCCI[0])) || !math.IsNaN(float64(s.MIA.Stat("zlib").AUC)) ||
		!math.IsNaN(float64(s.MIA.Stat("recall").AUC)) {
		t.Errorf("older summary read as %+v", s.MIA)
	}
	if s.Members.ExactMatch != 0.5 || s.Members.N != 2 {
		t.Errorf("members %+v", s.Members)
	}
	// A number the file predates is undefined too: its interval once read
	// as [0, 0] and the report printed that.
	for name, sp := range map[string]SplitSummary{"members": s.Members, "controls": s.Controls} {
		if ci := sp.ExactMatchWilsonCI; !math.IsNaN(float64(ci[0])) || !math.IsNaN(float64(ci[1])) || !math.IsNaN(float64(sp.RougeL)) {
			t.Errorf("%s: missing numbers read as %+v, want NaN", name, sp)
		}
	}
	if len(s.ByRepetitions) != 1 {
		t.Fatalf("by_repetitions = %+v", s.ByRepetitions)
	}
	if r := s.ByRepetitions[0]; r.Repetitions != 3 || r.N != 1 || r.ExactMatch != 1 || !math.IsNaN(float64(r.ExactMatchWilsonCI[0])) {
		t.Errorf("by_repetitions[0] read as %+v", r)
	}
}

// A JSON file that holds no summary is refused, naming what it lacks,
// rather than read as a run of zeros.
func TestReadSummaryRefusesOtherJSON(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"empty object", `{}`, `no "n_documents"`},
		{"another tool's", `{"n_documents": 3, "accuracy": 0.5}`, `no "members"`},
		{"no mia", `{"n_documents": 3, "members": {"n": 1}}`, `no "mia"`},
		{"an array", `[1, 2]`, "not a summary memo eval wrote: the file holds a JSON array"},
		{"a number for a table", `{"n_documents": 3, "members": {"n": 1}, "mia": 5}`, "not a summary memo eval wrote: mia holds a JSON number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "summary.json")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := ReadSummary(path); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadSummary(%s) = %v, want an error with %q", tc.text, err, tc.want)
			}
		})
	}
}
