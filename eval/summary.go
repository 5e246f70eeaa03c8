package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/memo-research/memo/internal/provenance"
	"github.com/memo-research/memo/loss"
)

// Num is a float64 that is null in JSON when undefined (NaN), e.g. an AUC
// without controls.
type Num float64

// MarshalJSON writes NaN and ±Inf as null.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// UnmarshalJSON reads null as NaN.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = Num(f)
	return nil
}

// Summary is summary.json.
type Summary struct {
	// Completions is the absolute path of the completions scored.
	Completions string `json:"completions"`
	// Checkpoint, Run, Step, ModelSHA256 and Model identify the model
	// attacked (its checkpoint directory, run directory, optimizer step,
	// sha256 of model.safetensors and model config); Extract holds the
	// attack's settings. All are as extract recorded them in
	// completions.arrow, and left out when it did not.
	Checkpoint  string          `json:"checkpoint,omitempty"`
	Run         string          `json:"run,omitempty"`
	Step        *int            `json:"step,omitempty"`
	ModelSHA256 string          `json:"model_sha256,omitempty"`
	Model       json.RawMessage `json:"model,omitempty"`
	// ModelParams is the attacked model's parameter count as extract
	// recorded it (0 and left out when it did not).
	ModelParams int64           `json:"model_params,omitempty"`
	Extract     json.RawMessage `json:"extract,omitempty"`
	NDocuments  int             `json:"n_documents"`
	// Members are the targets (split "target"), Controls the documents of
	// the same sources never trained on (split "control").
	Members  SplitSummary `json:"members"`
	Controls SplitSummary `json:"controls"`
	// Splits holds any other split present in the completions.
	Splits map[string]SplitSummary `json:"splits,omitempty"`
	// ByRepetitions breaks the members down by how often each was trained on.
	ByRepetitions []RepetitionSummary `json:"by_repetitions"`
	// ByCorpusCount breaks the attacked members down by how often their
	// window (prefix + suffix) occurs in the training corpus
	// (corpus_counts.parquet); absent without an index of the corpus.
	ByCorpusCount []CountBucket `json:"by_corpus_count,omitempty"`
	// CountedCorpus names the corpus ByCorpusCount counted in; absent
	// with it.
	CountedCorpus *CountedCorpus `json:"counted_corpus,omitempty"`
	// RepetitionThreshold is, over ByRepetitions, the smallest repetition
	// count at which half the members are extracted (see threshold.go);
	// left out with fewer than two repetition counts.
	RepetitionThreshold *RepetitionThreshold `json:"repetition_threshold,omitempty"`
	// Approx summarizes an approximate attack's columns (approx.go); left
	// out for exact attacks.
	Approx *ApproxSummary `json:"approx,omitempty"`
	MIA    MIASummary     `json:"mia"`
	// Extractable is probabilistic extraction at eval.extractable_q;
	// absent when no document has a p_extract (beam search, older files).
	Extractable *ExtractableSummary `json:"extractable,omitempty"`
	// Guesses scores the many guesses per document of extract.samples > 1
	// (guesses.arrow); absent with one guess.
	Guesses *GuessSummary `json:"guesses,omitempty"`
	// Calibrated describes the reference models of the calibrated
	// attacks and scores them against their number; absent without
	// mia_signals.parquet.
	Calibrated *CalibratedSummary `json:"calibrated,omitempty"`
	Goldfish   GoldfishSummary    `json:"goldfish"`
	Eval       Config             `json:"eval"`

	// DP is the attacked checkpoint's DP-SGD privacy record (ε at δ, σ,
	// q, C, steps); absent for a model trained without DP-SGD.
	DP *provenance.DPRecord `json:"dp,omitempty"`
	// LoRA is the attacked LoRA checkpoint's adapters and base (rank,
	// alpha, targets and both digests; model_sha256 is absent for it);
	// absent for a whole model.
	LoRA *provenance.LoRARecord `json:"lora,omitempty"`
}

// SplitSummary holds the extraction rates of one split. N counts the
// attacked documents; NotAttacked names those that were not (too short
// for prefix + suffix) and are left out of the rates.
type SplitSummary struct {
	N            int      `json:"n"`
	NNotAttacked int      `json:"n_not_attacked"`
	NotAttacked  []string `json:"not_attacked,omitempty"`
	ExactMatch   Num      `json:"exact_match"`
	ExactMatchCI [2]Num   `json:"exact_match_ci"`
	// ExactMatchWilsonCI is the Wilson score interval of the same rate.
	ExactMatchWilsonCI [2]Num `json:"exact_match_wilson_ci"`
	TokenAccuracy      Num    `json:"token_accuracy"`
	TokenAccuracyCI    [2]Num `json:"token_accuracy_ci"`
	RougeL             Num    `json:"rougeL"`
	RougeLCI           [2]Num `json:"rougeL_ci"`
	// RougeLExtracted is the fraction of documents whose RougeL is at least
	// ExtractedRougeL, with its Wilson score interval.
	RougeLExtracted         Num    `json:"rougeL_extracted"`
	RougeLExtractedWilsonCI [2]Num `json:"rougeL_extracted_wilson_ci"`
	Rouge1                  Num    `json:"rouge1"`
	Rouge2                  Num    `json:"rouge2"`
	FirstDivergence         Num    `json:"first_divergence"`
	Loss                    Num    `json:"loss"`
}

// UnmarshalJSON reads a number the file lacks as undefined (NaN), not 0:
// a summary written before exact_match_wilson_ci existed once showed in
// the report as an interval of [0, 0] that was never computed.
func (s *SplitSummary) UnmarshalJSON(b []byte) error {
	type plain SplitSummary // without this method
	p := plain(undefinedSplit())
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = SplitSummary(p)
	return nil
}

// undefinedSplit is a SplitSummary whose every number is NaN.
func undefinedSplit() SplitSummary {
	var s SplitSummary
	v := reflect.ValueOf(&s).Elem()
	nan := reflect.ValueOf(Num(math.NaN()))
	for i := range v.NumField() {
		switch f := v.Field(i); f.Type() {
		case nan.Type():
			f.Set(nan)
		case reflect.TypeFor[[2]Num]():
			f.Index(0).Set(nan)
			f.Index(1).Set(nan)
		}
	}
	return s
}

// RepetitionSummary is SplitSummary for the members seen a given number of times.
type RepetitionSummary struct {
	Repetitions int `json:"repetitions"`
	SplitSummary
}

// UnmarshalJSON reads Repetitions beside the embedded SplitSummary, whose
// UnmarshalJSON would otherwise stand for the whole struct's.
func (r *RepetitionSummary) UnmarshalJSON(b []byte) error {
	var reps struct {
		Repetitions int `json:"repetitions"`
	}
	if err := json.Unmarshal(b, &reps); err != nil {
		return err
	}
	if err := r.SplitSummary.UnmarshalJSON(b); err != nil {
		return err
	}
	r.Repetitions = reps.Repetitions
	return nil
}

// MIASummary scores the membership-inference statistics, members against
// controls. The flat *_auc and *_tpr fields are the same numbers as
// Stat("loss").AUC, ... (kept for readers of older summaries); Ref* are
// null without a reference model. Every registered statistic
// (MIAStatistics) has its MIAStat, at mia.<name> in summary.json in the
// registry's order, after the fixed fields: Stat reads it.
type MIASummary struct {
	NMembers  int `json:"n_members"`
	NControls int `json:"n_controls"`
	// FPRResolution is 1/NControls, the smallest nonzero false positive
	// rate the controls can show: a TPR at an FPR of at most this is the
	// TPR at no false positive (with 32 controls, TPR at 0.1 % and at 1 %
	// FPR are one number). Null without controls.
	FPRResolution Num `json:"fpr_resolution"`
	LossAUC       Num `json:"loss_auc"`
	ZlibAUC       Num `json:"zlib_auc"`
	MinKAUC       Num `json:"mink_auc"`
	RefAUC        Num `json:"ref_auc"`
	// FPR is the false positive rate the *_tpr fields are read at
	// (Config.FPR, strictly below).
	FPR     float64 `json:"fpr"`
	LossTPR Num     `json:"loss_tpr"`
	ZlibTPR Num     `json:"zlib_tpr"`
	MinKTPR Num     `json:"mink_tpr"`
	RefTPR  Num     `json:"ref_tpr"`
	// stats are the statistics' results by name: AUC and TPR at LowFPRs
	// with stratified bootstrap intervals.
	stats map[string]MIAStat
}

// Stat is the result of the statistic named name; undefined (every
// number NaN) when the summary has none, as in a summary written before
// the statistic existed.
func (m MIASummary) Stat(name string) MIAStat {
	if st, ok := m.stats[name]; ok {
		return st
	}
	return undefinedStat()
}

// SetStat sets the result of the statistic named name.
func (m *MIASummary) SetStat(name string, st MIAStat) {
	if m.stats == nil {
		m.stats = map[string]MIAStat{}
	}
	m.stats[name] = st
}

// miaFixed is MIASummary's fixed fields alone: their JSON.
type miaFixed MIASummary

// miaFixedKeys are the JSON keys of the fixed fields.
var miaFixedKeys = sync.OnceValue(func() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeFor[miaFixed]()
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" {
			keys[name] = true
		}
	}
	return keys
})

// statNames are the statistics m writes: every registered one, in order,
// then any other it holds (read from a newer summary), by name.
func (m MIASummary) statNames() []string {
	var names []string
	known := map[string]bool{}
	for _, x := range statistics() {
		names = append(names, x.Name)
		known[x.Name] = true
	}
	var extra []string
	for name := range m.stats {
		if !known[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	return append(names, extra...)
}

// MarshalJSON writes the fixed fields, then each statistic's MIAStat
// under its name.
func (m MIASummary) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(miaFixed(m))
	if err != nil {
		return nil, err
	}
	b = b[:len(b)-1] // reopen the object
	for _, name := range m.statNames() {
		st, err := json.Marshal(m.Stat(name))
		if err != nil {
			return nil, err
		}
		key, _ := json.Marshal(name)
		b = append(append(append(append(b, ','), key...), ':'), st...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads the fixed fields and every other key whose value
// is an object as a statistic's MIAStat; a field missing from one reads
// as NaN.
func (m *MIASummary) UnmarshalJSON(b []byte) error {
	var fixed miaFixed
	if err := json.Unmarshal(b, &fixed); err != nil {
		return err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = MIASummary(fixed)
	m.stats = nil
	for name, v := range raw {
		if miaFixedKeys()[name] || !bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) {
			continue
		}
		st := undefinedStat()
		if err := json.Unmarshal(v, &st); err != nil {
			return fmt.Errorf("mia.%s: %w", name, err)
		}
		m.SetStat(name, st)
	}
	return nil
}

// MemberScore orients a statistic's value so that higher means member,
// the orientation AUC, TPRAtFPR and ROC take.
func MemberScore(v float64, higherMember bool) float64 {
	if higherMember {
		return v
	}
	return -v
}

// LowFPRs are the false positive rates, 0.1 % and 1 %, at which every MIA
// statistic's TPR is reported with an interval (MIAStat.TPR0_1, TPR1).
var LowFPRs = []float64{0.001, 0.01}

// MIAStat is one membership statistic scored against the controls: its
// AUC and its TPR at 0.1 % and 1 % FPR (strictly below, see TPRAtFPR), each
// with a stratified percentile-bootstrap 95 % interval (MIABootstrap; null
// with eval.bootstrap = 0).
type MIAStat struct {
	AUC      Num    `json:"auc"`
	AUCCI    [2]Num `json:"auc_ci"`
	TPR0_1   Num    `json:"tpr_at_0.1pct_fpr"`
	TPR0_1CI [2]Num `json:"tpr_at_0.1pct_fpr_ci"`
	TPR1     Num    `json:"tpr_at_1pct_fpr"`
	TPR1CI   [2]Num `json:"tpr_at_1pct_fpr_ci"`
}

// GoldfishSummary records the loss the model was trained with: the record
// extract writes into completions.arrow (one definition of those fields, in
// internal/provenance), and where it came from.
type GoldfishSummary struct {
	provenance.GoldfishRecord
	// Source says where the settings come from: "checkpoint" when extract
	// recorded the attacked checkpoint's own (from its run's config.toml)
	// in completions.arrow, "given" when they are the ones passed to Run
	// because the completions record none.
	Source string `json:"source"`
}

// Goldfish sources.
const (
	GoldfishFromCheckpoint = "checkpoint"
	GoldfishGiven          = "given"
)

func goldfishSummary(g loss.Config) GoldfishSummary {
	return GoldfishSummary{GoldfishRecord: provenance.GoldfishOf(g), Source: GoldfishGiven}
}

// seedFor derives one bootstrap stream per (split, metric) from the
// configured seed, so adding a metric does not move the others' intervals.
func seedFor(seed int64, label string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(label))
	return uint64(seed) ^ h.Sum64()
}

func summarizeSplit(rows []Score, label string, cfg Config) SplitSummary {
	var s SplitSummary
	var em, acc, rl, r1, r2, fd, ls []float64
	for _, r := range rows {
		ls = append(ls, r.Loss)
		if r.Status != StatusOK {
			s.NNotAttacked++
			s.NotAttacked = append(s.NotAttacked, fmt.Sprintf("%d %s (%s)", r.DocID, r.Title, r.Status))
			continue
		}
		s.N++
		e := 0.0
		if r.Exact {
			e = 1
		}
		em = append(em, e)
		acc = append(acc, r.TokenAccuracy)
		rl = append(rl, r.RougeL)
		r1 = append(r1, r.Rouge1)
		r2 = append(r2, r.Rouge2)
		fd = append(fd, float64(r.FirstDivergence))
	}
	ci := func(xs []float64, metric string) [2]Num {
		lo, hi := BootstrapCI(xs, cfg.Bootstrap, seedFor(cfg.Seed, label+"/"+metric))
		return [2]Num{Num(lo), Num(hi)}
	}
	s.ExactMatch, s.ExactMatchCI = Num(Mean(em)), ci(em, "exact_match")
	s.ExactMatchWilsonCI = wilson(hits(em, 1), len(em))
	rlHits := hits(rl, ExtractedRougeL)
	s.RougeLExtracted, s.RougeLExtractedWilsonCI = rate(rlHits, len(rl)), wilson(rlHits, len(rl))
	s.TokenAccuracy, s.TokenAccuracyCI = Num(Mean(acc)), ci(acc, "token_accuracy")
	s.RougeL, s.RougeLCI = Num(Mean(rl)), ci(rl, "rougeL")
	s.Rouge1, s.Rouge2 = Num(Mean(r1)), Num(Mean(r2))
	s.FirstDivergence, s.Loss = Num(Mean(fd)), Num(Mean(ls))
	return s
}

func summarizeMIA(members, controls []Score, cfg Config) MIASummary {
	m := MIASummary{NMembers: len(members), NControls: len(controls), FPRResolution: Num(math.NaN()), FPR: cfg.FPR}
	if len(controls) > 0 {
		m.FPRResolution = Num(1 / float64(len(controls)))
	}
	// The flat fields of the first four statistics (older readers).
	flat := map[string][2]*Num{
		"loss": {&m.LossAUC, &m.LossTPR}, "zlib": {&m.ZlibAUC, &m.ZlibTPR},
		"mink": {&m.MinKAUC, &m.MinKTPR}, "ref": {&m.RefAUC, &m.RefTPR},
	}
	for _, x := range statistics() {
		stat := func(rows []Score) []float64 {
			out := make([]float64, len(rows))
			for i := range rows {
				out[i] = MemberScore(x.Value(&rows[i]), x.HigherMember)
			}
			return out
		}
		ms, cs := stat(members), stat(controls)
		st := MIAStat{
			AUC:    Num(AUC(ms, cs)),
			TPR0_1: Num(TPRAtFPR(ms, cs, LowFPRs[0])),
			TPR1:   Num(TPRAtFPR(ms, cs, LowFPRs[1])),
		}
		aucCI, tprCI := MIABootstrap(ms, cs, LowFPRs, cfg.Bootstrap, seedFor(cfg.Seed, "mia/"+x.Name))
		st.AUCCI = [2]Num{Num(aucCI[0]), Num(aucCI[1])}
		st.TPR0_1CI = [2]Num{Num(tprCI[0][0]), Num(tprCI[0][1])}
		st.TPR1CI = [2]Num{Num(tprCI[1][0]), Num(tprCI[1][1])}
		m.SetStat(x.Name, st)
		if f, ok := flat[x.Name]; ok {
			*f[0] = st.AUC
			*f[1] = Num(TPRAtFPR(ms, cs, cfg.FPR))
		}
	}
	return m
}

// Summarize builds summary.json from the per-document scores.
func Summarize(rows []Score, cfg Config, goldfish loss.Config) *Summary {
	bySplit := map[string][]Score{}
	byReps := map[int][]Score{}
	for _, r := range rows {
		bySplit[r.Split] = append(bySplit[r.Split], r)
		if r.Split == splitTarget {
			byReps[r.Repetitions] = append(byReps[r.Repetitions], r)
		}
	}
	s := &Summary{
		NDocuments:    len(rows),
		Members:       summarizeSplit(bySplit[splitTarget], "members", cfg),
		Controls:      summarizeSplit(bySplit[splitControl], "controls", cfg),
		MIA:           summarizeMIA(bySplit[splitTarget], bySplit[splitControl], cfg),
		Extractable:   extractableSummary(bySplit[splitTarget], bySplit[splitControl], cfg.ExtractableQ),
		Goldfish:      goldfishSummary(goldfish),
		Eval:          cfg,
		ByRepetitions: []RepetitionSummary{},
	}
	for name, rs := range bySplit {
		if name != splitTarget && name != splitControl {
			if s.Splits == nil {
				s.Splits = map[string]SplitSummary{}
			}
			s.Splits[name] = summarizeSplit(rs, name, cfg)
		}
	}
	reps := make([]int, 0, len(byReps))
	for r := range byReps {
		reps = append(reps, r)
	}
	sort.Ints(reps)
	for _, r := range reps {
		s.ByRepetitions = append(s.ByRepetitions, RepetitionSummary{
			Repetitions: r, SplitSummary: summarizeSplit(byReps[r], fmt.Sprintf("members/%d", r), cfg)})
	}
	s.RepetitionThreshold = repetitionThreshold(s.ByRepetitions)
	return s
}

// Split names of docs.arrow that eval treats as members and non-members.
const (
	splitTarget  = "target"
	splitControl = "control"
)
