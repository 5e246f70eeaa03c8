package train

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/memo-research/memo/precision"
)

// DPConfig is the [train.dp] table: differentially private training
// (DP-SGD, Abadi et al. 2016, arXiv 1607.00133) as Opacus does it. Each
// step draws every training row with probability sample_rate (Poisson
// sampling), clips each row's gradient to L2 norm max_grad_norm, sums them
// and adds Gaussian noise of standard deviation noise_multiplier ·
// max_grad_norm; the RDP accountant (train/dpaccount) turns (q, σ, steps)
// into ε at delta. Off by default, and a run's config.toml leaves the table
// out while it is off, so specs written before it keep their hash.
type DPConfig struct {
	// Enabled turns DP-SGD on.
	Enabled bool `toml:"enabled"`
	// NoiseMultiplier is σ, the noise's standard deviation over max_grad_norm (>= 0; 0 clips without noise, ε = ∞). Give either it or target_epsilon; with neither, DP-SGD clips without noise and the run warns so.
	NoiseMultiplier float64 `toml:"noise_multiplier"`
	// TargetEpsilon > 0 makes memo find σ by bisection: the smallest it finds whose ε at delta over the run's steps is at most this and within 1 % (or 0.01) of it; 0: use noise_multiplier.
	TargetEpsilon float64 `toml:"target_epsilon"`
	// MaxGradNorm is C, the L2 norm each row's gradient is clipped to (> 0).
	MaxGradNorm float64 `toml:"max_grad_norm"`
	// Delta is the δ of (ε, δ)-DP, in (0, 1) and below 1/N for N training rows (Opacus's guidance: much below).
	Delta float64 `toml:"delta"`
	// SampleRate is q, the probability that a step draws each training row, in (0, 1]; 0: train.batch_size / N, so that a step draws train.batch_size rows on average. A pass of train.epochs is 1/q steps.
	SampleRate float64 `toml:"sample_rate"`
	// Sampling is how a step's rows are drawn: "poisson" (each row independently with probability q, what the accountant assumes).
	Sampling string `toml:"sampling"`
}

// SamplingPoisson is the only sampling the accountant accounts: each row
// drawn independently with probability q at every step.
const SamplingPoisson = "poisson"

// DefaultDPConfig is DP-SGD off, with Opacus's usual C = 1 and δ = 1e-5.
func DefaultDPConfig() DPConfig {
	return DPConfig{MaxGradNorm: 1, Delta: 1e-5, Sampling: SamplingPoisson}
}

// Validate checks the keys that need nothing but the table; CheckData
// checks those that need the data's size. It checks them off as well as
// on: a sweep's base table holds the settings its DP points turn on, and
// a value no point could use (δ = 0.9) was otherwise ignored without a
// word until one did.
func (c DPConfig) Validate() error {
	switch {
	case !(c.NoiseMultiplier >= 0) || math.IsInf(c.NoiseMultiplier, 0):
		return fmt.Errorf("train.dp.noise_multiplier = %v: must be >= 0 (0: clipping without noise, no privacy)", c.NoiseMultiplier)
	case !(c.TargetEpsilon >= 0) || math.IsInf(c.TargetEpsilon, 0):
		return fmt.Errorf("train.dp.target_epsilon = %v: must be > 0, or 0 to use train.dp.noise_multiplier", c.TargetEpsilon)
	case c.TargetEpsilon > 0 && c.NoiseMultiplier > 0:
		return fmt.Errorf("train.dp.target_epsilon = %v and train.dp.noise_multiplier = %v: give one (memo finds σ for the target)", c.TargetEpsilon, c.NoiseMultiplier)
	case !(c.MaxGradNorm > 0):
		return fmt.Errorf("train.dp.max_grad_norm = %v: must be > 0 (each row's gradient is clipped to it)", c.MaxGradNorm)
	case !(c.Delta > 0 && c.Delta < 1):
		return fmt.Errorf("train.dp.delta = %v: must be in (0, 1)", c.Delta)
	case !(c.SampleRate >= 0 && c.SampleRate <= 1):
		return fmt.Errorf("train.dp.sample_rate = %v: must be in (0, 1], or 0 for train.batch_size / N", c.SampleRate)
	case c.Sampling != SamplingPoisson:
		return fmt.Errorf("train.dp.sampling = %q: must be %q (the sampling the RDP accountant assumes)", c.Sampling, SamplingPoisson)
	}
	return nil
}

// LoRAConfig is the [train.lora] table: low-rank adaptation (Hu et al.
// 2021, arXiv 2106.09685) as Hugging Face's PEFT does it. Each targeted
// linear layer W (out × in) gains A (r × in, random) and B (out × r, zero),
// its output becomes Wx + (alpha/r)·B·A·dropout(x), and only A and B train.
// Off by default; a run's config.toml leaves the table out while it is off.
type LoRAConfig struct {
	// Enabled turns LoRA on: the base weights freeze and only the adapters train.
	Enabled bool `toml:"enabled"`
	// Rank is r, the adapters' inner dimension (>= 1, at most the smaller side of every targeted matrix). There is no r = 0: PEFT refuses it and its files could not hold it; the model without adapters is train.lora.enabled = false, and an adapted model before its first step is that model (B = 0: every adapted weight W + (alpha/r)·B·A equals W bit for bit).
	Rank int `toml:"rank"`
	// Alpha is LoRA's α: the adapter's output is scaled by alpha / rank (PEFT's lora_alpha).
	Alpha float64 `toml:"alpha"`
	// Dropout is the dropout probability on the adapter's input (PEFT's lora_dropout); must be 0 for now, as memo's adapters act on the weight, not the input.
	Dropout float64 `toml:"dropout"`
	// Targets are the Hugging Face module names of the linear layers to adapt (PEFT's target_modules): q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj for Llama-like families, c_attn, c_proj, c_fc for GPT-2, query_key_value, dense, dense_h_to_4h, dense_4h_to_h for GPT-NeoX, ...; `memo config` names those the model has.
	Targets []string `toml:"targets"`
	// BasePrecision is how the frozen base's linear weights are held: "fp32" (the default, also when left out) or "bf16", which halves their memory while the adapters, their gradients and AdamW's state stay float32 and the products keep train.precision; the base is rounded to bf16 once, and the scoring stages round it the same way (docs/MITIGATIONS.md).
	BasePrecision string `toml:"base_precision,omitempty"`
}

// DefaultLoRAConfig is LoRA off, with PEFT's defaults r = 8, α = 8 and
// the attention's query and value projections of Hu et al.
func DefaultLoRAConfig() LoRAConfig {
	return LoRAConfig{Rank: 8, Alpha: 8, Targets: []string{"q_proj", "v_proj"}}
}

// Validate checks the keys that need nothing but the table, off as well
// as on (as DPConfig.Validate does); the targets and the rank against the
// model are checked where the model is known.
func (c LoRAConfig) Validate() error {
	switch {
	case c.Rank < 1:
		return fmt.Errorf("train.lora.rank = %d: must be >= 1 (PEFT's r); for the model without adapters set train.lora.enabled = false", c.Rank)
	case !(c.Alpha > 0):
		return fmt.Errorf("train.lora.alpha = %v: must be > 0", c.Alpha)
	case !(c.Dropout >= 0 && c.Dropout < 1):
		return fmt.Errorf("train.lora.dropout = %v: must be in [0, 1)", c.Dropout)
	case c.Dropout != 0:
		return fmt.Errorf("train.lora.dropout = %v: must be 0 for now: memo's adapters sit on the weight (W + (alpha/r)·B·A), where dropout on the layer's input cannot act (docs/MITIGATIONS.md)", c.Dropout)
	case c.BasePrecision != "" && c.BasePrecision != precision.FP32 && c.BasePrecision != precision.BF16:
		return fmt.Errorf("train.lora.base_precision = %q: want \"fp32\" or \"bf16\"", c.BasePrecision)
	case len(c.Targets) == 0:
		return fmt.Errorf("train.lora.targets = []: name at least one module (e.g. [\"q_proj\", \"v_proj\"])")
	}
	seen := map[string]bool{}
	for _, t := range c.Targets {
		if t == "" || strings.ContainsAny(t, " .") {
			return fmt.Errorf("train.lora.targets: %q: want a module name such as q_proj, without dots", t)
		}
		if seen[t] {
			return fmt.Errorf("train.lora.targets: %q appears twice", t)
		}
		seen[t] = true
	}
	return nil
}

// SortedTargets is Targets sorted, the order adapter_config.json lists them.
func (c LoRAConfig) SortedTargets() []string {
	t := slices.Clone(c.Targets)
	slices.Sort(t)
	return t
}
