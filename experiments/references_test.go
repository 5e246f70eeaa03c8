package experiments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/internal/runlock"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/train"
)

// TestReferences trains exp/smoke.toml with two reference models and
// checks the calibrated attack's bookkeeping: every candidate is trained
// on by exactly one reference, a reference killed mid-training and run
// again gives signals identical to the uninterrupted run's, a trained
// reference is reused by another run, and a reference trained on another
// pool is refused.
func TestReferences(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three nano models; skipped with -short")
	}
	spec, err := Parse(filepath.Join("..", "exp", "smoke.toml"))
	if err != nil {
		t.Fatal(err)
	}
	spec.MIA.References = 2
	spec.Data.CacheDir = t.TempDir()
	spec.Train.CheckpointEvery, spec.Train.KeepCheckpoints = 10, 0
	run := func(name string) (string, error) {
		s := *spec
		s.Name = name
		return Run(context.Background(), &s, filepath.Join(t.TempDir(), "runs"), Options{})
	}
	dirA, err := run("a")
	if err != nil {
		t.Fatal(err)
	}
	sigA, refs := readSignalsAndRefs(t, dirA)
	// Each model's thread layout is recorded: the key leaves it out.
	for _, m := range refs.Models {
		if m.Workers < 1 || m.Threads < 1 {
			t.Errorf("reference %d: %s records workers %d, threads %d; want its checkpoint's layout", m.Index, MIAReferencesFile, m.Workers, m.Threads)
		}
	}
	// Each candidate is in exactly one of the two references.
	inCount := map[int64]int{}
	for _, r := range sigA {
		if r.RefIndex >= 0 && r.TrainedOn {
			inCount[r.DocID]++
		}
		if r.RefIndex == -1 && (r.Split == "target") != r.TrainedOn {
			t.Errorf("target row of doc %d (%s) has trained_on = %v", r.DocID, r.Split, r.TrainedOn)
		}
	}
	for _, r := range sigA {
		if (r.Split == "target" || r.Split == "control") && inCount[r.DocID] != 1 {
			t.Errorf("candidate %d is in %d references, want 1", r.DocID, inCount[r.DocID])
		}
	}
	scores, err := runfiles.NewTable[struct {
		DocID int64   `arrow:"doc_id"`
		LiRA  float64 `arrow:"lira_online"`
	}]("scores.parquet").ReadParquet(filepath.Join(dirA, "scores.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scores {
		if s.LiRA != s.LiRA {
			t.Errorf("doc %d: lira_online is NaN", s.DocID)
		}
	}

	// References an older memo trained under other rules (another key in
	// mia_references.json) are stale: run again, the stage trains what
	// this memo would and records its keys (a compatibility probe found
	// a resumed old run calibrating against the old references).
	sa := *spec
	sa.Name = "a"
	if why, err := staleReferences(&sa, dirA); err != nil || why != "" {
		t.Fatalf("a fresh run's references: stale %q, %v", why, err)
	}
	if refs.Format != referenceKeyFormat {
		t.Errorf("%s records key format %d, want %d", MIAReferencesFile, refs.Format, referenceKeyFormat)
	}
	// A change of rules raises the key format: the files are as the run
	// wrote them, and yet the stage runs again, under the new keys.
	referenceKeyFormat++
	defer func(f int) { referenceKeyFormat = f }(referenceKeyFormat - 1)
	why, err := staleReferences(&sa, dirA)
	if err != nil || !strings.Contains(why, "records reference key format 1, this memo's is 2") {
		t.Fatalf("older references: stale %q, %v; want the formats named", why, err)
	}
	if Finished(&sa, dirA) {
		t.Error("Finished, which a sweep skips points by, says a run with stale references is finished")
	}
	if _, err := Run(context.Background(), &sa, filepath.Dir(dirA), Options{}); err != nil {
		t.Fatal(err)
	}
	sig, again := readSignalsAndRefs(t, dirA)
	if again.Format != 2 || again.Models[0].Key == refs.Models[0].Key || again.Models[1].Key == refs.Models[1].Key {
		t.Errorf("the run kept the older references: format %d, keys %s, %s", again.Format, again.Models[0].Key, again.Models[1].Key)
	}
	if !reflect.DeepEqual(sig, sigA) {
		t.Error("references trained again under the same settings gave other signals")
	}
	referenceKeyFormat--
	if _, err := Run(context.Background(), &sa, filepath.Dir(dirA), Options{}); err != nil {
		t.Fatal(err)
	}
	// A file from before the format was recorded is judged by its keys:
	// today's keys, or keys made with the base each reference recorded
	// (a base replaced since is no change of rules: the target was
	// trained on the old one too), are not stale; another key is.
	p, err := planReferences(&sa, dirA, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := refs
	old.Format = 0
	old.Models = append([]referenceRecord(nil), refs.Models...)
	old.Models[1].Base = "0123456789abcdef"
	if old.Models[1].Key, err = p.keyWith(1, old.Models[1].Base); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key0, want string
	}{
		{refs.Models[0].Key, ""},
		{"0123456789abcdef01234567", "reference 0 was trained as 0123456789abcdef01234567, this memo trains it as " + refs.Models[0].Key},
	} {
		old.Models[0].Key = tc.key0
		if err := writeJSON(filepath.Join(dirA, MIAReferencesFile), old); err != nil {
			t.Fatal(err)
		}
		if why, err := staleReferences(&sa, dirA); err != nil || why != tc.want && !strings.Contains(why, tc.want) || (tc.want == "") != (why == "") {
			t.Errorf("an older file with reference 0's key %s: stale %q, %v; want %q", tc.key0, why, err, tc.want)
		}
	}

	// Kill reference 1 after its step-10 checkpoint: its last checkpoint
	// and its trained mark are gone.
	ref0, ref1 := refs.Models[0], refs.Models[1]
	ckpt0 := filepath.Join(ref0.Dir, checkpoint.DirName, checkpoint.StepName(20), "model.safetensors")
	before0, err := os.Stat(ckpt0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(ref1.Dir, checkpoint.DirName, checkpoint.StepName(20))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ref1.Dir, checkpoint.DirName, checkpoint.LatestFile), []byte(checkpoint.StepName(10)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ref1.Trained = false
	if err := writeJSON(filepath.Join(ref1.Dir, referenceFile), ref1); err != nil {
		t.Fatal(err)
	}
	dirB, err := run("b")
	if err != nil {
		t.Fatal(err)
	}
	sigB, _ := readSignalsAndRefs(t, dirB)
	if !reflect.DeepEqual(sigA, sigB) {
		t.Error("signals after resuming a killed reference differ from the uninterrupted run's")
	}
	if after0, _ := os.Stat(ckpt0); !after0.ModTime().Equal(before0.ModTime()) {
		t.Error("the trained reference 0 was trained again instead of reused")
	}

	// References trained one at a time by TrainReferences (as a Slurm
	// array or parallel processes would), then the run: the same signals.
	s := *spec
	s.Name, s.Data.CacheDir = "d", t.TempDir()
	runsD := filepath.Join(t.TempDir(), "runs")
	// Refused, with a command that builds where it looked (a suggestion
	// without --runs built into ./runs and was refused again).
	if err := TrainReferences(context.Background(), &s, runsD, []int{1}); err == nil || !strings.Contains(err.Error(), "memo run --stages data --runs "+runsD+" ") {
		t.Errorf("TrainReferences without the run's dataset: %v; want a refusal naming memo run --stages data --runs %s", err, runsD)
	}
	if _, err := Run(context.Background(), &s, runsD, Options{Stages: []string{"data"}}); err != nil {
		t.Fatal(err)
	}
	if err := TrainReferences(context.Background(), &s, runsD, []int{2}); err == nil {
		t.Error("TrainReferences of index 2 of 2 succeeded")
	}
	// A spec the run directory was not made from is refused by name, as
	// memo run refuses it there.
	other := s
	other.Train.Steps++
	if err := TrainReferences(context.Background(), &other, runsD, []int{0}); !badinput.Is(err) || !strings.Contains(err.Error(), "was made from another spec (train.steps: ") {
		t.Errorf("TrainReferences with another spec than the run's: %v; want a refusal naming train.steps", err)
	}
	for _, k := range []int{1, 0} {
		if err := TrainReferences(context.Background(), &s, runsD, []int{k}); err != nil {
			t.Fatal(err)
		}
	}
	dirD, err := Run(context.Background(), &s, runsD, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sigD, _ := readSignalsAndRefs(t, dirD); !reflect.DeepEqual(sigA, sigD) {
		t.Error("signals of references trained one by one differ from the run's own")
	}

	// A damaged reference model is refused with the command that
	// removes it (not a run checkpoint's "name an older step").
	weights1 := filepath.Join(ref1.Dir, checkpoint.DirName, checkpoint.StepName(20), "model.safetensors")
	good1, err := os.ReadFile(weights1)
	if err != nil {
		t.Fatal(err)
	}
	bad1 := append([]byte(nil), good1...)
	bad1[len(bad1)-1] ^= 0xff
	if err := os.WriteFile(weights1, bad1, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = run("e")
	if want := "remove it with `memo references rm " + filepath.Base(ref1.Dir) + "`"; !badinput.Is(err) || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a damaged reference: %v; want a bad-input error saying %q", err, want)
	}
	if err := os.WriteFile(weights1, good1, 0o644); err != nil {
		t.Fatal(err)
	}

	// A reference directory trained on another pool is refused.
	ref0.Members = ref0.Members[1:]
	if err := writeJSON(filepath.Join(ref0.Dir, referenceFile), ref0); err != nil {
		t.Fatal(err)
	}
	_, err = run("c")
	var bad *badinput.Error
	if err == nil || !strings.Contains(err.Error(), "another pool") || !errors.As(err, &bad) {
		t.Errorf("reference of another pool: err = %v, want a bad-input error naming another pool", err)
	}
}

// TestReferencesCache: ls lists only directories with memo's
// reference.json; rm removes one and refuses anything else.
func TestReferencesCache(t *testing.T) {
	cache := t.TempDir()
	root := ReferencesDir(cache)
	mine := referenceRecord{Index: 3, Key: "abc", Members: []referenceMember{{1, 2}}, Trained: true}
	if err := os.MkdirAll(filepath.Join(root, "abc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(filepath.Join(root, "abc", referenceFile), mine); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(root, "mine", "notes.txt")
	if err := os.MkdirAll(filepath.Dir(foreign), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(foreign, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	ents, err := ListReferences(cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Key != "abc" || ents[0].Index != 3 || ents[0].Members != 1 || !ents[0].Trained {
		t.Fatalf("ListReferences = %+v, want the one entry abc", ents)
	}
	for _, key := range []string{"mine", "../abc", "", "nothere"} {
		if err := RemoveReference(cache, key); err == nil {
			t.Errorf("RemoveReference(%q) succeeded", key)
		}
	}
	// Several keys are removed all or none: a bad one anywhere removes
	// nothing (a review lost the good keys before a typo).
	if err := RemoveReferences(cache, []string{"abc", "nothere"}); !badinput.Is(err) || !strings.Contains(err.Error(), "nothing removed") {
		t.Errorf("RemoveReferences of a good and an unknown key: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "abc", referenceFile)); err != nil {
		t.Fatalf("a refused removal of several keys removed abc: %v", err)
	}
	// A key with nothing under it is named as such, not as a directory
	// memo did not make.
	if err := RemoveReference(cache, "nothere"); !badinput.Is(err) || !strings.Contains(err.Error(), "no reference nothere in ") {
		t.Errorf("RemoveReference of an unknown key: %v", err)
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Fatalf("a foreign file went: %v", err)
	}
	// A training process on another host holds it while its heartbeat
	// beats; one silent for RunLockStale is gone (a dead node).
	lockPath := filepath.Join(root, "abc", runlock.FileName)
	if err := writeJSON(lockPath, runlock.Holder{PID: 4242, Host: "node17", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := RemoveReference(cache, "abc"); err == nil || !strings.Contains(err.Error(), "node17") {
		t.Fatalf("RemoveReference under a fresh lock from node17: %v, want refused naming the holder", err)
	}
	silent := time.Now().Add(-RunLockStale - time.Minute)
	if err := os.Chtimes(lockPath, silent, silent); err != nil {
		t.Fatal(err)
	}
	if err := RemoveReference(cache, "abc"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "abc")); !os.IsNotExist(err) {
		t.Errorf("abc still there: %v", err)
	}
}

// TestReferenceKey: a reference's key names the digest of the weights it
// starts from, so a fine-tune's references are not found again after its
// base is replaced; a reference trained from the seed keeps the key it had
// before the base was part of it, so caches stay valid. Settings that
// change nothing it learns (logging, checkpointing, resuming, threads)
// leave the key as at their defaults, which is the key 98ce926 gave
// (508b991a5f89…): a review saw train.log_every = 10 → 20 retrain every
// reference.
func TestReferenceKey(t *testing.T) {
	tc := pinnedTrainConfig()
	keyOf := func(base string, tc train.Config) string {
		k, err := referenceKey(map[string]string{"docs.arrow": "d0"}, base, model.Config{Dim: 64}, tc, loss.Config{}, []referenceMember{{1, 2}})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	key := func(base string) string { return keyOf(base, tc) }
	if got := key(""); got != "508b991a5f8984ac6115d301" {
		t.Errorf("key from the seed = %s, want 508b991a5f8984ac6115d301 as before", got)
	}
	if a, b := key("aaaa"), key("bbbb"); a == b || a == key("") {
		t.Errorf("keys of two bases %s, %s (seed's %s): want three different keys", a, b, key(""))
	}
	chatty := tc
	chatty.LogEvery, chatty.CheckpointEvery, chatty.KeepCheckpoints, chatty.NoResume, chatty.Threads = 1, 7, 9, true, 3
	if got := keyOf("", chatty); got != key("") {
		t.Errorf("log_every, checkpoint_every, keep_checkpoints, no_resume and threads changed the key: %s, want %s", got, key(""))
	}
	for name, change := range map[string]func(*train.Config){
		"lr":        func(c *train.Config) { c.LR = 3e-3 },
		"steps":     func(c *train.Config) { c.Steps++ },
		"precision": func(c *train.Config) { c.Precision = "bf16" },
		"seed":      func(c *train.Config) { c.Seed++ },
	} {
		c := tc
		change(&c)
		if keyOf("", c) == key("") {
			t.Errorf("train.%s changed and the key did not: another model would be reused", name)
		}
	}
}

// pinnedTrainConfig is the training settings of the keys the tests pin:
// 10 steps, unsharded, logging and checkpointing at the defaults.
func pinnedTrainConfig() train.Config {
	def := train.DefaultConfig()
	return train.Config{Steps: 10, Shard: "none", LogEvery: def.LogEvery, CheckpointEvery: def.CheckpointEvery, KeepCheckpoints: def.KeepCheckpoints, Threads: def.Threads}
}

// TestReferenceConfigsUnsharded: a target trained with ZeRO over ranks
// has references trained in one process, unsharded (they failed after the
// target's training, "needs 2 or more processes"), with seeds of their own.
func TestReferenceConfigsUnsharded(t *testing.T) {
	for _, shard := range []string{"", train.ShardNone, train.ShardOptimizer, train.ShardFull} {
		tc := train.Config{Seed: 1, Shard: shard}
		if shard == train.ShardFull {
			tc.ShardGroup = 2
		}
		mc, rt := referenceConfigs(model.Config{Seed: 1}, tc, 0)
		if err := rt.CheckShardRanks(1); err != nil {
			t.Errorf("shard %q: reference settings refused in one process: %v", shard, err)
		}
		if rt.Seed == 1 || mc.Seed == 1 {
			t.Errorf("shard %q: reference seeds %d, %d: want their own", shard, mc.Seed, rt.Seed)
		}
		if (shard == "" || shard == train.ShardNone) && rt.Shard != shard {
			t.Errorf("shard %q became %q: an unsharded setting is kept as given (it is in the key)", shard, rt.Shard)
		}
	}
}

// TestReferenceConfigsLoRABase: references of a LoRA target adapt its
// frozen base — the model seed's weights when there is no train.init_from
// — and draw their own stream; a full model or a LoRA fine-tune of a
// saved base draws its own weights' seed as before.
func TestReferenceConfigsLoRABase(t *testing.T) {
	tests := []struct {
		name     string
		lora     bool
		initFrom string
		sameBase bool
	}{
		{"full model", false, "", false},
		{"LoRA on the seed's weights", true, "", true},
		{"LoRA on a saved base", true, "runs/base", false}, // the base is loaded: the seed only draws adapters
	}
	for _, tt := range tests {
		tc := train.Config{Seed: 1, InitFrom: tt.initFrom}
		tc.LoRA.Enabled = tt.lora
		mc, rt := referenceConfigs(model.Config{Seed: 1}, tc, 0)
		if (mc.Seed == 1) != tt.sameBase || rt.Seed == 1 {
			t.Errorf("%s: model seed %d, train seed %d; want the target's model seed %v and a train seed of its own", tt.name, mc.Seed, rt.Seed, tt.sameBase)
		}
	}
}

func readSignalsAndRefs(t *testing.T, dir string) ([]runfiles.MIASignal, referencesFile) {
	t.Helper()
	sig, err := runfiles.MIASignals.ReadParquet(filepath.Join(dir, runfiles.MIASignalsFile))
	if err != nil {
		t.Fatal(err)
	}
	var refs referencesFile
	b, err := os.ReadFile(filepath.Join(dir, MIAReferencesFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &refs); err != nil {
		t.Fatal(err)
	}
	if len(refs.Models) != 2 {
		t.Fatalf("%d reference models recorded, want 2", len(refs.Models))
	}
	return sig, refs
}

// TestReferenceInTrainingWaits: a reference model whose directory another
// live process holds (it is training it) is waited for, not refused; the
// wait ends with the context.
func TestReferenceInTrainingWaits(t *testing.T) {
	dir := t.TempDir()
	host, _ := os.Hostname()
	raw, _ := json.Marshal(runlock.Holder{PID: os.Getpid(), Host: host})
	if err := os.WriteFile(filepath.Join(dir, runlock.FileName), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	r := &referenceRecord{Index: 1, Dir: dir}
	err := trainReference(ctx, r, 2, nil, model.Config{}, train.Config{}, nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("trainReference on a held directory = %v; want it to wait until the context ends", err)
	}
	if !strings.Contains(err.Error(), "reference index 1 (2 of 2)") {
		t.Errorf("error %q does not name the reference", err)
	}
}

// TestReferenceScoredUnderItsLock: a trained reference is scored while
// its directory is locked, so `memo references rm` refuses it then: a
// review removed a reference between its training and its scoring, and
// the run failed.
func TestReferenceScoredUnderItsLock(t *testing.T) {
	cache := t.TempDir()
	r := &referenceRecord{Index: 0, Key: "0123456789abcdef01234567"}
	r.Dir = filepath.Join(ReferencesDir(cache), r.Key)
	trained := *r
	trained.Trained = true
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(filepath.Join(r.Dir, referenceFile), trained); err != nil {
		t.Fatal(err)
	}
	scored := false
	err := trainReference(context.Background(), r, 2, nil, model.Config{}, train.Config{}, nil, func() error {
		scored = true
		if err := RemoveReference(cache, r.Key); err == nil {
			t.Error("references rm removed a reference while it was being scored")
		}
		return nil
	})
	if err != nil || !scored {
		t.Fatalf("trainReference of a trained reference: %v, scored %v", err, scored)
	}
	if err := RemoveReference(cache, r.Key); err != nil {
		t.Errorf("references rm after scoring: %v", err)
	}
}

// TestReferenceDatasetNamesTheStream: two datasets of the same files whose
// training streams differ (data.layout, data.pretrain_passes) give their
// references different keys; the default stream adds nothing, so keys
// made before stay valid.
func TestReferenceDatasetNamesTheStream(t *testing.T) {
	files := map[string]data.FileSum{"docs.arrow": {SHA256: "d0"}}
	base := data.Report{Files: files, Layout: data.LayoutPadded}
	packed := data.Report{Files: files, Layout: data.LayoutPacked}
	pretrain := data.Report{Files: files, Layout: data.LayoutPadded}
	pretrain.Config.PretrainPasses = 1
	key := func(r data.Report) string {
		k, err := referenceKey(referenceDataset(r), "", model.Config{Dim: 64}, pinnedTrainConfig(), loss.Config{}, []referenceMember{{1, 2}})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	if got := key(base); got != "508b991a5f8984ac6115d301" {
		t.Errorf("the default stream's key = %s, want 508b991a5f8984ac6115d301 as before", got)
	}
	if a, b, c := key(base), key(packed), key(pretrain); a == b || a == c || b == c {
		t.Errorf("keys padded %s, packed %s, with pretraining %s: want three", a, b, c)
	}
}

// TestWarnOtherLayout: a reference found trained under another thread
// layout than this run's training (or resumed under several) is warned
// about, since its last bits, and the calibrated scores, are that
// layout's; one of the same layout, or of a checkpoint too old to say,
// is not.
func TestWarnOtherLayout(t *testing.T) {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(prev)
	tc := train.DefaultConfig()
	tc.Threads = 1 // one replica of one thread
	tests := []struct {
		name string
		r    referenceRecord
		warn bool
	}{
		{"same layout", referenceRecord{Workers: 1, Threads: 1}, false},
		{"not recorded", referenceRecord{}, false},
		{"two threads", referenceRecord{Workers: 1, Threads: 2}, true},
		{"two replicas", referenceRecord{Workers: 2, Threads: 1}, true},
		{"resumed under another", referenceRecord{Workers: 1, Threads: 1, Layouts: []checkpoint.ThreadLayout{{FromStep: 0, Workers: 1, Threads: 2}}}, true},
	}
	for _, tt := range tests {
		buf.Reset()
		warnOtherLayout(&tt.r, 2, tc)
		if got := strings.Contains(buf.String(), "another thread layout"); got != tt.warn {
			t.Errorf("%s: warned %v, want %v: %q", tt.name, got, tt.warn, buf.String())
		}
	}
}
