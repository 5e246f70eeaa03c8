package train

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/precision"
)

// Config is the [train] table of an experiment spec.
type Config struct {
	// Steps is the number of optimizer steps; 0 means Epochs passes over the training stream.
	Steps int `toml:"steps"`
	// Epochs is the number of passes over the training stream when Steps is 0: batch_size rows a step, or with DP-SGD q·N rows on average (1/q steps a pass).
	Epochs float64 `toml:"epochs"`
	// Block is the sequence length of a training row; 0 means the model's context.
	Block int `toml:"block"`
	// BatchSize is the number of rows per optimizer step, over all processes.
	BatchSize int `toml:"batch_size"`
	// GradAccum splits each step's rows into this many micro-batches per process.
	// Each micro-batch's loss is its mean over its kept targets and the step
	// averages them (as nanoGPT does), so a goldfish step, whose micro-batches
	// keep different numbers of targets, weighs targets slightly unlike
	// grad_accum = 1; with either loss, float rounding moves the last digits.
	GradAccum int `toml:"grad_accum"`
	// LR is the peak learning rate, reached after the warm-up.
	LR float64 `toml:"lr"`
	// MinLR is the floor the cosine decay ends at.
	MinLR float64 `toml:"min_lr"`
	// WarmupSteps is the length of the linear warm-up from 0 to LR. One
	// longer than train.steps is refused; one longer than the steps that
	// train.epochs or match_supervised_tokens come to is warned of when
	// training starts (the rate would never reach LR nor decay).
	WarmupSteps int `toml:"warmup_steps"`
	// WeightDecay is AdamW's decoupled decay, applied to matrices only.
	WeightDecay float64 `toml:"weight_decay"`
	// Beta1 is AdamW's first-moment decay.
	Beta1 float64 `toml:"beta1"`
	// Beta2 is AdamW's second-moment decay.
	Beta2 float64 `toml:"beta2"`
	// Eps is AdamW's denominator epsilon.
	Eps float64 `toml:"eps"`
	// Clip is the gradient-norm clipping threshold; 0 disables clipping.
	Clip float64 `toml:"clip"`
	// EvalEvery runs validation (without the goldfish mask) every this many steps and at the end; 0 only at the end.
	EvalEvery int `toml:"eval_every"`
	// EvalRows caps the validation rows used; 0 means all.
	EvalRows int `toml:"eval_rows"`
	// CheckpointEvery writes a checkpoint every this many steps and at the end; 0 only at the end.
	CheckpointEvery int `toml:"checkpoint_every"`
	// KeepCheckpoints keeps only the newest this many checkpoints; 0 keeps all.
	KeepCheckpoints int `toml:"keep_checkpoints"`
	// LogEvery rewrites metrics.arrow every this many steps.
	LogEvery int `toml:"log_every"`
	// Threads is libtorch's intra-op thread count; 0 keeps libtorch's default.
	Threads int `toml:"threads"`
	// Device is where the model trains: "cpu", "cuda" (the first GPU) or "cuda:N"; CUDA needs a CUDA build of libtorch.
	Device string `toml:"device"`
	// Precision is "fp32" (the default; bit-identical to memo before the key existed) or "bf16-mixed": the linear layers' products in bfloat16 on bfloat16 copies of float32 master weights, and attention in bfloat16 where libtorch has its fused kernel (2.1 and later), with norms, the loss and AdamW's state in float32. On a GPU AdamW and gradient clipping run in libtorch's fused multi-tensor kernels (set MEMO_FUSED_OPTIM=off to compare).
	Precision string `toml:"precision"`
	// Seed seeds the order of the training stream (each epoch reshuffled).
	Seed int64 `toml:"seed"`
	// InitFrom starts from another run's weights: a checkpoint directory, a checkpoints/ directory or a run directory.
	InitFrom string `toml:"init_from"`
	// MatchSupervisedTokens = K (>= 2) makes a standard-loss run (goldfish.k = 0) the equal-supervised-tokens control of goldfish with k = K: it stops at the exact target where it has supervised as many targets as goldfish k = K, with the [goldfish] strategy, h, start and seed, supervises over the full run (same stream and order; the learning-rate schedule spans the shortened run). 0: off.
	MatchSupervisedTokens int `toml:"match_supervised_tokens"`
	// Shard is how data-parallel ranks split the training state: "none" (the default: each rank holds all of it), "optimizer" (ZeRO-1: each rank keeps and updates 1/N of the AdamW state, the updated weights all-gathered), "gradients" (ZeRO-2: as "optimizer", with the gradients reduce-scattered instead of all-reduced) or "full" (ZeRO-3: weights, gradients and AdamW state all 1/N per rank; each layer's weights are all-gathered just before its forward and again before its backward, which recomputes the layer from its saved input). Needs 2 or more processes.
	Shard string `toml:"shard"`
	// ShardGroup K > 0 (with shard = "full") keeps a secondary copy of the weights cut over each group of K consecutive ranks (one node), so that the per-layer all-gathers run within the group; only the gradients' reduce-scatter and the updated weights' all-gather cross groups, once a step. Must divide the number of ranks. 0: one partition over all ranks.
	ShardGroup int `toml:"shard_group"`
	// ActivationCheckpointing keeps only each block's input through the forward pass and recomputes the block, with gradients, just before its backward pass: the activations held at once are one block's instead of every block's, for about a third more compute (a second forward pass of the blocks). train.shard = "full" always runs so. Not with train.dp.
	ActivationCheckpointing bool `toml:"activation_checkpointing,omitempty"`
	// NoResume starts afresh even when the run directory holds checkpoints (they are then overwritten).
	NoResume bool `toml:"no_resume"`
	// DP is the [train.dp] table: DP-SGD (dpconfig.go).
	DP DPConfig `toml:"dp"`
	// LoRA is the [train.lora] table: low-rank adapters (dpconfig.go).
	LoRA LoRAConfig `toml:"lora"`
}

// DefaultConfig is a short CPU-sized run.
func DefaultConfig() Config {
	return Config{
		Epochs:          1,
		BatchSize:       16,
		GradAccum:       1,
		LR:              1e-3,
		MinLR:           1e-4,
		WarmupSteps:     20,
		WeightDecay:     0.1,
		Beta1:           0.9,
		Beta2:           0.95,
		Eps:             1e-8,
		Clip:            1.0,
		EvalEvery:       100,
		CheckpointEvery: 500,
		KeepCheckpoints: 2,
		LogEvery:        10,
		Device:          "cpu",
		DP:              DefaultDPConfig(),
		LoRA:            DefaultLoRAConfig(),
	}
}

// Validate checks every key and names the offending one.
func (c Config) Validate() error {
	nonNeg := []struct {
		key string
		v   int
	}{
		{"train.steps", c.Steps}, {"train.block", c.Block}, {"train.warmup_steps", c.WarmupSteps},
		{"train.eval_every", c.EvalEvery}, {"train.eval_rows", c.EvalRows},
		{"train.checkpoint_every", c.CheckpointEvery}, {"train.keep_checkpoints", c.KeepCheckpoints},
		{"train.threads", c.Threads},
	}
	if c.MatchSupervisedTokens < 0 || c.MatchSupervisedTokens == 1 {
		return fmt.Errorf("train.match_supervised_tokens = %d: must be 0 (off) or the goldfish k >= 2 whose supervised-token count to match", c.MatchSupervisedTokens)
	}
	for _, f := range nonNeg {
		if f.v < 0 {
			return fmt.Errorf("%s = %d: must be >= 0", f.key, f.v)
		}
	}
	if _, err := precision.Parse(c.Precision, true); err != nil {
		return fmt.Errorf("train.precision = %q: must be fp32 or bf16-mixed", c.Precision)
	}
	switch c.Shard {
	case "", ShardNone, ShardOptimizer, ShardGradients, ShardFull:
	default:
		return fmt.Errorf("train.shard = %q: must be none, optimizer (ZeRO-1), gradients (ZeRO-2) or full (ZeRO-3)", c.Shard)
	}
	if c.ShardGroup < 0 {
		return fmt.Errorf("train.shard_group = %d: must be >= 0 (0: no groups)", c.ShardGroup)
	}
	if c.ShardGroup > 0 && c.Shard != ShardFull {
		return fmt.Errorf("train.shard_group = %d: keeps a secondary copy of the gathered weights, which only train.shard = \"full\" gathers (train.shard = %q)", c.ShardGroup, shardName(c.Shard))
	}
	if _, _, err := torchx.ParseDevice(c.Device); err != nil {
		return fmt.Errorf("train.device = %q: %w", c.Device, err)
	}
	if err := c.DP.Validate(); err != nil {
		return err
	}
	if err := c.checkDPWith(); err != nil {
		return err
	}
	if err := c.LoRA.Validate(); err != nil {
		return err
	}
	if c.LoRA.Enabled && c.sharded() {
		return errLoRASharded
	}
	switch {
	case c.Steps == 0 && !(c.Epochs > 0):
		return fmt.Errorf("train.epochs = %v: must be > 0 when train.steps = 0", c.Epochs)
	case c.BatchSize < 1:
		return fmt.Errorf("train.batch_size = %d: must be >= 1", c.BatchSize)
	case c.GradAccum < 1:
		return fmt.Errorf("train.grad_accum = %d: must be >= 1", c.GradAccum)
	case c.BatchSize%c.GradAccum != 0:
		return fmt.Errorf("train.batch_size = %d: must be a multiple of train.grad_accum = %d", c.BatchSize, c.GradAccum)
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return fmt.Errorf("train.lr = %v: must be > 0", c.LR)
	case c.MinLR < 0 || c.MinLR > c.LR:
		return fmt.Errorf("train.min_lr = %v: must be in [0, train.lr = %v]", c.MinLR, c.LR)
	case c.WeightDecay < 0:
		return fmt.Errorf("train.weight_decay = %v: must be >= 0", c.WeightDecay)
	case !(c.Beta1 >= 0 && c.Beta1 < 1):
		return fmt.Errorf("train.beta1 = %v: must be in [0, 1)", c.Beta1)
	case !(c.Beta2 >= 0 && c.Beta2 < 1):
		return fmt.Errorf("train.beta2 = %v: must be in [0, 1)", c.Beta2)
	case !(c.Eps > 0):
		return fmt.Errorf("train.eps = %v: must be > 0", c.Eps)
	case c.Clip < 0:
		return fmt.Errorf("train.clip = %v: must be >= 0 (0 disables clipping)", c.Clip)
	case c.LogEvery < 1:
		return fmt.Errorf("train.log_every = %d: must be >= 1", c.LogEvery)
	}
	return nil
}

// sharded reports whether train.shard splits the state over the ranks.
func (c Config) sharded() bool { return c.Shard != "" && c.Shard != ShardNone }

// CheckShardRanks refuses a train.shard setting that cannot run on n
// processes: sharding needs at least two.
func (c Config) CheckShardRanks(n int) error {
	if c.sharded() && n < 2 {
		return fmt.Errorf("train.shard = %q: shards the training state over the ranks and needs 2 or more processes (--nproc, torchrun or Slurm), got %d; use \"none\" on one", c.Shard, n)
	}
	if k := c.ShardGroup; k > 0 && (k > n || n%k != 0) {
		return fmt.Errorf("train.shard_group = %d: must divide the %d ranks into groups of equal size (one of %s)", k, n, divisors(n))
	}
	return nil
}

// divisors lists n's divisors, for an error message.
func divisors(n int) string {
	var out []string
	for k := 1; k <= n; k++ {
		if n%k == 0 {
			out = append(out, strconv.Itoa(k))
		}
	}
	return strings.Join(out, ", ")
}

// lrAt is the learning rate of optimizer step s (1-based) out of total:
// linear warm-up to LR over WarmupSteps, then cosine decay to MinLR.
func (c Config) lrAt(s, total int) float64 {
	if c.WarmupSteps > 0 && s <= c.WarmupSteps {
		return c.LR * float64(s) / float64(c.WarmupSteps)
	}
	span := total - c.WarmupSteps
	if span <= 0 {
		return c.LR
	}
	frac := math.Min(1, float64(s-c.WarmupSteps)/float64(span))
	return c.MinLR + 0.5*(c.LR-c.MinLR)*(1+math.Cos(math.Pi*frac))
}
