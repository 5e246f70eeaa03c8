package dist

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/train"
)

// dpFromEnv turns DP-SGD on in a worker's run when MEMO_DIST_DP_SIGMA is
// set: that noise multiplier, C = 1, q = batch_size / N.
func dpFromEnv(cfg *train.Config) {
	if s := os.Getenv("MEMO_DIST_DP_SIGMA"); s != "" {
		withDP(cfg, s)
	}
}

// withDP turns DP-SGD on with noise multiplier s (C = 1, q = batch_size / N).
func withDP(cfg *train.Config, s string) {
	sigma, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic("MEMO_DIST_DP_SIGMA = " + s + ": " + err.Error())
	}
	cfg.DP = train.DefaultDPConfig()
	cfg.DP.Enabled, cfg.DP.NoiseMultiplier = true, sigma
}

// DP-SGD on two ranks trains like one process: each rank clips its part of
// the Poisson sample, and the noise is added once (by rank 0) to the sum,
// so with σ > 0 too the two worlds end with the same weights to rounding.
// Were the noise added by every rank, the two-rank run's would have √2
// times its standard deviation and the weights would part.
func TestDPParity(t *testing.T) {
	if testing.Short() {
		t.Skip("trains nano models on one and two processes (-short)")
	}
	const steps = 6
	for _, sigma := range []string{"0", "1"} {
		t.Run("sigma "+sigma, func(t *testing.T) {
			single, multi := t.TempDir(), t.TempDir()
			src, err := newOpticks(4000, 64)
			if err != nil {
				t.Fatal(err)
			}
			cfg, mcfg, lcfg := parityRun(steps, loss.StrategyHashTable, 2)
			withDP(&cfg, sigma)
			if err := train.Run(context.Background(), cfg, mcfg, lcfg, src, single, train.Options{}); err != nil {
				t.Fatal(err)
			}
			out, err := launchWorkers(t, 2, "train", "MEMO_DIST_DIR="+multi, "MEMO_DIST_STEPS="+strconv.Itoa(steps),
				"MEMO_DIST_MASK="+loss.StrategyHashTable, "MEMO_DIST_ACCUM=2", "MEMO_DIST_DP_SIGMA="+sigma)
			if err != nil {
				t.Fatalf("2 ranks: %v\n%s", err, out)
			}
			worst, maxDiff := compareRuns(t, single, multi, steps, 1e-5, 1e-5)
			rel := relativeWeights(t, single, multi)
			t.Logf("σ = %s, against one process: losses agree to %.2g relative; weights to %.2g absolute, %.2g relative (L2)", sigma, worst, maxDiff, rel)
			if !(rel <= 1e-6) {
				t.Errorf("final weights differ from one process's by %.2g relative (L2), want <= 1e-6", rel)
			}
		})
	}
}
