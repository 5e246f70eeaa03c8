package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/data/labelled"
	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/eval/blind"
	"github.com/memo-research/memo/internal/filehash"
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
	if sum.NMembers != 4 || sum.NNonmembers != 4 || len(sum.MIA) == 0 || sum.Interpretation == "" || sum.Duplicates != 0 {
		t.Errorf("summary: %s", b)
	}
	// What changes the numbers is recorded beside them.
	setHash, err := filehash.SHA256(set)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.DataSHA256) != 1 || sum.DataSHA256[0] != setHash || sum.Device != "cpu" || sum.Precision != "fp32" || sum.Tokenizer != "the model's own" || sum.Memo == "" {
		t.Errorf("summary's settings: data_sha256 %v (want %s), device %q, precision %q, tokenizer %q, memo %q", sum.DataSHA256, setHash, sum.Device, sum.Precision, sum.Tokenizer, sum.Memo)
	}
	// The weights scored are named by their digest: the checkpoint's
	// model.safetensors.
	if w, err := filehash.SHA256(filepath.Join(sum.Checkpoint, "model.safetensors")); err != nil || sum.WeightsSHA != w || sum.BaseSHA != "" {
		t.Errorf("summary's weights_sha256 %q (base %q), want the checkpoint's model.safetensors's %q (%v)", sum.WeightsSHA, sum.BaseSHA, w, err)
	}
	// The fields the texts were read from, detected here, are recorded.
	if sum.TextField != "input" || sum.LabelField != "label" {
		t.Errorf("summary's text_field %q, label_field %q; want the detected input and label", sum.TextField, sum.LabelField)
	}
	// --batch-size 0 is sized from free memory: the size it took is
	// recorded, as are the threads (--threads 1).
	if sum.BatchSize < 1 || sum.Threads != 1 {
		t.Errorf("summary's batch_size %d, threads %d; want the resolved batch (>= 1) and 1", sum.BatchSize, sum.Threads)
	}
	// The model's own tokenizer is the run's data/tokenizer.json.
	if tokHash, err := filehash.SHA256(filepath.Join(run, "data", "tokenizer.json")); err != nil || sum.TokenizerSHA != tokHash {
		t.Errorf("summary's tokenizer_sha256 %q, want the run's tokenizer.json's %q (%v)", sum.TokenizerSHA, tokHash, err)
	}
	// The blind baseline's permutation test: 200 shuffles, p in
	// [1/201, 1], and the verdict the p and the AUC give.
	p := float64(sum.Blind.P)
	if sum.Blind.Permutations != 200 || !(p >= 1.0/201 && p <= 1) ||
		sum.Blind.Verdict != (blind.Result{AuditStat: sum.Blind.AuditStat, P: p}).Verdict() {
		t.Errorf("blind: permutations %d, p %v, verdict %q", sum.Blind.Permutations, p, sum.Blind.Verdict)
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
		{"one class", []string{"--data", write("b.jsonl", `{"input":"x y","label":1}`+"\n"+`{"input":"y z","label":1}`)}, "2 members and 0 non-members: an audit needs at least 2 of each"},
		{"one non-member", []string{"--data", write("b1.jsonl", `{"input":"x y","label":1}`+"\n"+`{"input":"y z","label":1}`+"\n"+`{"input":"z w","label":0}`)}, "has 2 members and 1 non-member: an audit needs at least 2 of each"},
		{"a text under both labels", []string{"--data", write("b2.jsonl", `{"input":"x y","label":1}`+"\n"+`{"input":"x  y","label":0}`)}, "b2.jsonl:1 (member) and " + filepath.Join(dir, "b2.jsonl") + ":2 (non-member): the same text labelled member and non-member"},
		{"blind permutations too few", []string{"--data", good, "--blind-permutations", "5"}, "--blind-permutations 5: must be 0 or at least 20"},
		{"blind permutations that cannot reach p < 0.05", []string{"--data", good, "--blind-permutations", "19"}, "--blind-permutations 19: must be 0 or at least 20"},
		{"labels not membership values", []string{"--data", write("c.jsonl", `{"input":"x y","label":"yes"}`)}, "not a member/non-member value"},
		{"empty text", []string{"--data", write("d.jsonl", `{"input":"","label":1}`+"\n"+`{"input":"y z","label":0}`)}, "empty text"},
		{"tokenizer of another model", []string{"--data", good, "--tokenizer", otherTok}, "the model has a tokenizer of its own (beside --model " + run + "), and this is another"},
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
	// An audit killed outright while writing leaves its hidden temporary
	// directory; the next audit into that --out names it.
	left := filepath.Join(dir, ".killed.tmp-12345")
	if err := os.MkdirAll(left, 0o755); err != nil {
		t.Fatal(err)
	}
	r := memo("audit", "--model", run, "--out", "killed", "--data", write("e.jsonl", `{"input":"","label":1}`))
	if r.code != 2 || !strings.Contains(r.stderr, "was killed while writing") || !strings.Contains(r.stderr, "path=.killed.tmp-12345") {
		t.Errorf("a killed audit's directory beside --out: exit %d, stderr %q; want a warning naming %s", r.code, r.stderr, left)
	}
	if _, err := os.Stat(left); err != nil {
		t.Errorf("the leftover was removed: %v", err)
	}
}

// TestAuditVerdict: the report's sentence on the blind baseline for each
// verdict, and without bootstrap intervals or a permutation test (a probe
// read "AUC 1.000 [NaN, NaN]", and "the texts alone do not give the
// labels away" for a blind AUC of 0).
func TestAuditVerdict(t *testing.T) {
	nan := eval.Num(math.NaN())
	stat := func(auc, lo, hi eval.Num) eval.AuditStat {
		return eval.AuditStat{MIAStat: eval.MIAStat{AUC: auc, AUCCI: [2]eval.Num{lo, hi}}}
	}
	for _, tc := range []struct {
		b         eval.AuditStat
		p         float64
		want, not string
	}{
		{stat(0.9, 0.85, 0.95), 0.005, "separable without the model", "backwards"},
		{stat(0.9, 0.85, 0.95), 0.005, "permutation p = 0.005 of 200", "NaN"},
		{stat(0.75, 0.5, 0.95), 0.2, "not distinguishable from chance", "separable"},
		{stat(0.56, 0.53, 0.59), 0.01, "differ a little", "separable"},
		{stat(0.52, 0.45, 0.6), 0.4, "found no shift between the classes. That is not proof", "separable"},
		{stat(0, 0, 0), 1, "ranks members and non-members backwards", "found no shift"},
		{stat(1, nan, nan), math.NaN(), "AUC 1.000 (no interval: --bootstrap 0), no permutation test", "NaN"},
	} {
		got := auditVerdict(blind.Result{AuditStat: tc.b, P: tc.p, Permutations: 200})
		if !strings.Contains(got, tc.want) || strings.Contains(got, tc.not) {
			t.Errorf("AUC %v, p %v: %q; want it to say %q and not %q", tc.b.AUC, tc.p, got, tc.want, tc.not)
		}
	}
}

// TestAuditTokensCarryBOS: texts are encoded as transformers' tokenizer
// (text) encodes them, with the special tokens the post-processor adds:
// a tokenizer that puts a BOS before every text (Llama's, Gemma's) gets
// it, so the model scores the text's first token after it; one that
// adds none (memo's own) is encoded as before.
func TestAuditTokensCarryBOS(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "tokenizers", "opticks-bpe2048.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	const bos = 2047 // <|endoftext|>, the file's one special token
	plain := filepath.Join(t.TempDir(), "plain.json")
	if err := os.WriteFile(plain, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	doc["post_processor"] = map[string]any{"type": "TemplateProcessing",
		"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<|endoftext|>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
		"pair":           []any{},
		"special_tokens": map[string]any{"<|endoftext|>": map[string]any{"id": "<|endoftext|>", "ids": []int{bos}, "tokens": []string{"<|endoftext|>"}}}}
	withBOS, _ := json.Marshal(doc)
	bosPath := filepath.Join(t.TempDir(), "bos.json")
	if err := os.WriteFile(bosPath, withBOS, 0o644); err != nil {
		t.Fatal(err)
	}
	texts := []labelled.Text{{Text: "Light is refracted", Member: true, Where: "f:1"}}
	for _, tc := range []struct {
		path string
		bos  bool
	}{{plain, false}, {bosPath, true}} {
		tok, err := data.LoadTokenizer("hf:" + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		own, err := tok.Encode(texts[0].Text)
		if err != nil {
			t.Fatal(err)
		}
		lowerOwn, _ := tok.Encode(strings.ToLower(texts[0].Text))
		in, err := tokenizeAudit(context.Background(), tok, texts, true)
		if err != nil {
			t.Fatal(err)
		}
		want, wantLower := own, lowerOwn
		if tc.bos {
			want, wantLower = append([]int32{bos}, own...), append([]int32{bos}, lowerOwn...)
		}
		if !slices.Equal(in[0].Tokens, want) || !slices.Equal(in[0].LowerTokens, wantLower) {
			t.Errorf("BOS %v: tokens %v, lowercase %v; want %v, %v", tc.bos, in[0].Tokens, in[0].LowerTokens, want, wantLower)
		}
	}
}

// TestAuditReportCounts: a statistic undefined for some texts is scored
// on the rest, and report.md says on how many; one defined for none
// (DC-PDD without a corpus) has its own line, not this one.
func TestAuditReportCounts(t *testing.T) {
	st := func(name string, m, n int) eval.NamedAuditStat {
		return eval.NamedAuditStat{Name: name, AuditStat: eval.AuditStat{NMembers: m, NNonmembers: n}}
	}
	sum := &AuditSummary{NMembers: 21, NNonmembers: 21, Lowercase: true, FrequencyCorp: "x",
		MIA: eval.AuditStats{st("loss", 21, 21), st("lowercase", 20, 21), st("dcpdd", 0, 0)}}
	var b strings.Builder
	auditReport(&b, sum)
	got := b.String()
	if !strings.Contains(got, "lowercase is undefined for some texts and scored on 20 of 21 members and 21 of 21 non-members") {
		t.Errorf("report.md does not count lowercase's texts:\n%s", got)
	}
	if strings.Count(got, "undefined for some texts") != 1 {
		t.Errorf("report.md names more than lowercase:\n%s", got)
	}
}
