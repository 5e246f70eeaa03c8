package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/eval/blind"
	"github.com/memo-research/memo/internal/runfiles"
)

// auditSet writes the tiny run's attacked windows as a WikiMIA-style
// labelled set: targets members, controls non-members. The attack window
// of these 64-token documents is the whole document, so the audit scores
// the same tokens the attack did.
func auditSet(t *testing.T, run, path string) []runfiles.Completion {
	t.Helper()
	comps, _, err := runfiles.ReadCompletions(filepath.Join(run, "completions.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range comps {
		label := map[string]int{"target": 1, "control": 0}[c.Split]
		line, _ := json.Marshal(map[string]any{"input": c.WindowText, "label": label})
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return comps
}

// TestAuditMatchesAttack: memo audit of a memo-trained model on its own
// members and held-out non-members gives, text for text, the values the
// run's attack wrote to scores.parquet for every statistic both take;
// scored again in windows of a stride far below the context, the total
// NLL is the one pass's.
func TestAuditMatchesAttack(t *testing.T) {
	dir := trainedRun(t)
	exe := buildMemo(t)
	run := filepath.Join(dir, "runs", "tiny")
	set := filepath.Join(dir, "set.jsonl")
	comps := auditSet(t, run, set)
	attack, err := eval.ReadScores(filepath.Join(run, "scores.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	byDoc := map[int64]eval.Score{}
	for _, s := range attack {
		byDoc[s.DocID] = s
	}
	memo := memoIn(t, exe, dir)
	r := memo("audit", "--model", run, "--data", set, "--out", "audit", "--bootstrap", "100", "--threads", "1")
	if r.code != 0 {
		t.Fatalf("audit: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "blind baseline") || !strings.Contains(r.stderr, "audit: scoring windows") {
		t.Errorf("report or progress missing:\nstdout %s\nstderr %s", r.stdout, r.stderr)
	}
	rows, err := eval.AuditScores().ReadParquet(filepath.Join(dir, "audit", "scores.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(comps) {
		t.Fatalf("%d rows for %d texts", len(rows), len(comps))
	}
	same := func(a, b float64) bool {
		return math.Abs(a-b) <= 1e-5*math.Max(1, math.Abs(b)) || math.IsNaN(a) && math.IsNaN(b)
	}
	for i, c := range comps {
		got, want := rows[i], byDoc[c.DocID]
		if got.NScored != len(c.TokenLosses) || got.NWindows != 1 {
			t.Errorf("doc %d: %d tokens scored in %d windows, the attack %d in one", c.DocID, got.NScored, got.NWindows, len(c.TokenLosses))
			continue
		}
		for _, x := range eval.AuditStatistics() {
			if x.AuditOnly {
				continue
			}
			if g, w := x.Value(&got.Score), x.Value(&want); !same(g, w) {
				t.Errorf("doc %d: %s = %v, the attack's %v", c.DocID, x.Name, g, w)
			}
		}
	}
	var sum AuditSummary
	b, err := os.ReadFile(filepath.Join(dir, "audit", "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.NMembers != 4 || sum.NNonmembers != 4 || len(sum.MIA) == 0 || sum.Interpretation == "" {
		t.Errorf("summary: %s", b)
	}
	for _, f := range []string{"report.md", "figures/audit-roc.svg"} {
		if _, err := os.Stat(filepath.Join(dir, "audit", f)); err != nil {
			t.Error(err)
		}
	}
	if r := memo("audit", "--model", run, "--data", set, "--out", "audit"); r.code != 2 || !strings.Contains(r.stderr, "exists") {
		t.Errorf("a second audit into audit/: exit %d, %s; want 2 and a refusal", r.code, r.stderr)
	}

	// Windows of 16 tokens every 5: each token scored once.
	r = memo("audit", "--model", run, "--data", set, "--out", "strided", "--window", "16", "--stride", "5", "--bootstrap", "0", "--threads", "1")
	if r.code != 0 {
		t.Fatalf("strided audit: exit %d\n%s", r.code, r.stderr)
	}
	strided, err := eval.AuditScores().ReadParquet(filepath.Join(dir, "strided", "scores.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range strided {
		if strided[i].NScored != rows[i].NScored || strided[i].NWindows < 2 {
			t.Errorf("text %d: %d tokens scored in %d windows, %d in one pass", i, strided[i].NScored, strided[i].NWindows, rows[i].NScored)
		}
	}
}

// TestAuditBadInput: each fault is one memo: line and exit 2, before
// anything is scored or written.
func TestAuditBadInput(t *testing.T) {
	dir := trainedRun(t)
	exe := buildMemo(t)
	run := filepath.Join(dir, "runs", "tiny")
	good := filepath.Join(dir, "set.jsonl")
	auditSet(t, run, good)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	otherTok, err := filepath.Abs(filepath.Join("..", "..", "data", "testdata", "legacy-bpe2048.tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	memo := memoIn(t, exe, dir)
	for i, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing label field", []string{"--data", write("a.jsonl", `{"input":"some text"}`)}, `no label field "label"`},
		{"one class", []string{"--data", write("b.jsonl", `{"input":"x y","label":1}`+"\n"+`{"input":"y z","label":1}`)}, "needs both classes"},
		{"labels not membership values", []string{"--data", write("c.jsonl", `{"input":"x y","label":"yes"}`)}, "not a member/non-member value"},
		{"empty text", []string{"--data", write("d.jsonl", `{"input":"","label":1}`+"\n"+`{"input":"y z","label":0}`)}, "empty text"},
		{"tokenizer of another model", []string{"--data", good, "--tokenizer", otherTok}, "a tokenizer of another model"},
		{"stride at the window", []string{"--data", good, "--window", "16", "--stride", "16"}, "--stride 16"},
		{"window past the context", []string{"--data", good, "--window", "100000"}, "--window 100000"},
		{"no data", nil, "give --data FILE"},
		// The flags, not the spec keys extract.device and .precision
		// they fill, and before any text is read or tokenized.
		{"a device that is none", []string{"--data", good, "--device", "cuda:x"}, `--device "cuda:x": want`},
		{"a precision that is none", []string{"--data", good, "--precision", "fp8"}, `--precision: precision "fp8"`},
	} {
		out := fmt.Sprintf("out%d", i)
		r := memo(append([]string{"audit", "--model", run, "--out", out}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		last := lines[len(lines)-1]
		if r.code != 2 || !strings.HasPrefix(last, "memo: ") || !strings.Contains(last, tc.want) || strings.Contains(r.stderr, "goroutine") {
			t.Errorf("%s: exit %d, stderr %q; want 2 and one memo: line with %q", tc.name, r.code, r.stderr, tc.want)
		}
		if strings.Contains(r.stderr, "extract.") {
			t.Errorf("%s: stderr %q names a spec key; audit has only flags", tc.name, r.stderr)
		}
		if strings.Contains(r.stderr, "scoring windows") {
			t.Errorf("%s: scoring began before the refusal", tc.name)
		}
		if _, err := os.Stat(filepath.Join(dir, out)); err == nil {
			t.Errorf("%s: wrote %s", tc.name, out)
		}
	}
}

// TestAuditVerdict: the report's sentence on the blind baseline for an AUC
// above, around and far below 0.5, and without bootstrap intervals (a
// probe read "AUC 1.000 [NaN, NaN]", and "the texts alone do not give the
// labels away" for a blind AUC of 0).
func TestAuditVerdict(t *testing.T) {
	nan := eval.Num(math.NaN())
	for _, tc := range []struct {
		b         eval.AuditStat
		want, not string
	}{
		{eval.AuditStat{MIAStat: eval.MIAStat{AUC: 0.9, AUCCI: [2]eval.Num{0.85, 0.95}}}, "separable without the model", "backwards"},
		{eval.AuditStat{MIAStat: eval.MIAStat{AUC: 0.52, AUCCI: [2]eval.Num{0.45, 0.6}}}, "do not give the labels away", "separable"},
		{eval.AuditStat{MIAStat: eval.MIAStat{AUC: 0, AUCCI: [2]eval.Num{0, 0}}}, "ranks members and non-members backwards", "do not give"},
		{eval.AuditStat{MIAStat: eval.MIAStat{AUC: 1, AUCCI: [2]eval.Num{nan, nan}}}, "AUC 1.000 (no interval: --bootstrap 0)", "NaN"},
	} {
		got := auditVerdict(tc.b, blind.Result{AuditStat: tc.b}.Separable())
		if !strings.Contains(got, tc.want) || strings.Contains(got, tc.not) {
			t.Errorf("AUC %v: %q; want it to say %q and not %q", tc.b.AUC, got, tc.want, tc.not)
		}
	}
}
