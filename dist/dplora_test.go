package dist

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/testrun"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/train"
)

// replicasEnv names the directory where each rank of a "train" worker
// writes the weights it ended with (replicaFile), read by the DP+LoRA
// tests: only rank 0's replica reaches the checkpoint.
const replicasEnv = "MEMO_DIST_REPLICAS"

// replica is one process's weights at the end of a run, by name: the
// model's (with LoRA, the frozen base) and the parameters it trained.
type replica struct {
	Weights, Trained map[string][]float64
}

// replicaRecorder keeps what train.Options.OnEnd hands it.
type replicaRecorder struct {
	got *replica
}

func (r *replicaRecorder) record(weights, trained []model.Param) {
	r.got = &replica{Weights: paramMap(weights), Trained: paramMap(trained)}
}

func paramMap(ps []model.Param) map[string][]float64 {
	out := make(map[string][]float64, len(ps))
	for _, p := range ps {
		out[p.Name] = p.Tensor.Float64Values()
	}
	return out
}

// replicaFile is where rank writes its replica under dir.
func replicaFile(dir string, rank int) string {
	return filepath.Join(dir, fmt.Sprintf("replica-rank-%d.gob", rank))
}

// write saves the recorded replica as rank's when replicasEnv is set.
func (r *replicaRecorder) write(rank int) error {
	dir := os.Getenv(replicasEnv)
	if dir == "" {
		return nil
	}
	if r.got == nil {
		return fmt.Errorf("rank %d: the run ended without calling OnEnd", rank)
	}
	f, err := os.Create(replicaFile(dir, rank))
	if err != nil {
		return err
	}
	if err := gob.NewEncoder(f).Encode(r.got); err != nil {
		f.Close()
		return fmt.Errorf("rank %d's replica: %w", rank, err)
	}
	return f.Close()
}

func readReplica(t *testing.T, path string) replica {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r replica
	if err := gob.NewDecoder(f).Decode(&r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

// dpLoRAParity is the run of the DP+LoRA two-rank tests: parityRun (nano
// Llama, batch 8 of 64 rows, accumulation 2, the hash-table goldfish mask)
// with DP-SGD at σ = 1, C = 1, q = 8/64 and TestLoRATrainParity's
// adapters.
func dpLoRAParity(steps int) (train.Config, model.Config, loss.Config) {
	cfg, mcfg, lcfg := parityRun(steps, loss.StrategyHashTable, 2)
	withDP(&cfg, "1")
	cfg.LoRA = loraParity()
	return cfg, mcfg, lcfg
}

// dpLoRAEnv is the worker environment of dpLoRAParity's run into dir.
func dpLoRAEnv(dir string, steps int) []string {
	return []string{"MEMO_DIST_DIR=" + dir, "MEMO_DIST_STEPS=" + strconv.Itoa(steps),
		"MEMO_DIST_MASK=" + loss.StrategyHashTable, "MEMO_DIST_ACCUM=2", "MEMO_DIST_DP_SIGMA=1", "MEMO_DIST_LORA=1"}
}

// DP-SGD over LoRA adapters on two ranks is the same run as on one
// process with the same global batch: each rank clips its share of the
// Poisson sample through its adapters, rank 0 adds the noise once, and
// the all-reduced sum updates replicas that stay bit-identical. Checked:
// the two ranks end with the same adapters bit for bit; the base weights
// on both ranks (and on the one process) are the seed's, bit for bit; the
// losses and the adapted model match the one process's to TestDPParity's
// tolerances (losses 1e-5 relative, weights 1e-5 absolute and 1e-6
// relative in L2), the adapters alone to 1e-6 relative; and the privacy
// record every output reports from (the checkpoint's dp entry: q, σ, C,
// steps, ε and the accountant's history) is the one process's exactly.
// "q 2/64": steps that draw one row leave rank 1 nothing to clip (it
// adds zeros to the all-reduce). "2 workers": each rank splits its rows
// over two workers with their own adapter replicas, as one process does.
func TestDPLoRATwoRanks(t *testing.T) {
	if testing.Short() {
		t.Skip("trains nano models on one and two processes (-short)")
	}
	const steps = 6
	src, err := newOpticks(4000, 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		q       float64 // train.dp.sample_rate (0: batch_size / N = 8/64)
		threads int     // train.threads
		// emptyShare: some step draws exactly one row, so rank 1 has none.
		emptyShare bool
	}{
		{"q 8/64", 0, 1, false},
		{"q 2/64", 2.0 / 64, 1, true},
		{"q 8/64 2 workers", 0, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			single, multi, reps := t.TempDir(), t.TempDir(), t.TempDir()
			cfg, mcfg, lcfg := dpLoRAParity(steps)
			cfg.DP.SampleRate, cfg.Threads = tc.q, tc.threads
			if tc.emptyShare {
				checkEmptyShare(t, cfg, steps, 64)
			}
			var one replicaRecorder
			if err := train.Run(context.Background(), cfg, mcfg, lcfg, src, single, train.Options{OnEnd: one.record}); err != nil {
				t.Fatal(err)
			}
			env := append(dpLoRAEnv(multi, steps), replicasEnv+"="+reps,
				dpQEnv+"="+strconv.FormatFloat(tc.q, 'g', -1, 64), threadsEnv+"="+strconv.Itoa(tc.threads))
			out, err := launchWorkers(t, 2, "train", env...)
			if err != nil {
				t.Fatalf("2 ranks: %v\n%s", err, out)
			}
			checkDPLoRAParity(t, mcfg, single, multi, *one.got, readReplica(t, replicaFile(reps, 0)), readReplica(t, replicaFile(reps, 1)), steps)
		})
	}
}

// checkDPLoRAParity checks TestDPLoRATwoRanks's claims on the run
// directories single (one process, which ended with replica one) and
// multi (two ranks, which ended with r0 and r1).
func checkDPLoRAParity(t *testing.T, mcfg model.Config, single, multi string, one, r0, r1 replica, steps int) {
	t.Helper()
	if n := 2 * len(loraParity().Targets) * 2; len(r0.Trained) != n { // A and B, 2 layers
		t.Errorf("rank 0 trained %d tensors, want the %d adapters", len(r0.Trained), n)
	}
	if !reflect.DeepEqual(r0.Trained, r1.Trained) {
		t.Errorf("the ranks' adapters differ: %.2g relative (L2), want bit for bit", testrun.RelDiff(t, r1.Trained, r0.Trained))
	}
	base := seedWeights(t, mcfg)
	for name, r := range map[string]replica{"one process": one, "rank 0": r0, "rank 1": r1} {
		if !reflect.DeepEqual(r.Weights, base) {
			t.Errorf("%s: the base weights moved from the seed's (%.2g relative, L2)", name, testrun.RelDiff(t, r.Weights, base))
		}
	}
	if rel := testrun.RelDiff(t, r0.Trained, initialAdapters(t, mcfg)); !(rel > 1e-3) {
		t.Errorf("the adapters moved by %.2g relative in %d steps: not trained", rel, steps)
	}

	worst, maxDiff := compareRuns(t, single, multi, steps, 1e-5, 1e-5)
	rel := relativeWeights(t, single, multi)
	relAd := testrun.RelDiff(t, r0.Trained, one.Trained)
	t.Logf("DP+LoRA on 2 ranks against one process: losses agree to %.2g relative; adapted weights to %.2g absolute, %.2g relative (L2); adapters to %.2g relative (L2)",
		worst, maxDiff, rel, relAd)
	if !(rel <= 1e-6) {
		t.Errorf("adapted weights differ from one process's by %.2g relative (L2), want <= 1e-6", rel)
	}
	if !(relAd <= 1e-6) {
		t.Errorf("adapters differ from one process's by %.2g relative (L2), want <= 1e-6", relAd)
	}

	a, b := dpReport(t, single), dpReport(t, multi)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("privacy record on 2 ranks %s, one process %s: want the same", dpString(b), dpString(a))
	}
	if a.Steps != int64(steps) || math.IsInf(a.Eps(), 0) || !(a.Eps() > 0) {
		t.Errorf("privacy record %s: want %d steps and a finite ε > 0", dpString(a), steps)
	}
	t.Logf("ε = %.6g at δ = %g after %d steps (q = %g, σ = %g), both runs", a.Eps(), a.Delta, a.Steps, a.SampleRate, a.NoiseMultiplier)
}

// checkEmptyShare fails t unless cfg's Poisson samples of n rows over
// steps draw exactly one row at some step (rank 1's share is then empty)
// and none at no step (its losses would be NaN, which compareRuns cannot
// compare).
func checkEmptyShare(t *testing.T, cfg train.Config, steps int, n int64) {
	t.Helper()
	ones := 0
	var sizes []int
	for s := range int64(steps) {
		idx, err := train.PoissonSample(n, cfg.DP.SampleRate, cfg.Seed, s)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(idx))
		if len(idx) == 1 {
			ones++
		}
	}
	t.Logf("rows drawn at each step: %v", sizes)
	if ones == 0 || slices.Contains(sizes, 0) {
		t.Fatalf("rows drawn at each step %v: want some step with exactly 1 and none with 0", sizes)
	}
}

// The environment of a "train" worker that dplora_test.go adds: DP-SGD's
// sample rate (train.dp.sample_rate; after MEMO_DIST_DP_SIGMA) and
// train.threads.
const (
	dpQEnv     = "MEMO_DIST_DP_Q"
	threadsEnv = "MEMO_DIST_THREADS"
)

// tuneFromEnv sets what dpQEnv and threadsEnv give in a worker's cfg.
func tuneFromEnv(cfg *train.Config) error {
	if s := os.Getenv(dpQEnv); s != "" {
		q, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("%s = %s: %w", dpQEnv, s, err)
		}
		cfg.DP.SampleRate = q
	}
	cfg.Threads = envInt(threadsEnv, cfg.Threads)
	return nil
}

// A DP+LoRA run on two ranks stopped after a checkpoint and resumed ends
// as the uninterrupted two-rank run does: resumed on two ranks, bit for
// bit (losses, adapted weights, the adapter and optimizer files, privacy
// record), as TestResumeShardedExact holds a same-size resume to; resumed
// on one process, to TestResumeOtherWorldSize's 1e-5 (the rows' clipped
// gradients are summed in another order), with the same privacy record. Rank 0 alone reads the checkpoint's adapters, moments
// and accountant; the draws of each step are functions of (seed, step).
func TestDPLoRAResumeTwoRanks(t *testing.T) {
	if testing.Short() {
		t.Skip("trains nano models on one and two processes (-short)")
	}
	const steps, every, stop = 8, 3, 5 // checkpoint at 3; steps 4-5 are redone
	src, err := newOpticks(4000, 64)
	if err != nil {
		t.Fatal(err)
	}
	cfg, mcfg, lcfg := dpLoRAParity(steps)
	cfg.CheckpointEvery = every
	pair := func(dir string, stopAfter int) {
		t.Helper()
		env := append(dpLoRAEnv(dir, steps), "MEMO_DIST_CHECKPOINT_EVERY="+strconv.Itoa(every), "MEMO_DIST_STOP_AFTER="+strconv.Itoa(stopAfter))
		if out, err := launchWorkers(t, 2, "train", env...); err != nil {
			t.Fatalf("2 ranks: %v\n%s", err, out)
		}
	}
	single := func(dir string, stopAfter int) {
		t.Helper()
		if err := train.Run(context.Background(), cfg, mcfg, lcfg, src, dir, train.Options{StopAfter: stopAfter}); err != nil {
			t.Fatal(err)
		}
	}
	whole := t.TempDir()
	pair(whole, 0)
	for _, tc := range []struct {
		name   string
		second func(dir string, stopAfter int)
		tol    float64
	}{
		{"2 ranks then 2", pair, 0},
		{"2 ranks then 1", single, 1e-5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pair(dir, stop)
			if _, st, err := checkpoint.LatestGood(dir); err != nil || st.Step != every {
				t.Fatalf("after stopping at step %d the latest checkpoint is step %d (%v), want %d", stop, st.Step, err, every)
			}
			tc.second(dir, 0)
			worst, maxDiff := compareRuns(t, whole, dir, steps, tc.tol, tc.tol)
			t.Logf("losses agree to %.2g relative; adapted weights to %.2g absolute", worst, maxDiff)
			if a, b := dpReport(t, whole), dpReport(t, dir); !reflect.DeepEqual(a, b) {
				t.Errorf("resumed privacy record %s, uninterrupted %s: want the same", dpString(b), dpString(a))
			}
			if tc.tol == 0 {
				// The adapters and their AdamW moments, byte for byte.
				for _, f := range []string{"adapter_model.safetensors", "optimizer.safetensors"} {
					if a, b := finalFile(t, whole, f), finalFile(t, dir, f); !bytes.Equal(a, b) {
						t.Errorf("final %s differs from the uninterrupted run's", f)
					}
				}
			}
		})
	}
}

// dpReport is the privacy record of runDir's newest checkpoint, from
// which summary.json, the manifest and the tables take ε.
func dpReport(t *testing.T, runDir string) train.DPReport {
	t.Helper()
	_, st, err := checkpoint.LatestGood(runDir)
	if err != nil {
		t.Fatal(err)
	}
	r, ok, err := train.ReadDPReport(st)
	if err != nil || !ok {
		t.Fatalf("%s: DP report %v (present: %v)", runDir, err, ok)
	}
	return r
}

// dpString shows r with its ε (a pointer in the record).
func dpString(r train.DPReport) string {
	return fmt.Sprintf("{ε %v at δ %v, q %v, σ %v, C %v, %d steps, N %d, accountant %+v}",
		r.Eps(), r.Delta, r.SampleRate, r.NoiseMultiplier, r.MaxGradNorm, r.Steps, r.Rows, r.History)
}

// finalFile is the file name of runDir's newest checkpoint.
func finalFile(t *testing.T, runDir, name string) []byte {
	t.Helper()
	dir, _, err := checkpoint.LatestGood(runDir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// seedModel is the untrained model of mcfg, as every rank builds it.
func seedModel(t *testing.T, mcfg model.Config) *model.GPT {
	t.Helper()
	mc, err := mcfg.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	g, err := model.New(nn.NewVarStore(gotch.CPU).Root(), mc)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// seedWeights is the weights of mcfg's untrained model: the base a LoRA
// run without train.init_from trains on.
func seedWeights(t *testing.T, mcfg model.Config) map[string][]float64 {
	t.Helper()
	return paramMap(seedModel(t, mcfg).Params())
}

// initialAdapters is loraParity's adapters before the first step.
func initialAdapters(t *testing.T, mcfg model.Config) map[string][]float64 {
	t.Helper()
	c := loraParity()
	g := seedModel(t, mcfg)
	ad, err := model.NewLoRA(g, model.LoRAOptions{Rank: c.Rank, Alpha: c.Alpha, Targets: c.SortedTargets(), Seed: g.Config().Seed})
	if err != nil {
		t.Fatal(err)
	}
	return paramMap(ad.Params())
}
