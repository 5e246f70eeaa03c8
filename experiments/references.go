package experiments

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/eval/calibrated"
	"github.com/memo-research/memo/extract"
	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/internal/runlock"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/train"
)

// MIAReferencesFile records, in a run directory, the reference models its
// mia_signals.parquet was computed from.
const MIAReferencesFile = "mia_references.json"

// referenceRecord is one reference model: where it is, its key, and the
// candidates it trained on.
type referenceRecord struct {
	Index int    `json:"index"`
	Key   string `json:"key"`
	Dir   string `json:"dir"`
	// Dataset is the sha256 of the dataset's docs.arrow, tokens.arrow and
	// tokenizer.json (report.json's checksums), the pool it was cut from.
	Dataset map[string]string `json:"dataset"`
	// Members are the candidates (doc_ids) it trained on, each with its
	// repetitions.
	Members []referenceMember `json:"members"`
	Trained bool              `json:"trained"`
	// Base is the digest of the weights it started from, as its key
	// holds it ("" for the model seed's).
	Base string `json:"base,omitempty"`
	// Workers and Threads are the thread layout it trained under, from
	// its checkpoint, and Layouts every layout when a resume changed it
	// (checkpoint.State's). The key leaves the thread count out, so that
	// references trained apart (memo references train, an array task on
	// one core) serve a run on more; their last bits are those of the
	// layout recorded here, which may not be the run's own.
	Workers int                       `json:"workers,omitempty"`
	Threads int                       `json:"threads,omitempty"`
	Layouts []checkpoint.ThreadLayout `json:"layouts,omitempty"`
}

// readLayout fills r's thread layout from its newest checkpoint's
// state.json; left empty when there is none to read (the scorer then says
// what is wrong).
func (r *referenceRecord) readLayout() {
	dir, err := checkpoint.Newest(r.Dir)
	if err != nil || dir == "" {
		return
	}
	st, err := checkpoint.ReadState(dir)
	if err != nil {
		return
	}
	r.Workers, r.Threads, r.Layouts = st.Workers, st.Threads, st.Layouts
}

// warnOtherLayout says when a reference found trained was trained under
// another thread layout than this run's training would use: the run's
// calibrated scores then differ in the last bits from a run that trained
// every model itself (docs/LIMITS.md).
func warnOtherLayout(r *referenceRecord, K int, tc train.Config) {
	workers, threads := train.ThreadLayout(tc.Threads)
	if r.Threads == 0 || (r.Workers == workers && r.Threads == threads && len(r.Layouts) == 0) {
		return
	}
	slog.Warn("mia: reusing a reference model trained under another thread layout; its weights, and the calibrated scores, differ in the last bits from one trained under this run's (mia_references.json records each model's)",
		"reference", referenceLabel(r.Index, K), "trained_workers", r.Workers, "trained_threads", r.Threads, "resumed_under_others", len(r.Layouts) > 0,
		"this_run_workers", workers, "this_run_threads", threads)
}

type referenceMember struct {
	DocID       int64 `json:"doc_id"`
	Repetitions int32 `json:"repetitions"`
}

// referencesFile is mia_references.json.
type referencesFile struct {
	References int   `json:"references"`
	Seed       int64 `json:"seed"`
	// Format is the referenceKeyFormat the keys were made with; 0 in a
	// file written before it was recorded (staleReferences).
	Format int               `json:"key_format,omitempty"`
	Models []referenceRecord `json:"models"`
}

// referencePool is the candidate pool of a dataset, targets then controls
// by doc_id, and the repetitions each gets in a reference model that
// trains on it: a target its own; control i those of target i (mod the
// number of targets), so that with data.repetition_groups a control is
// seen as often, when trained on, as the target in its place.
func referencePool(ds *data.Dataset) (docs []data.Doc, reps []int32, population []data.Doc, err error) {
	targets, err := ds.Docs(data.SplitTarget)
	if err != nil {
		return nil, nil, nil, err
	}
	controls, err := ds.Docs(data.SplitControl)
	if err != nil {
		return nil, nil, nil, err
	}
	population, err = ds.Docs(data.SplitValidation)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(targets) == 0 || len(controls) == 0 {
		return nil, nil, nil, badinput.Errorf("mia.references: the dataset has %d targets and %d controls; the calibrated attacks need both (data.targets, data.controls)", len(targets), len(controls))
	}
	if len(population) == 0 {
		return nil, nil, nil, badinput.Errorf("mia.references: the dataset has no validation documents; RMIA compares each candidate with population samples, which memo takes from the validation split (data.validation >= 1)")
	}
	docs = append(append(docs, targets...), controls...)
	for _, t := range targets {
		reps = append(reps, int32(max(1, t.Repetitions)))
	}
	for i := range controls {
		reps = append(reps, reps[i%len(targets)])
	}
	return docs, reps, population, nil
}

// referenceSeed is reference k's seed derived from the target's: each
// reference starts from other weights and reads its data in another order.
func referenceSeed(seed int64, k int) int64 { return seed + 7919*int64(k+1) }

// referencesStage trains the spec's reference models (or finds them in the
// cache) and writes mia_signals.parquet: the summed and mean window
// log-likelihood of every candidate and population document under the
// target model and each reference. A run without mia.references does
// nothing.
func referencesStage(ctx context.Context, spec *Spec, dir string) error {
	return trainReferences(ctx, spec, dir, nil, true)
}

// TrainReferences trains the reference models of spec with the given
// indices (all when none) into the cache, from the dataset of its run
// directory under runsRoot, which must be built (`memo run --stages data`).
// Processes may train different indices at once, on one machine or as a
// Slurm array; `memo run` then finds them trained and only scores.
func TrainReferences(ctx context.Context, spec *Spec, runsRoot string, indices []int) error {
	K := spec.MIA.References
	if K == 0 {
		return badinput.Errorf("%s: mia.references = 0: the spec has no reference models to train", spec.file)
	}
	for _, k := range indices {
		if k < 0 || k >= K {
			return badinput.Errorf("reference index %d: want 0 to %d (mia.references = %d)", k, K-1, K)
		}
	}
	dir := RunDir(spec, runsRoot)
	if _, err := os.Stat(filepath.Join(dir, "data", "report.json")); err != nil {
		// The command to paste must build where this one looks.
		runs := ""
		if filepath.Clean(runsRoot) != "runs" {
			runs = " --runs " + shellWord(runsRoot)
		}
		return badinput.Errorf("%s has no dataset yet: build it first with `memo run --stages data%s %s`", dir, runs, spec.commandArgs())
	}
	// References trained on a run directory of another spec are for no run
	// memo run would go on with there: a review trained a whole array for
	// 12 candidates on a dataset of 8 before memo run refused the spec.
	conf, err := spec.TOML()
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(filepath.Join(dir, runfiles.ConfigFile)); err == nil && !bytes.Equal(old, conf) {
		return badinput.Errorf("%s was made from another spec%s: memo run refuses this one there; train the references with the run's spec, or give this one another name", dir, differNote(old, conf))
	}
	return trainReferences(ctx, spec, dir, indices, false)
}

// referencePlan is what a run's references are: the dataset and its
// candidate pool, who is in each reference, and each reference's record
// (key, cache directory, members) with its model and training settings.
type referencePlan struct {
	ds               *data.Dataset
	pool, population []data.Doc
	in               [][]bool
	records          []referenceRecord
	models           []model.Config
	trains           []train.Config
	views            []*data.Dataset
	references       int
	seed             int64
	dsSums           map[string]string
	goldfish         loss.Config
}

// keyWith is reference i's key had it started from weights of digest
// base.
func (p *referencePlan) keyWith(i int, base string) (string, error) {
	return referenceKey(p.dsSums, base, p.models[i], p.trains[i], p.goldfish, p.records[i].Members)
}

// planReferences works out the references of indices (all when nil) of
// the run in dir, without training any.
func planReferences(spec *Spec, dir string, indices []int) (*referencePlan, error) {
	K := spec.MIA.References
	ds, err := data.Open(dir)
	if err != nil {
		return nil, err
	}
	pool, reps, population, err := referencePool(ds)
	if err != nil {
		return nil, err
	}
	in, err := calibrated.Assign(len(pool), K, uint64(spec.Seed))
	if err != nil {
		return nil, badinput.Errorf("mia.references = %d: %w", K, err)
	}
	mcfg, tcfg, err := trainConfigs(spec, ds)
	if err != nil {
		return nil, err
	}
	// The weights a fine-tune starts from are named by their digest: the
	// path alone would find references trained on a base since replaced.
	var base string
	if tcfg.InitFrom != "" {
		if base, err = checkpoint.SourceDigest(tcfg.InitFrom); err != nil {
			return nil, importLabel(badinput.Errorf("train.init_from = %q: %w", tcfg.InitFrom, err), spec.Model.InitFrom, tcfg.InitFrom)
		}
	}
	root := ReferencesDir(data.ResolveCacheDir(spec.Data.CacheDir))
	dsSums := referenceDataset(ds.Report())
	p := &referencePlan{ds: ds, pool: pool, population: population, in: in, references: K, seed: spec.Seed, dsSums: dsSums, goldfish: spec.Goldfish}
	for k := 0; k < K; k++ {
		if indices != nil && !slices.Contains(indices, k) {
			continue
		}
		r := referenceRecord{Index: k, Dataset: dsSums, Base: base}
		members := map[int64]int32{}
		for j, d := range pool {
			if in[k][j] {
				members[d.ID] = reps[j]
				r.Members = append(r.Members, referenceMember{d.ID, reps[j]})
			}
		}
		rm, rt := referenceConfigs(mcfg, tcfg, k)
		if r.Key, err = referenceKey(dsSums, base, rm, rt, spec.Goldfish, r.Members); err != nil {
			return nil, err
		}
		r.Dir = filepath.Join(root, r.Key)
		view, err := ds.WithMembers(members)
		if err != nil {
			return nil, err
		}
		p.records = append(p.records, r)
		p.models, p.trains, p.views = append(p.models, rm), append(p.trains, rt), append(p.views, view)
	}
	return p, nil
}

// trainReferences trains (or finds trained) the references of indices
// (all when nil) and, with signals, writes mia_signals.parquet.
func trainReferences(ctx context.Context, spec *Spec, dir string, indices []int, signals bool) error {
	if spec.MIA.References == 0 {
		return nil
	}
	p, err := planReferences(spec, dir, indices)
	if err != nil {
		return err
	}
	rec := referencesFile{References: p.references, Seed: p.seed, Format: referenceKeyFormat}
	var sig *signalRows
	if signals {
		if sig, err = scoreTarget(ctx, spec, dir, p); err != nil {
			return err
		}
	}
	for i := range p.records {
		r := p.records[i]
		// Each reference is scored under the lock it is trained or found
		// under: `memo references rm` in between once removed a model the
		// run was about to score.
		var score func() error
		if sig != nil {
			score = func() error { return sig.addReference(ctx, r, p.references) }
		}
		if err := trainReference(ctx, &r, p.references, p.views[i], p.models[i], p.trains[i], spec, score); err != nil {
			return err
		}
		rec.Models = append(rec.Models, r)
	}
	if sig == nil {
		return nil
	}
	return sig.write(dir, rec)
}

// staleReferences says why the references a finished references stage
// recorded in dir (mia_references.json) are not the ones this memo would
// train for spec ("" when they are): they were made under other rules,
// which left the settings as they were (an older memo: 417a5f2 changed a
// LoRA reference's base, 2ea6f70 added the base's digest to the key). A
// run would otherwise keep calibrating against models trained under the
// old rules, beside points of the same sweep trained under the new.
//
// A file that records its key format is judged by it alone, at no cost.
// An older one is judged by its keys, remade with the weights each
// reference recorded or, before those were recorded, the digests the
// base had then (none, or a sharded directory's index): a base replaced
// since is not a change of rules, and the target, trained on the old
// one, stays with its references.
func staleReferences(spec *Spec, dir string) (string, error) {
	if spec.MIA.References == 0 {
		return "", nil
	}
	raw, err := os.ReadFile(filepath.Join(dir, MIAReferencesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return MIAReferencesFile + " is missing", nil
	}
	if err != nil {
		return "", err
	}
	var had referencesFile
	if err := json.Unmarshal(raw, &had); err != nil {
		return fmt.Sprintf("%s does not parse (%v)", MIAReferencesFile, err), nil
	}
	if had.Format != 0 {
		if had.Format != referenceKeyFormat {
			return fmt.Sprintf("%s records reference key format %d, this memo's is %d (the rules that make a reference changed)", MIAReferencesFile, had.Format, referenceKeyFormat), nil
		}
		return "", nil
	}
	p, err := planReferences(spec, dir, nil)
	if err != nil {
		// A base or dataset gone since the run finished: nothing to
		// compare with, and the run's results stand as they are.
		slog.Warn("mia: cannot check the run's reference models against this memo's rules; kept as they are", "run", spec.Name, "err", err)
		return "", nil
	}
	if len(had.Models) != len(p.records) {
		return fmt.Sprintf("%s records %d reference models, the spec has %d", MIAReferencesFile, len(had.Models), len(p.records)), nil
	}
	var bases []string // what the base's digest may have been
	if tc := p.trains[0]; tc.InitFrom != "" {
		bases = checkpoint.LegacySourceDigests(tc.InitFrom)
		bases = append(bases, "")
	}
	for i, r := range p.records {
		h := had.Models[i]
		if h.Key == r.Key {
			continue
		}
		same := false
		for _, base := range append([]string{h.Base}, bases...) {
			k, err := p.keyWith(i, base)
			if err != nil {
				return "", err
			}
			if k == h.Key {
				same = true
				break
			}
		}
		if !same {
			return fmt.Sprintf("reference %d was trained as %s, this memo trains it as %s (the rules that make a reference changed since)", r.Index, h.Key, r.Key), nil
		}
	}
	return "", nil
}

// referenceConfigs are reference k's model and training settings: the
// target's, with seeds of its own, trained in one process (this one, or
// `memo references train --index`'s), so never sharded over ranks —
// sharding changes where the training state lives, not what is learned.
// (Unsharded settings are left as given: they are in every key.)
//
// A LoRA target with no train.init_from adapts the model seed's own
// weights, its frozen base: its references keep that model seed, so that
// they adapt the same base (and start their adapters alike), differing in
// the documents and the stream's seed. With their own model seeds each
// adapted a random base of its own, and calibration compared other models.
func referenceConfigs(mc model.Config, tc train.Config, k int) (model.Config, train.Config) {
	if !tc.LoRA.Enabled || tc.InitFrom != "" {
		mc.Seed = referenceSeed(mc.Seed, k)
	}
	tc.Seed = referenceSeed(tc.Seed, k)
	if tc.Shard != "" && tc.Shard != train.ShardNone {
		tc.Shard, tc.ShardGroup = "", 0
	}
	return mc, tc
}

// referenceDataset is what of the dataset a reference's key names: its
// files' checksums, and the settings of report.json that shape the
// training stream from the same files, data.layout and
// data.pretrain_passes, where they are not the defaults (so that keys made
// before they were named stay valid for the default stream). Without them
// a packed target and a padded one, or one with pretraining passes, shared
// one set of references trained on one stream.
func referenceDataset(r data.Report) map[string]string {
	sums := map[string]string{}
	for name, f := range r.Files {
		sums[name] = f.SHA256
	}
	if r.Layout != "" && r.Layout != data.LayoutPadded {
		sums["report.json:layout"] = r.Layout
	}
	if n := r.Config.PretrainPasses; n > 0 {
		sums["report.json:pretrain_passes"] = strconv.Itoa(n)
	}
	return sums
}

// referenceKeyFormat is the key's format, recorded in mia_references.json:
// raise it whenever the rules that make a reference change while its
// settings do not, so that runs made before train their references again
// (staleReferences).
var referenceKeyFormat = 1

// referenceKey names a reference model by everything that determines its
// weights: the dataset's files, the digest of the weights it starts from
// (base, "" for the seed's), the model, training and goldfish settings
// with its seeds, and the candidates it trains on.
func referenceKey(dsSums map[string]string, base string, mc model.Config, tc train.Config, goldfish loss.Config, members []referenceMember) (string, error) {
	// The device and precision it trains on change what it learns in the
	// last bits; the key keeps them so that reuse stays exact. How often
	// it logs, checkpoints and keeps checkpoints and whether it may resume
	// change nothing it learns: the key holds the defaults for them, so
	// that keys made before stand and a new log_every does not train every
	// reference again. The thread count (--threads, train.threads) does
	// change the last bits on CPU, but is left out too, so that references
	// trained apart on one core serve a run on many: the record keeps the
	// layout each was trained under, and reuse under another is warned
	// about (warnOtherLayout). Base is left
	// out when empty, so that a reference trained from the seed keeps the
	// key it had before base was part of it.
	def := train.DefaultConfig()
	tc.LogEvery, tc.CheckpointEvery, tc.KeepCheckpoints, tc.NoResume, tc.Threads = def.LogEvery, def.CheckpointEvery, def.KeepCheckpoints, def.NoResume, def.Threads
	b, err := json.Marshal(struct {
		Format   int
		Dataset  map[string]string
		Base     string `json:",omitempty"`
		Model    model.Config
		Train    train.Config
		Goldfish loss.Config
		Members  []referenceMember
	}{referenceKeyFormat, dsSums, base, mc, tc, goldfish, members})
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:12]), nil
}

// referenceFile is a reference model's own record in its directory.
const referenceFile = "reference.json"

// trainReference trains reference r.Index into r.Dir, or finds it trained
// there. Training resumes from the directory's newest checkpoint, so a
// killed reference sweep run again ends with the weights an uninterrupted
// one has.
func trainReference(ctx context.Context, r *referenceRecord, K int, view *data.Dataset, mc model.Config, tc train.Config, spec *Spec, then func() error) error {
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return fmt.Errorf("reference %d: %w", r.Index, err)
	}
	// Another run (a sweep point, an array task) may be training this very
	// model: wait for it, then find it trained, rather than refuse.
	lock, err := runlock.Wait(ctx, r.Dir, RunLockStale, "mia: waiting for another process training this reference model")
	if err != nil {
		return fmt.Errorf("reference %s: %w", referenceLabel(r.Index, K), err)
	}
	stop := lock.Heartbeat(RunLockStale / 10)
	defer func() {
		stop()
		_ = lock.Release()
	}()
	path := filepath.Join(r.Dir, referenceFile)
	var have referenceRecord
	switch b, err := os.ReadFile(path); {
	case err == nil:
		if err := json.Unmarshal(b, &have); err != nil {
			return badinput.Errorf("reference %d: %s: %v (remove it with `memo references rm %s` to train it again)", r.Index, path, err, filepath.Base(r.Dir))
		}
		if !sameReference(have, *r) {
			return badinput.Errorf("reference %d: %s was trained on another pool or dataset than this run's (key %s): remove it to train it again", r.Index, r.Dir, have.Key)
		}
		if have.Trained {
			slog.Info("mia: reference model already trained", "reference", referenceLabel(r.Index, K), "dir", r.Dir)
			r.Trained = true
			r.readLayout()
			warnOtherLayout(r, K, tc)
			return runThen(then)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("reference %d: %w", r.Index, err)
	}
	if err := writeJSON(path, r); err != nil {
		return fmt.Errorf("reference %d: %w", r.Index, err)
	}
	start := time.Now()
	slog.Info("mia: training reference model", "reference", referenceLabel(r.Index, K), "members", len(r.Members), "dir", r.Dir)
	if err := train.Run(ctx, tc, mc, spec.Goldfish, datasetSource{view}, r.Dir, train.Options{Progress: true}); err != nil {
		return fmt.Errorf("reference %s: %w", referenceLabel(r.Index, K), err)
	}
	r.Trained = true
	r.readLayout()
	if err := writeJSON(path, r); err != nil {
		return fmt.Errorf("reference %d: %w", r.Index, err)
	}
	slog.Info("mia: reference model trained", "reference", referenceLabel(r.Index, K), "seconds", fmt.Sprintf("%.1f", time.Since(start).Seconds()))
	return runThen(then)
}

// runThen calls then, when there is one.
func runThen(then func() error) error {
	if then == nil {
		return nil
	}
	return then()
}

// sameReference says whether two records describe the same model.
func sameReference(a, b referenceRecord) bool {
	if a.Key != b.Key || len(a.Members) != len(b.Members) || len(a.Dataset) != len(b.Dataset) {
		return false
	}
	for i := range a.Members {
		if a.Members[i] != b.Members[i] {
			return false
		}
	}
	for k, v := range a.Dataset {
		if b.Dataset[k] != v {
			return false
		}
	}
	return true
}

func writeJSON(path string, v any) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	})
}

// signalRows are mia_signals.parquet's rows as the references stage
// scores them: the target's, then each reference's.
type signalRows struct {
	cfg  extract.Config
	ds   *data.Dataset
	docs []data.Doc // the candidates (the pool), then the population
	pool int        // how many candidates
	in   [][]bool
	rows []runfiles.MIASignal
}

// scoreTarget starts the rows with the target model's (the run's own
// checkpoint) over every candidate and population document.
func scoreTarget(ctx context.Context, spec *Spec, dir string, p *referencePlan) (*signalRows, error) {
	docs := append(append([]data.Doc(nil), p.pool...), p.population...)
	s := &signalRows{cfg: spec.ExtractStage(), ds: p.ds, docs: docs, pool: len(p.pool), in: p.in}
	lls, err := extract.WindowLikelihoods(ctx, s.cfg, filepath.Join(dir, checkpoint.DirName), s.ds, s.docs, "mia: target model")
	if err != nil {
		return nil, err
	}
	s.add(runfiles.TargetModel, -1, lls, func(j int) bool { return s.docs[j].Split == data.SplitTarget })
	return s, nil
}

func (s *signalRows) add(name string, idx int, lls []extract.WindowLikelihood, inOf func(j int) bool) {
	for j, d := range s.docs {
		s.rows = append(s.rows, runfiles.MIASignal{Model: name, RefIndex: idx, DocID: d.ID, Split: d.Split,
			TrainedOn: inOf(j), NTokens: lls[j].NTokens, LLSum: lls[j].Sum, LLMean: lls[j].Mean})
	}
}

// addReference scores reference r (of K) over the same documents.
func (s *signalRows) addReference(ctx context.Context, r referenceRecord, K int) error {
	// A damaged reference is trained again after its removal, not
	// repaired or replaced by an older step as a run's own checkpoint is.
	if newest, err := checkpoint.Newest(r.Dir); err == nil && newest != "" {
		if _, err := checkpoint.VerifyWeights(newest); err != nil {
			return badinput.Errorf("mia: reference %s: %v: remove it with `memo references rm %s` and run again to train it anew", referenceLabel(r.Index, K), err, filepath.Base(r.Dir))
		}
	}
	lls, err := extract.WindowLikelihoods(ctx, s.cfg, filepath.Join(r.Dir, checkpoint.DirName), s.ds, s.docs, "mia: reference "+referenceLabel(r.Index, K))
	if err != nil {
		return err
	}
	k := r.Index
	s.add(fmt.Sprintf("ref-%02d", k), k, lls, func(j int) bool { return j < s.pool && s.in[k][j] })
	return nil
}

// write writes mia_signals.parquet (ordered by model: the target, then
// references by index) and mia_references.json into the run directory.
func (s *signalRows) write(dir string, rec referencesFile) error {
	sort.SliceStable(s.rows, func(a, b int) bool { return s.rows[a].RefIndex < s.rows[b].RefIndex })
	out := filepath.Join(dir, runfiles.MIASignalsFile)
	if err := atomicfile.Write(out, func(w io.Writer) error { return runfiles.MIASignals.WriteParquet(w, s.rows) }); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	return writeJSON(filepath.Join(dir, MIAReferencesFile), rec)
}

// ReferenceEntry is one reference model in the cache, as `memo references
// ls` lists it.
type ReferenceEntry struct {
	Key, Dir string
	Index    int
	Members  int
	Trained  bool
	Bytes    int64
	Modified time.Time
	// Problem says why the entry could not be read; empty when it could.
	Problem string
}

// ReferencesDir is where reference models are kept under a cache root.
func ReferencesDir(cache string) string { return filepath.Join(cache, "references") }

// ListReferences lists the reference models under the cache root: every
// directory of CACHE/references that holds a reference.json, memo's
// marker. Anything else there is not memo's and is left out.
func ListReferences(cache string) ([]ReferenceEntry, error) {
	root := ReferencesDir(cache)
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []ReferenceEntry
	for _, e := range ents {
		dir := filepath.Join(root, e.Name())
		b, err := os.ReadFile(filepath.Join(dir, referenceFile))
		if !e.IsDir() || errors.Is(err, fs.ErrNotExist) {
			continue
		}
		ent := ReferenceEntry{Key: e.Name(), Dir: dir}
		var rec referenceRecord
		switch {
		case err != nil:
			ent.Problem = err.Error()
		case json.Unmarshal(b, &rec) != nil || rec.Key != e.Name():
			ent.Problem = "reference.json is damaged or names another key"
		default:
			ent.Index, ent.Members, ent.Trained = rec.Index, len(rec.Members), rec.Trained
		}
		_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if fi, err := d.Info(); err == nil {
					ent.Bytes += fi.Size()
					if fi.ModTime().After(ent.Modified) {
						ent.Modified = fi.ModTime()
					}
				}
			}
			return nil
		})
		out = append(out, ent)
	}
	return out, nil
}

// RemoveReference deletes the reference model key from the cache; it
// refuses a directory without memo's reference.json and one a process is
// training in (its memo.lock). A lock from another host whose heartbeat
// stopped RunLockStale ago is taken over, as training takes it over: a
// node that died mid-training would otherwise hold it for good.
func RemoveReference(cache, key string) error {
	return RemoveReferences(cache, []string{key})
}

// RemoveReferences removes the reference models keys from the cache, all
// or none: every key is checked, and every one's lock taken, before the
// first is removed, so that a typo in the last key loses nothing.
func RemoveReferences(cache string, keys []string) error {
	keys = slices.Compact(slices.Sorted(slices.Values(keys))) // each once: its lock is taken once
	dirs := make([]string, len(keys))
	for i, key := range keys {
		if key == "" || key != filepath.Base(key) || key[0] == '.' {
			return badinput.Errorf("references rm: %q is not a reference key (see `memo references ls`); nothing removed", key)
		}
		dir := filepath.Join(ReferencesDir(cache), key)
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return badinput.Errorf("references rm: no reference %s in %s (see `memo references ls`); nothing removed", key, ReferencesDir(cache))
		}
		if _, err := os.Stat(filepath.Join(dir, referenceFile)); err != nil {
			return badinput.Errorf("references rm: %s is not a reference model memo made (no %s); nothing removed", dir, referenceFile)
		}
		dirs[i] = dir
	}
	var locks []*runlock.Lock
	release := func() {
		for _, l := range locks {
			_ = l.Release()
		}
	}
	for _, dir := range dirs {
		lock, err := runlock.AcquireStaleAfter(dir, RunLockStale)
		if err != nil {
			release()
			return fmt.Errorf("references rm: %w; nothing removed", err)
		}
		locks = append(locks, lock)
	}
	// Each lock file goes with its directory.
	for _, dir := range dirs {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("references rm: %w", err)
		}
	}
	return nil
}

// referenceLabel names reference index of k as `references train --index`
// counts (from 0), with its place among them: "index 1 (2 of 4)".
func referenceLabel(index, k int) string {
	return fmt.Sprintf("index %d (%d of %d)", index, index+1, k)
}
