package eval

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func nearRel(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

// TestDCPDDByHand: DC-PDD from Zhang et al.'s definition, worked by hand
// on a vocabulary of four ids with counts 5, 3, 1, 0 (smoothed
// frequencies 6/13, 4/13, 2/13, 1/13): α = p · ln(1/f) over the first
// occurrence of each token, clipped at a, averaged.
func TestDCPDDByHand(t *testing.T) {
	freq := NewTokenFrequency(4, [][]int32{{0, 0, 0, 1, 1}, {0, 0, 1, 2}, {9}}) // 9: outside the vocabulary, left out
	if freq.Total != 9 || freq.Counts[0] != 5 || freq.Counts[3] != 0 {
		t.Fatalf("counts %v total %d", freq.Counts, freq.Total)
	}
	tokens := []int32{0, 2, 0, 3}
	losses := []float32{float32(math.Ln2), float32(2 * math.Ln2), 0, float32(-math.Log(0.9))}
	p := func(i int) float64 { return math.Exp(-float64(losses[i])) } // the float32 losses' own probabilities
	a0, a2, a3 := p(0)*math.Log(13.0/6), p(1)*math.Log(13.0/2), p(3)*math.Log(13)
	for _, tc := range []struct {
		name string
		capA float64
		want float64
	}{
		{"no clipping", 10, (a0 + a2 + a3) / 3},       // ≈ (0.3866 + 0.4680 + 2.3085)/3
		{"clipped at 0.4", 0.4, (a0 + 0.4 + 0.4) / 3}, // two of three clipped
		{"the paper's a", DCPDDDefaultCap, 0.01},      // every α is above 0.01
	} {
		if got := DCPDD(tokens, losses, freq, tc.capA); !nearRel(got, tc.want) {
			t.Errorf("%s: DC-PDD %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		name   string
		tokens []int32
		freq   *TokenFrequency
		capA   float64
	}{
		{"no tokens", nil, freq, 1}, {"no reference", tokens, nil, 1}, {"no cap", tokens, freq, 0}, {"lengths differ", tokens[:2], freq, 1},
	} {
		if got := DCPDD(tc.tokens, losses, tc.freq, tc.capA); !math.IsNaN(got) {
			t.Errorf("%s: %v, want NaN", tc.name, got)
		}
	}
}

func TestLowercaseRatioByHand(t *testing.T) {
	for _, tc := range []struct {
		losses, lower []float32
		want          float64
	}{
		{[]float32{1, 2, 3}, []float32{2, 2}, 1},
		{[]float32{1, 2, 3}, []float32{4, 4, 4, 4}, 0.5},
		{[]float32{3}, []float32{1, 2}, 2},
		{[]float32{1}, nil, math.NaN()},
	} {
		got := LowercaseRatio(tc.losses, tc.lower)
		if !(nearRel(got, tc.want) || math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("LowercaseRatio(%v, %v) = %v, want %v", tc.losses, tc.lower, got, tc.want)
		}
	}
}

// TestAuditTextByHand: every statistic of an audited text against
// mimir's whole-text definitions worked by hand: loss the mean token
// loss; zlib loss / len(zlib.compress(text)) (56 bytes for this text in
// Python's zlib); Min-K% with k = 0.2 the mean of the int(0.2·10) = 2
// highest losses; lowercase and DC-PDD from their inputs.
func TestAuditTextByHand(t *testing.T) {
	text := "The quick brown fox jumps over the lazy dog. The quick brown fox."
	tx := AuditText{
		ID: 3, Split: SplitMember, Text: text,
		Tokens:      []int32{0, 1, 2, 3, 1, 2, 3, 1, 2, 3, 0},
		Losses:      []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
		LowerLosses: []float32{11, 11},
		MinKPP:      0.25, NWindows: 2,
	}
	freq := NewTokenFrequency(4, [][]int32{{0, 1, 2, 3}})
	s := ScoreAuditText(tx, 0.2, freq, 1)
	dcpdd := (math.Exp(-1)*math.Log(8.0/2) + math.Exp(-2)*math.Log(4) + math.Exp(-3)*math.Log(4) + math.Exp(-10)*math.Log(4)) / 4
	for name, tc := range map[string]struct{ got, want float64 }{
		"loss":      {s.Loss, 5.5},
		"zlib":      {s.ZlibRatio, 5.5 / 56},
		"mink":      {s.MinK, 9.5},
		"mink_pp":   {s.MinKPP, 0.25},
		"lowercase": {s.Stats["lowercase"], 0.5},
		"dcpdd":     {s.Stats["dcpdd"], dcpdd},
	} {
		if !nearRel(tc.got, tc.want) {
			t.Errorf("%s = %v, want %v", name, tc.got, tc.want)
		}
	}
	if s.ZlibLen != 56 || s.NTokens != 11 || s.NScored != 10 || s.NWindows != 2 || s.TextBytes != len(text) || s.Status != StatusAudit {
		t.Errorf("side columns: zlib_len %d n_tokens %d n_scored %d n_windows %d text_bytes %d status %q",
			s.ZlibLen, s.NTokens, s.NScored, s.NWindows, s.TextBytes, s.Status)
	}
	if !math.IsNaN(s.RefDiff) || !math.IsNaN(s.RougeL) || !math.IsNaN(s.Blind) {
		t.Errorf("columns the audit does not take hold numbers: ref_diff %v rougeL %v blind %v", s.RefDiff, s.RougeL, s.Blind)
	}
	// Extraction's other columns, as docs/ATTACKS.md lists them.
	if s.Exact || s.AnyExact || s.FirstDivergence != -1 || s.PrefixLen != 0 || s.SuffixLen != 0 || s.NGuesses != 0 || !math.IsNaN(s.TokenAccuracy) || !math.IsNaN(s.PExtract) {
		t.Errorf("extraction columns of an audited text: exact %v any_exact %v first_divergence %d prefix_len %d suffix_len %d n_guesses %d token_accuracy %v p_extract %v",
			s.Exact, s.AnyExact, s.FirstDivergence, s.PrefixLen, s.SuffixLen, s.NGuesses, s.TokenAccuracy, s.PExtract)
	}
}

// TestAuditStatisticsAreNotAnAttacks: the audit's own statistics stay out
// of an attack's scores.parquet columns (its golden bytes) and are in the
// audit's.
func TestAuditStatisticsAreNotAnAttacks(t *testing.T) {
	for _, name := range []string{"lowercase", "dcpdd"} {
		if len(Scores().Schema().FieldIndices(name)) != 0 {
			t.Errorf("an attack's scores.parquet has column %s", name)
		}
		if len(AuditScores().Schema().FieldIndices(name)) != 1 {
			t.Errorf("the audit's scores.parquet lacks column %s", name)
		}
	}
	var names []string
	for _, x := range AuditStatistics() {
		names = append(names, x.Name)
	}
	if got := strings.Join(names, " "); got != "loss zlib lowercase dcpdd mink mink_pp" {
		t.Errorf("audit statistics %q", got)
	}
}

func TestSummarizeAudit(t *testing.T) {
	var rows []AuditScore
	for i := range 20 {
		r := AuditScore{Score: Score{Split: SplitMember, Loss: float64(i), Stats: map[string]float64{}}}
		if i >= 10 {
			r.Split = SplitNonmember
		}
		rows = append(rows, r)
	}
	cfg := DefaultConfig()
	cfg.Bootstrap = 200
	sum := SummarizeAudit(rows, cfg)
	if sum[0].Name != "loss" || sum[0].AUC != 1 || sum[0].TPR5 != 1 || !(sum[0].AUCCI[0] <= 1) {
		t.Errorf("loss: %+v, want AUC 1 (members have the lower losses)", sum[0])
	}
	b, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"loss":{"auc":1,"auc_ci":[`) || !strings.Contains(string(b), `"tpr_at_5pct_fpr":1`) {
		t.Errorf("JSON %.200s", b)
	}
	var back AuditStats
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != len(sum) || back[0].Name != "loss" || back[0].AUC != 1 || back[len(back)-1].Name != sum[len(sum)-1].Name {
		t.Errorf("read back %+v", back)
	}
}
