package eval

import (
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/memo-research/memo/eval/calibrated"
	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/loss"
)

// syntheticSignals writes a mia_signals.parquet of nc candidates (the first
// half targets) and np population documents under a target and K
// reference models, members a little likelier under the models that
// trained on them; it returns the path and the rows.
func syntheticSignals(t *testing.T, nc, np, K int) (string, []runfiles.MIASignal) {
	t.Helper()
	in, err := calibrated.Assign(nc, K, 3)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	hard := make([]float64, nc+np) // each document's own difficulty
	for j := range hard {
		hard[j] = -2 - 2*rng.Float64()
	}
	var rows []runfiles.MIASignal
	row := func(model string, idx int, j int, member bool) {
		split := "validation"
		if j < nc/2 {
			split = splitTarget
		} else if j < nc {
			split = splitControl
		}
		n := 20 + j%7
		mean := hard[j] + 0.1*rng.NormFloat64()
		if member {
			mean += 0.3
		}
		rows = append(rows, runfiles.MIASignal{Model: model, RefIndex: idx, DocID: int64(100 + j), Split: split,
			TrainedOn: member, NTokens: n, LLSum: mean * float64(n), LLMean: mean})
	}
	for j := 0; j < nc+np; j++ {
		row(runfiles.TargetModel, -1, j, j < nc/2)
	}
	for k := 0; k < K; k++ {
		for j := 0; j < nc+np; j++ {
			row("ref", k, j, j < nc && in[k][j])
		}
	}
	path := filepath.Join(t.TempDir(), runfiles.MIASignalsFile)
	if err := atomicfile.Write(path, func(w io.Writer) error { return runfiles.MIASignals.WriteParquet(w, rows) }); err != nil {
		t.Fatal(err)
	}
	return path, rows
}

// TestCalibratedFromSignals: the calibrated columns eval writes are what
// the published formulas give when recomputed here from the signals file
// alone, written out naively (per-candidate loops, Gaussian densities,
// erfc, the RMIA double loop) rather than through package calibrated.
func TestCalibratedFromSignals(t *testing.T) {
	const nc, np, K = 40, 12, 8
	path, sig := syntheticSignals(t, nc, np, K)
	cfg := calibrated.DefaultConfig()
	cfg.LiRAGlobalVariance, cfg.RMIAA = false, 0.3
	rows := make([]Score, nc)
	for j := range rows {
		rows[j] = Score{DocID: int64(100 + j), Split: splitControl, Repetitions: 1 + j%4}
		if j < nc/2 {
			rows[j].Split = splitTarget
		}
	}
	sum, err := applyCalibrated(rows, path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sum.References != K || sum.Candidates != nc || sum.Population != np {
		t.Fatalf("summary counts %+v", sum)
	}
	if got := []int{sum.ByReferences[0].K, sum.ByReferences[len(sum.ByReferences)-1].K}; got[0] != 1 || got[1] != K {
		t.Errorf("by_references runs from %d to %d, want 1 to %d", got[0], got[1], K)
	}
	// One row per K of 1, 2, 4, 8: no row repeated at the end.
	if len(sum.ByReferences) != 4 {
		t.Errorf("by_references has %d rows, want 4 (K = 1, 2, 4, 8)", len(sum.ByReferences))
	}
	// Rearrange the file's rows by model and document.
	tgt := map[int64]runfiles.MIASignal{}
	refs := make([]map[int64]runfiles.MIASignal, K)
	for k := range refs {
		refs[k] = map[int64]runfiles.MIASignal{}
	}
	for _, r := range sig {
		if r.RefIndex < 0 {
			tgt[r.DocID] = r
		} else {
			refs[r.RefIndex][r.DocID] = r
		}
	}
	logit := func(s float64) float64 { return s - math.Log(-math.Expm1(s)) }
	logpdf := func(x, mu, sd float64) float64 {
		return -0.5*math.Log(2*math.Pi) - math.Log(sd) - (x-mu)*(x-mu)/(2*sd*sd)
	}
	stats := func(xs []float64) (mu, sd float64) {
		for _, x := range xs {
			mu += x
		}
		mu /= float64(len(xs))
		for _, x := range xs {
			sd += (x - mu) * (x - mu)
		}
		return mu, math.Sqrt(sd/float64(len(xs))) + 1e-30
	}
	pz := func(k int, id int64) float64 { return math.Exp(refs[k][id].LLMean) }
	var popIDs []int64
	for id, r := range tgt {
		if r.Split == "validation" {
			popIDs = append(popIDs, id)
		}
	}
	sort.Slice(popIDs, func(a, b int) bool { return popIDs[a] < popIDs[b] })
	for _, r := range rows {
		var inL, outL, inM, outM, outP []float64
		var allP float64
		for k := 0; k < K; k++ {
			s := refs[k][r.DocID]
			allP += math.Exp(s.LLMean)
			if s.TrainedOn {
				inL, inM = append(inL, logit(s.LLSum)), append(inM, s.LLMean)
			} else {
				outL, outM, outP = append(outL, logit(s.LLSum)), append(outM, s.LLMean), append(outP, math.Exp(s.LLMean))
			}
		}
		x := logit(tgt[r.DocID].LLSum)
		mi, si := stats(inL)
		mo, so := stats(outL)
		wantOnline := logpdf(x, mi, si) - logpdf(x, mo, so)
		wantOffline := math.Log(0.5 * math.Erfc(-(x-mo)/so/math.Sqrt2))
		// RMIA: Pr(x) over all models (online) or the OUT models with a.
		px := math.Exp(tgt[r.DocID].LLMean)
		rmia := func(prX func() float64, prZ func(id int64) float64) float64 {
			hits := 0
			for _, z := range popIDs {
				lr := (px / prX()) / (math.Exp(tgt[z].LLMean) / prZ(z))
				if lr >= cfg.RMIAGamma {
					hits++
				}
			}
			return float64(hits) / float64(len(popIDs))
		}
		meanZ := func(id int64) float64 {
			s := 0.0
			for k := 0; k < K; k++ {
				s += pz(k, id)
			}
			return s / K
		}
		a := cfg.RMIAA
		wantRMIA := rmia(func() float64 { return allP / K }, meanZ)
		wantRMIAOff := rmia(func() float64 {
			m, _ := stats(outP)
			return ((1+a)*m + (1 - a)) / 2
		}, func(id int64) float64 { return ((1+a)*meanZ(id) + (1 - a)) / 2 })
		mIn, _ := stats(inM)
		mOut, _ := stats(outM)
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"lira_online", r.Stats[AttackLiRAOnline], wantOnline},
			{"lira_offline", r.Stats[AttackLiRAOffline], wantOffline},
			{"rmia", r.Stats[AttackRMIA], wantRMIA},
			{"rmia_offline", r.Stats[AttackRMIAOffline], wantRMIAOff},
			{"counterfactual_mem", r.Stats[AttackCounterfactual], mIn - mOut},
		} {
			if d := math.Abs(c.got - c.want); !(d <= 1e-6*math.Max(1, math.Abs(c.want))) {
				t.Errorf("doc %d %s = %.10g, recomputed %.10g", r.DocID, c.name, c.got, c.want)
			}
		}
	}
	// The members' likelihood rises under models that trained on them, so
	// the online attack must separate them.
	if auc := sum.ByReferences[len(sum.ByReferences)-1].Attacks[AttackLiRAOnline].AUC; !(auc > 0.75) {
		t.Errorf("LiRA online AUC %v with %d references, want > 0.75", auc, K)
	}
}

// TestCalibratedByReferencesIsMIA: calibrated.by_references with all K
// references is mia.<attack>, the same documents and the same numbers,
// also when extract.max_docs or extract.splits attack fewer documents than
// the references scored. It was computed over every candidate in
// mia_signals.parquet: with 2 of 4 targets and 2 of 4 controls attacked,
// LiRA online's AUC read 1.0 under mia and 0.75 under by_references, and
// with only the targets attacked, null under mia and 0.75 over controls
// the user had left out.
func TestCalibratedByReferencesIsMIA(t *testing.T) {
	const nc, np, K = 40, 12, 4
	path, _ := syntheticSignals(t, nc, np, K)
	docs := func(from, to int) []int {
		var out []int
		for j := from; j < to; j++ {
			out = append(out, j)
		}
		return out
	}
	for _, tc := range []struct {
		name              string
		docs              []int // candidates attacked; the first nc/2 are targets
		members, controls int
	}{
		{"every candidate", docs(0, nc), nc / 2, nc / 2},
		{"max_docs 5", append(docs(0, 5), docs(nc/2, nc/2+5)...), 5, 5},
		{"splits target", docs(0, nc/2), nc / 2, 0},
		{"splits control", docs(nc/2, nc), 0, nc / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := make([]Score, len(tc.docs))
			for i, j := range tc.docs {
				rows[i] = Score{DocID: int64(100 + j), Split: splitControl, Repetitions: 1 + j%4}
				if j < nc/2 {
					rows[i].Split = splitTarget
				}
			}
			cal, err := applyCalibrated(rows, path, calibrated.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			if cal.Candidates != nc {
				t.Errorf("calibrated.candidates = %d, want the %d the references scored", cal.Candidates, nc)
			}
			cfg := DefaultConfig()
			cfg.Bootstrap = 0
			mia := Summarize(rows, cfg, loss.Config{Strategy: loss.StrategyNone}).MIA
			if mia.NMembers != tc.members || mia.NControls != tc.controls {
				t.Fatalf("mia counts %d members, %d controls, want %d, %d", mia.NMembers, mia.NControls, tc.members, tc.controls)
			}
			same := func(a, b Num) bool { return a == b || math.IsNaN(float64(a)) && math.IsNaN(float64(b)) }
			last := cal.ByReferences[len(cal.ByReferences)-1]
			if last.K != K {
				t.Fatalf("last by_references row has K = %d, want %d", last.K, K)
			}
			for _, st := range CalibratedAttacks() {
				got, want := last.Attacks[st.Name], mia.Stat(st.Name)
				if !same(got.AUC, want.AUC) || !same(got.TPR0_1, want.TPR0_1) || !same(got.TPR1, want.TPR1) {
					t.Errorf("%s at K = %d: AUC %v, TPR %v %v; mia.%s: AUC %v, TPR %v %v", st.Name, K,
						got.AUC, got.TPR0_1, got.TPR1, st.Name, want.AUC, want.TPR0_1, want.TPR1)
				}
				if got.NMembers != mia.NMembers || got.NControls != mia.NControls {
					t.Errorf("%s at K = %d over %d members, %d controls; mia over %d, %d", st.Name, K,
						got.NMembers, got.NControls, mia.NMembers, mia.NControls)
				}
			}
		})
	}
}

// TestRMIAChosenA: with rmia_a = -1 eval picks a from the grid with
// reference 0 as the target, records it, and scores exactly as the same a
// given by hand.
func TestRMIAChosenA(t *testing.T) {
	path, _ := syntheticSignals(t, 40, 12, 8)
	score := func(a float64) ([]Score, *CalibratedSummary) {
		rows := make([]Score, 40)
		for j := range rows {
			rows[j] = Score{DocID: int64(100 + j), Split: splitControl}
		}
		cfg := calibrated.DefaultConfig()
		cfg.RMIAA = a
		sum, err := applyCalibrated(rows, path, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return rows, sum
	}
	auto, sum := score(-1)
	a := sum.RMIAA
	if !(a >= 0 && a <= 1) || math.Abs(a*20-math.Round(a*20)) > 1e-9 {
		t.Fatalf("chosen a = %v, want one of 0, 0.05, ..., 1", a)
	}
	// Each by_references row records the a chosen among its own K
	// references: 1 below four (no OUT model for some candidates), the
	// summary's at all K; a given a is every row's.
	for _, row := range sum.ByReferences {
		want, err := (func() (float64, error) {
			m, err := readSignals(path)
			if err != nil {
				return 0, err
			}
			return m.offlineA(row.K, calibrated.Config{RMIAA: -1, RMIAGamma: calibrated.DefaultConfig().RMIAGamma})
		})()
		if err != nil {
			t.Fatal(err)
		}
		if row.RMIAA != want || row.K < 4 && row.RMIAA != 1 || row.K == 8 && row.RMIAA != a {
			t.Errorf("by_references K = %d: rmia_a %v, want %v (chosen among its %d references; %v at K = 8)", row.K, row.RMIAA, want, row.K, a)
		}
	}
	byHand, given := score(a)
	for _, row := range given.ByReferences {
		if row.RMIAA != a {
			t.Errorf("rmia_a = %v given: by_references K = %d records %v", a, row.K, row.RMIAA)
		}
	}
	for i := range auto {
		if auto[i].Stats[AttackRMIAOffline] != byHand[i].Stats[AttackRMIAOffline] {
			t.Fatalf("doc %d: rmia_offline %v with a chosen, %v with a = %v given", auto[i].DocID, auto[i].Stats[AttackRMIAOffline], byHand[i].Stats[AttackRMIAOffline], a)
		}
	}
}

// TestRMIAChosenAIsTheArgmax: the a eval picks (rmia_a = -1) is the one a
// naive re-implementation of the documented procedure finds best: offline
// RMIA with reference 0 as the target and references 1..7 as its
// references, its AUC on reference 0's own members and non-members at each
// a of 0, 0.05, ..., 1, the highest winning (the smallest on ties).
// TestRMIAChosenA checks only that the a recorded is the a used; this
// pins the choice itself: members and non-members swapped, or the grid
// stopping short of a = 1, pick another a.
func TestRMIAChosenAIsTheArgmax(t *testing.T) {
	const nc, np, K = 40, 12, 8
	path, sig := syntheticSignals(t, nc, np, K)
	refs := make([]map[int64]runfiles.MIASignal, K)
	for k := range refs {
		refs[k] = map[int64]runfiles.MIASignal{}
	}
	for _, r := range sig {
		if r.RefIndex >= 0 {
			refs[r.RefIndex][r.DocID] = r
		}
	}
	p := func(k int, id int64) float64 { return math.Exp(refs[k][id].LLMean) }
	// naiveAUC is P(m > c) + ½·P(m = c) over all pairs, NaN left out.
	naiveAUC := func(mem, non []float64) float64 {
		var wins float64
		n := 0
		for _, x := range mem {
			for _, y := range non {
				if math.IsNaN(x) || math.IsNaN(y) {
					continue
				}
				n++
				if x > y {
					wins++
				} else if x == y {
					wins += 0.5
				}
			}
		}
		return wins / float64(n)
	}
	gamma := calibrated.DefaultConfig().RMIAGamma
	want, wantAUC := -1.0, math.Inf(-1)
	aucs := make([]float64, 21)
	for i := range aucs {
		a := float64(i) / 20
		prior := func(mean float64) float64 { return ((1+a)*mean + (1 - a)) / 2 }
		var mem, non []float64
		for j := 0; j < nc; j++ {
			id := int64(100 + j)
			var s float64
			n := 0
			for k := 1; k < K; k++ {
				if !refs[k][id].TrainedOn {
					s += p(k, id)
					n++
				}
			}
			score := math.NaN()
			if n > 0 {
				hits := 0
				for z := int64(100 + nc); z < 100+nc+np; z++ {
					var sz float64
					for k := 1; k < K; k++ {
						sz += p(k, z)
					}
					if (p(0, id)/prior(s/float64(n)))/(p(0, z)/prior(sz/(K-1))) >= gamma {
						hits++
					}
				}
				score = float64(hits) / np
			}
			if refs[0][id].TrainedOn {
				mem = append(mem, score)
			} else {
				non = append(non, score)
			}
		}
		aucs[i] = naiveAUC(mem, non)
		if aucs[i] > wantAUC {
			want, wantAUC = a, aucs[i]
		}
	}
	t.Logf("naive offline RMIA AUC by a = 0, 0.05, ..., 1: %.4f", aucs)
	// The synthetic data put the best a at the grid's last point, so the
	// test also covers the end of the grid.
	if want != 1 {
		t.Fatalf("naive offline RMIA's best a = %v (AUCs by a: %v); the test expects the data to favour a = 1", want, aucs)
	}
	rows := make([]Score, nc)
	for j := range rows {
		rows[j] = Score{DocID: int64(100 + j), Split: splitControl}
	}
	sum, err := applyCalibrated(rows, path, calibrated.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if sum.RMIAA != want {
		t.Errorf("chosen rmia_a = %v, want %v (naive AUC %v there, %v at the chosen a)", sum.RMIAA, want, wantAUC, aucs[int(math.Round(sum.RMIAA*20))])
	}
}

// TestRMIAChosenASmallestOnTies: when every a on the grid gives the same
// AUC, offlineA keeps the smallest, a = 0, as documented; taking the last
// of the tied (>= instead of >) gives a = 1. Reference 0 plays the target
// over 4 candidates and 3 population samples; references 1-3 give every
// document p = 0.5, so every OUT mean is 0.5 whatever a, the likelihood
// ratios are p(x)/p(z) under reference 0, and reference 0's members
// (candidates 0 and 2, p = 0.4 and 0.3) outscore its non-members
// (candidates 1 and 3, p = 0.1 and 0.2) at every a: AUC 1 throughout.
func TestRMIAChosenASmallestOnTies(t *testing.T) {
	sig := func(p float64) runfiles.MIASignal { return runfiles.MIASignal{LLMean: math.Log(p)} }
	rows := func(ps ...float64) []runfiles.MIASignal {
		out := make([]runfiles.MIASignal, len(ps))
		for i, p := range ps {
			out[i] = sig(p)
		}
		return out
	}
	half := rows(0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5)
	m := &signalMatrix{
		candidates: []int64{0, 1, 2, 3},
		population: []int64{4, 5, 6},
		// Candidates first, then the population.
		ref: [][]runfiles.MIASignal{rows(0.4, 0.1, 0.3, 0.2, 0.15, 0.25, 0.35), half, half, half},
		// in[k][j]: reference k trained on candidate j. Each candidate has
		// an OUT model among references 1-3.
		in: [][]bool{{true, false, true, false}, {false, true, false, true}, {true, true, false, false}, {false, false, true, true}},
	}
	m.tgt = m.ref[0]
	a, err := m.offlineA(4, calibrated.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if a != 0 {
		t.Errorf("every a gives AUC 1: chosen a = %v, want 0 (the smallest)", a)
	}
}

// TestReferenceCounts: the by-references table's K are 1, 2, 4, ... below
// K, then K itself, each once; a loop running to k <= K would repeat K when
// it is a power of two.
func TestReferenceCounts(t *testing.T) {
	for _, tc := range []struct {
		K    int
		want []int
	}{
		{1, []int{1}},
		{2, []int{1, 2}},
		{4, []int{1, 2, 4}},
		{6, []int{1, 2, 4, 6}},
		{8, []int{1, 2, 4, 8}},
	} {
		if got := referenceCounts(tc.K); !slices.Equal(got, tc.want) {
			t.Errorf("referenceCounts(%d) = %v, want %v", tc.K, got, tc.want)
		}
	}
}

// TestCalibratedBadSignals: a signals file that cannot be scored is
// refused with a reason.
func TestCalibratedBadSignals(t *testing.T) {
	_, sig := syntheticSignals(t, 10, 4, 2)
	write := func(rows []runfiles.MIASignal) string {
		p := filepath.Join(t.TempDir(), runfiles.MIASignalsFile)
		if err := atomicfile.Write(p, func(w io.Writer) error { return runfiles.MIASignals.WriteParquet(w, rows) }); err != nil {
			t.Fatal(err)
		}
		return p
	}
	missing := append([]runfiles.MIASignal(nil), sig[:len(sig)-1]...)
	dup := append(append([]runfiles.MIASignal(nil), sig...), sig[len(sig)-1])
	popIn := append([]runfiles.MIASignal(nil), sig...)
	popIn[len(popIn)-1].TrainedOn = true
	for name, rows := range map[string][]runfiles.MIASignal{"missing row": missing, "duplicate row": dup, "population trained on": popIn} {
		if _, err := applyCalibrated(nil, write(rows), calibrated.DefaultConfig()); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestCalibratedNotThisRun: signals that are not the run's are refused,
// not scored into null AUCs or another K: a file missing while
// mia.references asks for it, one of another reference count, and one that
// scores none of the run's targets and controls (another seed's).
func TestCalibratedNotThisRun(t *testing.T) {
	const nc, np, K = 10, 4, 2
	path, _ := syntheticSignals(t, nc, np, K)
	rows := func(first int64) []Score {
		out := make([]Score, nc)
		for j := range out {
			out[j] = Score{DocID: first + int64(j), Split: splitControl}
			if j < nc/2 {
				out[j].Split = splitTarget
			}
		}
		return out
	}
	withK := func(k int) calibrated.Config {
		cfg := calibrated.DefaultConfig()
		cfg.References = k
		return cfg
	}
	if _, err := applyCalibrated(rows(100), path, withK(K)); err != nil {
		t.Fatalf("the run's own signals: %v", err)
	}
	for _, tc := range []struct {
		name string
		rows []Score
		path string
		cfg  calibrated.Config
		want string
	}{
		{"missing", rows(100), filepath.Join(t.TempDir(), runfiles.MIASignalsFile), withK(K), "is missing, and mia.references = 2 asks for calibrated attacks"},
		{"another K", rows(100), path, withK(4), "holds the signals of 2 reference models, and mia.references = 4"},
		{"another run's documents", rows(500), path, withK(K), "scores no calibrated signal for 10 of the attacked targets and controls (doc_id 500 first)"},
	} {
		if _, err := applyCalibrated(tc.rows, tc.path, tc.cfg); err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want bad input saying %q", tc.name, err, tc.want)
		}
	}
}

// TestCalibratedUnscoredPopulation: population samples with no mean
// log-likelihood under the target or a reference (NaN: a one-token
// window) are left out, and the scores are those of a file without them,
// rather than eval failing on them.
func TestCalibratedUnscoredPopulation(t *testing.T) {
	const nc, np, K = 10, 6, 4
	_, sig := syntheticSignals(t, nc, np, K)
	write := func(rows []runfiles.MIASignal) string {
		p := filepath.Join(t.TempDir(), runfiles.MIASignalsFile)
		if err := atomicfile.Write(p, func(w io.Writer) error { return runfiles.MIASignals.WriteParquet(w, rows) }); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Document 100+nc is unscored under the target, 100+nc+3 under
	// reference 2; without is the file with neither.
	unscored := func(r runfiles.MIASignal) bool {
		return (r.DocID == 100+nc && r.RefIndex == -1) || (r.DocID == 100+nc+3 && r.RefIndex == 2)
	}
	dropped := func(r runfiles.MIASignal) bool { return r.DocID == 100+nc || r.DocID == 100+nc+3 }
	var with, without []runfiles.MIASignal
	for _, r := range sig {
		if !dropped(r) {
			without = append(without, r)
		}
		if unscored(r) {
			r.LLMean, r.LLSum, r.NTokens = math.NaN(), 0, 0
		}
		with = append(with, r)
	}
	cfg := calibrated.DefaultConfig()
	score := func(path string) ([]Score, *CalibratedSummary) {
		rows := make([]Score, nc)
		for j := range rows {
			rows[j] = Score{DocID: int64(100 + j), Split: splitControl}
			if j < nc/2 {
				rows[j].Split = splitTarget
			}
		}
		sum, err := applyCalibrated(rows, path, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return rows, sum
	}
	gotRows, got := score(write(with))
	wantRows, want := score(write(without))
	if got.Population != np-2 || want.Population != np-2 {
		t.Errorf("population %d and %d, want %d", got.Population, want.Population, np-2)
	}
	for j := range gotRows {
		for _, a := range []string{AttackRMIA, AttackRMIAOffline} {
			if g, w := gotRows[j].Stats[a], wantRows[j].Stats[a]; g != w {
				t.Errorf("doc %d %s = %v, without the unscored samples %v", gotRows[j].DocID, a, g, w)
			}
		}
	}
}

func TestSpearman(t *testing.T) {
	for _, c := range []struct {
		x, y []float64
		want float64
	}{
		{[]float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}, 1},
		{[]float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}, -1},
		// Ranks of y with a tie: 1, 2.5, 2.5, 4 against 1..4: r = 4.5/sqrt(5*4.5) = 0.9487.
		{[]float64{1, 2, 3, 4}, []float64{1, 5, 5, 9}, 4.5 / math.Sqrt(5*4.5)},
	} {
		if got := Spearman(c.x, c.y); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Spearman(%v, %v) = %v, want %v", c.x, c.y, got, c.want)
		}
	}
	if !math.IsNaN(Spearman([]float64{1, 1, 1}, []float64{1, 2, 3})) {
		t.Error("constant x gave a number")
	}
}
