package eval

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/memo-research/memo/eval/calibrated"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/runfiles"
)

// CalibratedSummary is summary.json's "calibrated" object: the reference
// models behind the calibrated attacks' columns and how each attack fares
// with the first K of them.
type CalibratedSummary struct {
	// Signals is the mia_signals.parquet the scores were computed from.
	Signals    string `json:"signals"`
	References int    `json:"references"`
	// Candidates and Population count the documents the target and the
	// references scored (targets and controls, attacked or not) and the
	// population samples RMIA compares them with.
	Candidates int               `json:"candidates"`
	Population int               `json:"population"`
	Settings   calibrated.Config `json:"settings"`
	// RMIAA is the a offline RMIA used with all K references: the
	// setting's, or the one it chose (settings.rmia_a = -1).
	RMIAA float64 `json:"rmia_a"`
	// ByReferences scores every attack with the first K reference models,
	// for K = 1, 2, 4, … up to all of them (AUC and TPR without intervals),
	// over the documents mia.* is: the targets and controls attacked. With
	// all K it is mia.<attack>.
	ByReferences []CalibratedAtK `json:"by_references"`
	// CounterfactualSpearman is Spearman's rank correlation of the members'
	// counterfactual memorization with their repetitions; null with one
	// repetition count.
	CounterfactualSpearman Num `json:"counterfactual_vs_repetitions_spearman"`
}

// CalibratedAtK is one row of the table of attacks against the number of
// reference models.
type CalibratedAtK struct {
	K int `json:"k"`
	// RMIAA is the a offline RMIA used with these K references (the
	// setting's, or the one chosen among them with rmia_a = -1).
	RMIAA   float64                  `json:"rmia_a"`
	Attacks map[string]CalibratedAUC `json:"attacks"`
}

// CalibratedAUC is an attack's AUC and TPR at 0.1 % and 1 % FPR with K
// reference models, over the NMembers and NControls documents it could
// score (with K = 1 the offline attacks score only the documents the one
// model did not train on).
type CalibratedAUC struct {
	AUC       Num `json:"auc"`
	TPR0_1    Num `json:"tpr_at_0.1pct_fpr"`
	TPR1      Num `json:"tpr_at_1pct_fpr"`
	NMembers  int `json:"n_members"`
	NControls int `json:"n_controls"`
}

// CalibratedAttacks are the statistics computed from
// mia_signals.parquet (MIAStatistic.Signals), in table order.
func CalibratedAttacks() []MIAStatistic {
	var out []MIAStatistic
	for _, st := range statistics() {
		if st.Signals != nil {
			out = append(out, st)
		}
	}
	return out
}

// signalMatrix is mia_signals.parquet arranged for package calibrated:
// candidates (targets and controls) and population samples by doc_id,
// the target's and each reference's signals, and which reference trained
// on which candidate.
type signalMatrix struct {
	candidates []int64 // doc_ids
	population []int64
	// tgt and ref hold each model's rows by document: candidates first,
	// then population.
	tgt []runfiles.MIASignal
	ref [][]runfiles.MIASignal
	in  [][]bool
}

// readSignals reads and checks mia_signals.parquet.
func readSignals(path string) (*signalMatrix, error) {
	rows, err := runfiles.MIASignals.ReadParquet(path)
	if err != nil {
		return nil, badinput.Errorf("eval: %w", err)
	}
	m := &signalMatrix{}
	col := map[int64]int{}
	nRef := 0
	for _, r := range rows {
		if r.RefIndex == -1 {
			switch r.Split {
			case splitTarget, splitControl:
				col[r.DocID] = len(m.candidates)
				m.candidates = append(m.candidates, r.DocID)
			case "validation":
				m.population = append(m.population, r.DocID)
			default:
				return nil, badinput.Errorf("eval: %s: document %d of split %q: want target, control or validation", path, r.DocID, r.Split)
			}
			continue
		}
		if r.RefIndex < 0 || r.RefIndex > 1<<16 {
			return nil, badinput.Errorf("eval: %s: ref_index %d out of range", path, r.RefIndex)
		}
		nRef = max(nRef, r.RefIndex+1)
	}
	for j, id := range m.population {
		col[id] = len(m.candidates) + j
	}
	nDocs := len(m.candidates) + len(m.population)
	if len(m.candidates) == 0 || nRef == 0 {
		return nil, badinput.Errorf("eval: %s has %d candidate documents and %d reference models: nothing to calibrate", path, len(m.candidates), nRef)
	}
	m.tgt = make([]runfiles.MIASignal, nDocs)
	m.ref = make([][]runfiles.MIASignal, nRef)
	m.in = make([][]bool, nRef)
	seen := make([][]bool, nRef+1)
	for k := range m.ref {
		m.ref[k] = make([]runfiles.MIASignal, nDocs)
		m.in[k] = make([]bool, len(m.candidates))
	}
	for k := range seen {
		seen[k] = make([]bool, nDocs)
	}
	for _, r := range rows {
		j, ok := col[r.DocID]
		if !ok {
			return nil, badinput.Errorf("eval: %s: reference %d scored document %d, which the target did not", path, r.RefIndex, r.DocID)
		}
		k := r.RefIndex + 1
		if seen[k][j] {
			return nil, badinput.Errorf("eval: %s: model %s scored document %d twice", path, r.Model, r.DocID)
		}
		seen[k][j] = true
		if r.RefIndex == -1 {
			m.tgt[j] = r
			continue
		}
		m.ref[r.RefIndex][j] = r
		if j < len(m.candidates) {
			m.in[r.RefIndex][j] = r.TrainedOn
		} else if r.TrainedOn {
			return nil, badinput.Errorf("eval: %s: reference %d trained on population document %d", path, r.RefIndex, r.DocID)
		}
	}
	for k := range seen {
		for j, s := range seen[k] {
			if !s {
				return nil, badinput.Errorf("eval: %s: model %d of %d has no row for document %d", path, k-1, nRef, append(m.candidates, m.population...)[j])
			}
		}
	}
	m.dropUnscoredPopulation(path)
	return m, nil
}

// dropUnscoredPopulation leaves out the population samples some model has
// no mean log-likelihood for (NaN: a window with no predicted token, as a
// one-token document gives with data.min_tokens <= 1). A candidate so
// unscored is NaN in its own row; a population sample is a divisor of
// every candidate's ratios, so it cannot be kept.
func (m *signalMatrix) dropUnscoredPopulation(path string) {
	nc := len(m.candidates)
	kept := 0
	for j := range m.population {
		unscored := math.IsNaN(m.tgt[nc+j].LLMean)
		for k := range m.ref {
			unscored = unscored || math.IsNaN(m.ref[k][nc+j].LLMean)
		}
		if unscored {
			continue
		}
		m.population[kept] = m.population[j]
		m.tgt[nc+kept] = m.tgt[nc+j]
		for k := range m.ref {
			m.ref[k][nc+kept] = m.ref[k][nc+j]
		}
		kept++
	}
	if dropped := len(m.population) - kept; dropped > 0 {
		slog.Warn("eval: population samples without a mean log-likelihood (no predicted token) left out of RMIA", "signals", path, "dropped", dropped, "kept", kept)
	}
	m.population = m.population[:kept]
	m.tgt = m.tgt[:nc+kept]
	for k := range m.ref {
		m.ref[k] = m.ref[k][:nc+kept]
	}
	if kept > 0 && kept < rmiaResolution {
		// RMIA's score is a count over the population: a review found 7
		// members tied with the top control at 1.0 over 64 samples, and
		// RMIA's TPR at 0.1 % FPR 0 at an AUC of 0.86.
		slog.Warn("eval: RMIA scores are fractions of the population samples (the validation split), so they take few values; members tied with a control at the top lower its TPR at low FPR: raise data.validation for a finer RMIA", "signals", path, "samples", kept, "values", kept+1)
	}
}

// rmiaResolution is the population below which RMIA's scores are coarser
// than the lowest FPR summary.json reports (0.1 %).
const rmiaResolution = 1000

// calibratedScores are the attacks' scores of each candidate, by attack.
type calibratedScores map[string][]float64

// calibratedInput is what a calibrated attack (MIAStatistic.Signals)
// reads: the signals with the first K reference models, and the settings.
type calibratedInput struct {
	m   *signalMatrix
	K   int
	cfg calibrated.Config
}

// The signals the attacks take from a row of mia_signals.parquet: LiRA
// the logit-scaled confidence of the summed log-likelihood, RMIA the
// probability of the mean, counterfactual memorization the mean.
func liraSignal(r runfiles.MIASignal) float64 { return calibrated.LogitOfLogProb(r.LLSum) }
func probSignal(r runfiles.MIASignal) float64 { return math.Exp(r.LLMean) }
func meanSignal(r runfiles.MIASignal) float64 { return r.LLMean }

// candidates is f of each candidate's row in rows (a model's rows).
func (x calibratedInput) candidates(f func(runfiles.MIASignal) float64, rows []runfiles.MIASignal) []float64 {
	out := make([]float64, len(x.m.candidates))
	for j := range out {
		out[j] = f(rows[j])
	}
	return out
}

// target is f of the target model's row of each candidate.
func (x calibratedInput) target(f func(runfiles.MIASignal) float64) []float64 {
	return x.candidates(f, x.m.tgt)
}

// refs is f of each candidate under each of the K reference models.
func (x calibratedInput) refs(f func(runfiles.MIASignal) float64) [][]float64 {
	out := make([][]float64, x.K)
	for k := range out {
		out[k] = x.candidates(f, x.m.ref[k])
	}
	return out
}

// in says which of the K reference models trained on which candidate.
func (x calibratedInput) in() [][]bool { return x.m.in[:x.K] }

// population is probSignal of each population sample in rows.
func (x calibratedInput) population(rows []runfiles.MIASignal) []float64 {
	nc := len(x.m.candidates)
	out := make([]float64, len(x.m.population))
	for j := range out {
		out[j] = probSignal(rows[nc+j])
	}
	return out
}

// populationRefs is population under each of the K reference models.
func (x calibratedInput) populationRefs() [][]float64 {
	out := make([][]float64, x.K)
	for k := range out {
		out[k] = x.population(x.m.ref[k])
	}
	return out
}

// undefined is NaN for every candidate: the online attacks and
// counterfactual memorization need a model on each side of every
// candidate, so K = 1 leaves them undefined.
func (x calibratedInput) undefined() []float64 {
	out := make([]float64, len(x.m.candidates))
	for j := range out {
		out[j] = math.NaN()
	}
	return out
}

// score runs every calibrated attack with the first K reference models.
func (m *signalMatrix) score(K int, cfg calibrated.Config) (calibratedScores, error) {
	x := calibratedInput{m: m, K: K, cfg: cfg}
	s := calibratedScores{}
	for _, st := range statistics() {
		if st.Signals == nil {
			continue
		}
		v, err := st.Signals(x)
		if err != nil {
			return nil, err
		}
		s[st.Name] = v
	}
	return s, nil
}

// offlineA is offline RMIA's a: mia.rmia_a, or with rmia_a = -1 the value
// the paper's procedure picks (Zarifzadeh et al. 2024, §4 and Privacy
// Meter's offline tuning): reference model 0 plays the target, the other
// references among the first K its references, and the a of 0, 0.05, …, 1
// whose offline attack has the highest AUC on reference 0's own members
// and non-members wins (the smallest on ties). With fewer than four
// references some candidates would have no model on the OUT side; a = 1
// is taken then.
func (m *signalMatrix) offlineA(K int, cfg calibrated.Config) (float64, error) {
	if cfg.RMIAA >= 0 {
		return cfg.RMIAA, nil
	}
	if K < 4 {
		return 1, nil
	}
	nc := len(m.candidates)
	prob := func(rows []runfiles.MIASignal, from, to int) []float64 {
		out := make([]float64, to-from)
		for j := range out {
			out[j] = math.Exp(rows[from+j].LLMean)
		}
		return out
	}
	var refProb, popRef [][]float64
	for k := 1; k < K; k++ {
		refProb = append(refProb, prob(m.ref[k], 0, nc))
		popRef = append(popRef, prob(m.ref[k], nc, len(m.ref[k])))
	}
	target, popTarget := prob(m.ref[0], 0, nc), prob(m.ref[0], nc, len(m.ref[0]))
	best, bestAUC := 1.0, math.Inf(-1)
	for i := 0; i <= 20; i++ {
		a := float64(i) / 20
		sc, err := calibrated.RMIA(target, refProb, m.in[1:K], popTarget, popRef, calibrated.RMIAOptions{Offline: true, A: a, Gamma: cfg.RMIAGamma})
		if err != nil {
			return 0, err
		}
		var mem, non []float64
		for j, v := range sc {
			if m.in[0][j] {
				mem = append(mem, v)
			} else {
				non = append(non, v)
			}
		}
		if auc := AUC(mem, non); auc > bestAUC {
			best, bestAUC = a, auc
		}
	}
	return best, nil
}

// SignalsPath is the mia_signals.parquet whose scores belong in the
// scores of completions: the run's own, beside its completions.arrow
// (attacks of other settings or checkpoints have none).
func SignalsPath(completions string) string {
	if filepath.Base(completions) != runfiles.CompletionsFile {
		return ""
	}
	return filepath.Join(filepath.Dir(completions), runfiles.MIASignalsFile)
}

// applyCalibrated fills the calibrated columns of rows from the signals
// at path, when the file exists, and returns the summary's object.
func applyCalibrated(rows []Score, path string, cfg calibrated.Config) (*CalibratedSummary, error) {
	if path == "" {
		return nil, nil
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if cfg.References > 0 {
			// Dropping the calibrated columns without a word left a
			// summary and report with no LiRA or RMIA in them.
			return nil, badinput.Errorf("eval: %s is missing, and mia.references = %d asks for calibrated attacks: `memo run` on the run's spec makes it again (its references stage)", path, cfg.References)
		}
		return nil, nil
	}
	m, err := readSignals(path)
	if err != nil {
		return nil, err
	}
	K := len(m.ref)
	if cfg.References > 0 && K != cfg.References {
		return nil, badinput.Errorf("eval: %s holds the signals of %d reference models, and mia.references = %d: it is not this run's; `memo run` on the run's spec makes it again", path, K, cfg.References)
	}
	all, err := m.score(K, cfg)
	if err != nil {
		return nil, fmt.Errorf("eval: %s: %w", path, err)
	}
	at := map[int64]int{}
	for j, id := range m.candidates {
		at[id] = j
	}
	attacks := CalibratedAttacks()
	// The by-references rows are the documents mia.* is computed over
	// (Summarize): the targets and controls attacked, which
	// extract.max_docs and extract.splits make fewer than the candidates
	// the references scored. With all K references they are mia.<attack>.
	type scoredDoc struct {
		j      int // candidate
		member bool
	}
	var scored []scoredDoc
	var unscored []int64
	for i := range rows {
		j, ok := at[rows[i].DocID]
		if !ok {
			if sp := rows[i].Split; sp == splitTarget || sp == splitControl {
				unscored = append(unscored, rows[i].DocID)
			}
			continue
		}
		for _, st := range attacks {
			st.set(&rows[i], all[st.Name][j])
		}
		if sp := rows[i].Split; sp == splitTarget || sp == splitControl {
			scored = append(scored, scoredDoc{j, sp == splitTarget})
		}
	}
	if len(unscored) > 0 {
		// The references score every target and control the attack can
		// take: a file that misses some is another run's (its AUCs came
		// out null over no documents).
		return nil, badinput.Errorf("eval: %s scores no calibrated signal for %d of the attacked targets and controls (doc_id %d first): it is not this run's; `memo run` on the run's spec makes it again", path, len(unscored), unscored[0])
	}
	sum := &CalibratedSummary{Signals: path, References: K, Candidates: len(m.candidates), Population: len(m.population), Settings: cfg}
	sum.Settings.References = K
	if sum.RMIAA, err = m.offlineA(K, cfg); err != nil {
		return nil, fmt.Errorf("eval: %s: %w", path, err)
	}
	for _, k := range referenceCounts(K) {
		s := all
		if k != K {
			if s, err = m.score(k, cfg); err != nil {
				return nil, fmt.Errorf("eval: %s: %w", path, err)
			}
		}
		row := CalibratedAtK{K: k, RMIAA: sum.RMIAA, Attacks: map[string]CalibratedAUC{}}
		if k != K {
			if row.RMIAA, err = m.offlineA(k, cfg); err != nil {
				return nil, fmt.Errorf("eval: %s: %w", path, err)
			}
		}
		for _, st := range attacks {
			name := st.Name
			var mem, ctl []float64
			for _, d := range scored {
				v := s[name][d.j]
				if math.IsNaN(v) {
					continue
				}
				if d.member {
					mem = append(mem, v)
				} else {
					ctl = append(ctl, v)
				}
			}
			row.Attacks[name] = CalibratedAUC{AUC: Num(AUC(mem, ctl)), TPR0_1: Num(TPRAtFPR(mem, ctl, LowFPRs[0])),
				TPR1: Num(TPRAtFPR(mem, ctl, LowFPRs[1])), NMembers: len(mem), NControls: len(ctl)}
		}
		sum.ByReferences = append(sum.ByReferences, row)
	}
	var reps, cf []float64
	for _, r := range rows {
		if v := r.Stats[AttackCounterfactual]; r.Split == splitTarget && r.Stats != nil && !math.IsNaN(v) {
			reps, cf = append(reps, float64(r.Repetitions)), append(cf, v)
		}
	}
	sum.CounterfactualSpearman = Num(Spearman(reps, cf))
	return sum, nil
}

// referenceCounts are the K of the by-references table: 1, 2, 4, … below
// K, and K.
func referenceCounts(K int) []int {
	var out []int
	for k := 1; k < K; k *= 2 {
		out = append(out, k)
	}
	return append(out, K)
}

// Spearman is the rank correlation of x and y (average ranks for ties);
// NaN with fewer than two points or when either is constant.
func Spearman(x, y []float64) float64 {
	if len(x) != len(y) || len(x) < 2 {
		return math.NaN()
	}
	rx, ry := ranks(x), ranks(y)
	var mx, my float64
	for i := range rx {
		mx += rx[i]
		my += ry[i]
	}
	mx /= float64(len(rx))
	my /= float64(len(ry))
	var sxy, sxx, syy float64
	for i := range rx {
		dx, dy := rx[i]-mx, ry[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

// ranks are 1-based ranks with ties given their average rank.
func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && v[idx[j]] == v[idx[i]] {
			j++
		}
		avg := float64(i+j+1) / 2 // ranks i+1..j
		for k := i; k < j; k++ {
			r[idx[k]] = avg
		}
		i = j
	}
	return r
}
