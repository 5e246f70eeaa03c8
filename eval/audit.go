package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/memo-research/memo/internal/runfiles"
)

// Splits of memo audit's scores.parquet: the labelled set's classes.
const (
	SplitMember    = "member"
	SplitNonmember = "nonmember"
)

// StatusAudit is the status of an audited text: scored whole for
// membership, not attacked by prefix completion (its extraction columns
// are NaN).
const StatusAudit = "audit"

// AuditScore is one row of memo audit's scores.parquet: an attack's row
// (Score, with split member or nonmember and NTokens the text's tokens)
// and what the audit adds.
type AuditScore struct {
	Score
	// NScored counts the tokens whose loss the statistics take: every
	// token of the text but its first, which nothing predicts.
	NScored int `arrow:"n_scored"`
	// NWindows counts the model passes the text took (one when it fits
	// the context, else one per stride).
	NWindows int `arrow:"n_windows"`
	// TextBytes is the text's length in bytes.
	TextBytes int `arrow:"text_bytes"`
	// Blind is the blind baseline's out-of-fold score of the text, the log
	// odds that it is a member from its words alone (higher means member).
	Blind float64 `arrow:"blind"`
}

// auditTable is the audit's scores.parquet codec: its Stats columns are
// those of the statistics the audit scores.
var auditTable = sync.OnceValue(func() *runfiles.Table[AuditScore] {
	var cols []string
	for _, x := range AuditStatistics() {
		if x.Field == nil {
			cols = append(cols, x.Name)
		}
	}
	return runfiles.NewTable[AuditScore](runfiles.ScoresFile, cols...)
})

// AuditScores is memo audit's scores.parquet codec.
func AuditScores() *runfiles.Table[AuditScore] { return auditTable() }

// AuditText is what memo audit measured of one labelled text.
type AuditText struct {
	ID     int64
	Split  string // SplitMember or SplitNonmember
	Title  string
	Text   string
	Tokens []int32 // the whole text's tokens
	// Losses are the token losses of Tokens[1:] (one pass, or the windows
	// stitched so that each token is scored once); LowerLosses the same of
	// the lowercased text; MinKPP Min-K%++ over Losses.
	Losses      []float32
	LowerLosses []float32
	MinKPP      float64
	NWindows    int
}

// ScoreAuditText computes every statistic of AuditStatistics for one
// text, each by its registered PerDoc exactly as an attack computes it
// over a window, the whole text standing in for the window.
func ScoreAuditText(t AuditText, minK float64, freq *TokenFrequency, dcpddCap float64) AuditScore {
	var predicted []int32
	if len(t.Tokens) > 0 {
		predicted = t.Tokens[1:]
	}
	c := runfiles.Completion{
		DocID: t.ID, Split: t.Split, Title: t.Title, Status: StatusAudit, Text: t.Text, WindowText: t.Text,
		NTokens: len(t.Tokens), TokenLosses: t.Losses, MinKPP: t.MinKPP, Loss: MeanLoss(t.Losses),
		MinK: nan(), RefLoss: nan(), PExtract: nan(), ReCaLL: nan(), GradNorm: nan(),
	}
	s := Score{
		DocID: t.ID, Split: t.Split, Title: t.Title, Status: StatusAudit, NTokens: len(t.Tokens),
		Match: Match{TokenAccuracy: nan(), FirstDivergence: -1}, RougeL: nan(), RougeLPrecision: nan(),
		RougeLRecall: nan(), Rouge1: nan(), Rouge2: nan(), BestRougeL: nan(),
		Loss: nan(), ZlibRatio: nan(), MinK: nan(), RefLoss: nan(), RefDiff: nan(), MinKPP: nan(),
		PExtract: nan(), Stats: map[string]float64{},
	}
	in := DocInput{MinKFraction: minK, RefLoss: nan(), Tokens: predicted, LowercaseLosses: t.LowerLosses,
		Frequency: freq, DCPDDCap: dcpddCap}
	for _, x := range AuditStatistics() {
		x.set(&s, x.PerDoc(&c, &s, in))
	}
	return AuditScore{Score: s, NScored: len(t.Losses), NWindows: t.NWindows, TextBytes: len(t.Text), Blind: nan()}
}

// AuditFPRs are the false positive rates at which memo audit reads each
// statistic's TPR: 0.1 %, 1 % and 5 %.
var AuditFPRs = []float64{0.001, 0.01, 0.05}

// AuditStat is one statistic of memo audit scored on the labelled set:
// an attack's MIAStat (the same keys) and the TPR at 5 % FPR.
type AuditStat struct {
	MIAStat
	TPR5   Num    `json:"tpr_at_5pct_fpr"`
	TPR5CI [2]Num `json:"tpr_at_5pct_fpr_ci"`
	// NMembers and NNonmembers count the texts the statistic scored (not
	// NaN): fewer than the set where it is undefined for some (the
	// lowercase ratio of a text whose lowercased copy is one token).
	NMembers    int `json:"n_members"`
	NNonmembers int `json:"n_nonmembers"`
}

// ScoreMembership scores values where higher means member, members
// against non-members: AUC and TPR at AuditFPRs, with stratified
// bootstrap intervals of b resamples seeded by seed (MIABootstrap).
func ScoreMembership(members, nonmembers []float64, b int, seed uint64) AuditStat {
	var st AuditStat
	tprs := make([]Num, len(AuditFPRs))
	for i, f := range AuditFPRs {
		tprs[i] = Num(TPRAtFPR(members, nonmembers, f))
	}
	aucCI, tprCI := MIABootstrap(members, nonmembers, AuditFPRs, b, seed)
	ci := func(x [2]float64) [2]Num { return [2]Num{Num(x[0]), Num(x[1])} }
	st.AUC, st.AUCCI = Num(AUC(members, nonmembers)), ci(aucCI)
	st.TPR0_1, st.TPR0_1CI = tprs[0], ci(tprCI[0])
	st.TPR1, st.TPR1CI = tprs[1], ci(tprCI[1])
	st.TPR5, st.TPR5CI = tprs[2], ci(tprCI[2])
	st.NMembers, st.NNonmembers = len(finite(members)), len(finite(nonmembers))
	return st
}

// NamedAuditStat is one statistic's result under its name.
type NamedAuditStat struct {
	Name string
	AuditStat
}

// AuditStats are the statistics' results in the registry's order; JSON
// writes them as one object keyed by name, in that order.
type AuditStats []NamedAuditStat

// MarshalJSON writes {"name": {...}, ...} in order.
func (a AuditStats) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, s := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(s.Name)
		val, err := json.Marshal(s.AuditStat)
		if err != nil {
			return nil, err
		}
		b.Write(key)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// SummarizeAudit scores every statistic of AuditStatistics over rows,
// members against non-members, with cfg's bootstrap; each statistic's
// resamples are seeded from cfg.Seed and its name, as an attack's are.
func SummarizeAudit(rows []AuditScore, cfg Config) AuditStats {
	var out AuditStats
	for _, x := range AuditStatistics() {
		var ms, cs []float64
		for i := range rows {
			v := MemberScore(x.Value(&rows[i].Score), x.HigherMember)
			switch rows[i].Split {
			case SplitMember:
				ms = append(ms, v)
			case SplitNonmember:
				cs = append(cs, v)
			}
		}
		out = append(out, NamedAuditStat{x.Name, ScoreMembership(ms, cs, cfg.Bootstrap, seedFor(cfg.Seed, "mia/"+x.Name))})
	}
	return out
}

// UnmarshalJSON reads the object MarshalJSON writes, keeping its order.
func (a *AuditStats) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	*a = nil
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := k.(string)
		var st AuditStat
		if err := dec.Decode(&st); err != nil {
			return fmt.Errorf("mia.%s: %w", name, err)
		}
		*a = append(*a, NamedAuditStat{name, st})
	}
	_, err := dec.Token() // }
	return err
}
