package model

import (
	"fmt"
	"sort"
	"strings"
)

// Config is the [model] table of an experiment spec. Preset names a size;
// any non-zero field overrides the preset's value. The architecture fields
// (Arch and below) default to memo's own decoder; an imported Hugging Face
// model sets them from its config.json (see FromHF).
type Config struct {
	// Preset is one of nano, tiny, small, medium, base.
	Preset string `toml:"preset" json:"preset"`
	// InitFrom, "hf:DIR", takes the architecture and the starting weights from a Hugging Face model directory; preset and the size keys must then be left unset.
	InitFrom string `toml:"init_from" json:"init_from,omitempty"`
	// Vocab is the vocabulary size (the tokenizer's); it has no preset value.
	Vocab int `toml:"vocab" json:"vocab"`
	// Dim is the model width d.
	Dim int `toml:"dim" json:"dim"`
	// Layers is the number of decoder blocks.
	Layers int `toml:"layers" json:"layers"`
	// Heads is the number of attention (query) heads.
	Heads int `toml:"heads" json:"heads"`
	// FFN is the MLP hidden size; 0 means 8·Dim/3 rounded up to a multiple of 8 (SwiGLU), 4·Dim for gpt_neox.
	FFN int `toml:"ffn" json:"ffn"`
	// Context is the longest sequence the rotary tables cover.
	Context int `toml:"context" json:"context"`
	// Untied gives the LM head its own matrix instead of the embedding's.
	Untied bool `toml:"untied" json:"untied"`
	// Seed seeds the weight initialisation.
	Seed int64 `toml:"seed" json:"seed"`

	// Arch is the block layout: "llama" (RMSNorm, SwiGLU, sequential residual) or "gpt_neox" (LayerNorm with bias, GELU MLP, fused per-head qkv, partial rotary).
	Arch string `toml:"arch" json:"arch,omitempty"`
	// KVHeads is the number of key/value heads (grouped-query attention); 0 means Heads.
	KVHeads int `toml:"kv_heads" json:"kv_heads,omitempty"`
	// HeadDim is the size of one attention head; 0 means Dim / Heads.
	HeadDim int `toml:"head_dim" json:"head_dim,omitempty"`
	// NormEps is the epsilon of RMSNorm (LayerNorm for gpt_neox); 0 means 1e-5.
	NormEps float64 `toml:"norm_eps" json:"norm_eps,omitempty"`
	// RopeTheta is the rotary base; 0 means 10000.
	RopeTheta float64 `toml:"rope_theta" json:"rope_theta,omitempty"`
	// RotaryPct is the fraction of each head's dimensions that rotate (gpt_neox's rotary_pct); 0 means 1.
	RotaryPct float64 `toml:"rotary_pct" json:"rotary_pct,omitempty"`
	// RopeScaling rescales the rotary frequencies: "" (none) or "llama3" (Llama 3.1's wavelength-dependent scaling, with the rope_* keys below).
	RopeScaling string `toml:"rope_scaling" json:"rope_scaling,omitempty"`
	// RopeFactor is llama3 scaling's factor.
	RopeFactor float64 `toml:"rope_factor" json:"rope_factor,omitempty"`
	// RopeLowFreqFactor is llama3 scaling's low_freq_factor.
	RopeLowFreqFactor float64 `toml:"rope_low_freq_factor" json:"rope_low_freq_factor,omitempty"`
	// RopeHighFreqFactor is llama3 scaling's high_freq_factor.
	RopeHighFreqFactor float64 `toml:"rope_high_freq_factor" json:"rope_high_freq_factor,omitempty"`
	// RopeOriginalContext is llama3 scaling's original_max_position_embeddings.
	RopeOriginalContext int `toml:"rope_original_context" json:"rope_original_context,omitempty"`
	// Bias adds biases to the attention projections (Llama's attention_bias); gpt_neox always has them.
	Bias bool `toml:"bias" json:"bias,omitempty"`
	// ParallelResidual computes x + attn(norm1(x)) + mlp(norm2(x)) (gpt_neox's use_parallel_residual).
	ParallelResidual bool `toml:"parallel_residual" json:"parallel_residual,omitempty"`
	// DType is how imported weights were stored: "float32", "bfloat16" or "float16"; memo computes in float32 on the CPU either way.
	DType string `toml:"dtype" json:"dtype,omitempty"`
}

// Architectures memo builds.
const (
	ArchLlama   = "llama"
	ArchGPTNeoX = "gpt_neox"
)

type preset struct{ dim, layers, heads, context int }

// presets are named sizes so that a sweep over model size is one axis.
var presets = map[string]preset{
	"nano":   {64, 2, 4, 256},
	"tiny":   {128, 2, 4, 256},
	"small":  {256, 4, 8, 256},
	"medium": {512, 6, 8, 512},
	"base":   {768, 12, 12, 1024},
}

// Presets lists the preset names from smallest to largest.
func Presets() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return presets[names[i]].dim < presets[names[j]].dim })
	return names
}

// DefaultConfig is the tiny preset; Vocab comes from the tokenizer.
func DefaultConfig() Config { return Config{Preset: "tiny"} }

// DefaultFFN is 8d/3 rounded up to a multiple of 8, the SwiGLU size that
// keeps the MLP's parameter count near a 4d GELU MLP's.
func DefaultFFN(dim int) int { return ((8*dim+2)/3 + 7) / 8 * 8 }

// Resolve fills every field the config leaves at zero from its preset and
// the architecture's defaults, and validates the result.
func (c Config) Resolve() (Config, error) {
	r := c
	if r.Preset != "" {
		p, ok := presets[r.Preset]
		if !ok {
			return Config{}, fmt.Errorf("model.preset = %q: must be one of %s", r.Preset, strings.Join(Presets(), ", "))
		}
		if r.Dim == 0 {
			r.Dim = p.dim
		}
		if r.Layers == 0 {
			r.Layers = p.layers
		}
		if r.Heads == 0 {
			r.Heads = p.heads
		}
		if r.Context == 0 {
			r.Context = p.context
		}
	}
	if r.Arch == "" {
		r.Arch = ArchLlama
	}
	if r.FFN == 0 && r.Dim > 0 {
		r.FFN = DefaultFFN(r.Dim)
		if r.Arch == ArchGPTNeoX {
			r.FFN = 4 * r.Dim
		}
	}
	if r.KVHeads == 0 {
		r.KVHeads = r.Heads
	}
	if r.HeadDim == 0 && r.Heads > 0 && r.Dim%r.Heads == 0 {
		r.HeadDim = r.Dim / r.Heads
	}
	if r.NormEps == 0 {
		r.NormEps = defaultNormEps
	}
	if r.RopeTheta == 0 {
		r.RopeTheta = defaultRopeTheta
	}
	if r.RotaryPct == 0 {
		r.RotaryPct = 1
	}
	if r.DType == "" {
		r.DType = "float32"
	}
	if r.Arch == ArchGPTNeoX {
		r.Bias = true // GPT-NeoX's projections always carry biases
	}
	return r, r.Validate()
}

const (
	defaultNormEps   = 1e-5
	defaultRopeTheta = 10000.0
)

// Validate checks a resolved config and names the offending key.
func (c Config) Validate() error {
	switch {
	case c.Vocab <= 0:
		return fmt.Errorf("model.vocab = %d: must be > 0 (the tokenizer's vocabulary size)", c.Vocab)
	case c.Dim <= 0:
		return fmt.Errorf("model.dim = %d: must be > 0 (or set model.preset)", c.Dim)
	case c.Layers <= 0:
		return fmt.Errorf("model.layers = %d: must be > 0 (or set model.preset)", c.Layers)
	case c.Heads <= 0 || c.HeadDim == 0 && c.Dim%c.Heads != 0:
		return fmt.Errorf("model.heads = %d: must be > 0 and divide model.dim = %d", c.Heads, c.Dim)
	case c.HeadDim <= 0 || c.HeadDim%2 != 0:
		return fmt.Errorf("model.heads = %d: head size %d must be even for rotary embeddings", c.Heads, c.HeadDim)
	case c.KVHeads <= 0 || c.Heads%c.KVHeads != 0:
		return fmt.Errorf("model.kv_heads = %d: must be > 0 and divide model.heads = %d", c.KVHeads, c.Heads)
	case c.FFN <= 0:
		return fmt.Errorf("model.ffn = %d: must be > 0", c.FFN)
	case c.Context <= 0:
		return fmt.Errorf("model.context = %d: must be > 0 (or set model.preset)", c.Context)
	case c.Arch != ArchLlama && c.Arch != ArchGPTNeoX:
		return fmt.Errorf("model.arch = %q: must be %q or %q", c.Arch, ArchLlama, ArchGPTNeoX)
	case !(c.NormEps > 0):
		return fmt.Errorf("model.norm_eps = %g: must be > 0", c.NormEps)
	case !(c.RopeTheta > 0):
		return fmt.Errorf("model.rope_theta = %g: must be > 0", c.RopeTheta)
	case !(c.RotaryPct > 0 && c.RotaryPct <= 1) || c.RotaryDim() < 2 || c.RotaryDim()%2 != 0:
		return fmt.Errorf("model.rotary_pct = %g: must be in (0, 1] and rotate an even number of each head's %d dimensions (it rotates %d)", c.RotaryPct, c.HeadDim, c.RotaryDim())
	case c.Arch == ArchLlama && c.RotaryPct != 1:
		return fmt.Errorf("model.rotary_pct = %g: partial rotary is gpt_neox's; llama rotates whole heads (1)", c.RotaryPct)
	case c.Arch == ArchLlama && c.ParallelResidual:
		return fmt.Errorf("model.parallel_residual = true: only arch %q has a parallel residual", ArchGPTNeoX)
	case c.Arch == ArchGPTNeoX && c.KVHeads != c.Heads:
		return fmt.Errorf("model.kv_heads = %d: gpt_neox has one key/value head per query head (%d)", c.KVHeads, c.Heads)
	case c.DType != "float32" && c.DType != "bfloat16" && c.DType != "float16":
		return fmt.Errorf("model.dtype = %q: must be float32, bfloat16 or float16", c.DType)
	case c.InitFrom != "" && !strings.HasPrefix(c.InitFrom, "hf:"):
		return fmt.Errorf("model.init_from = %q: want hf:DIR, a Hugging Face model directory (memo checkpoints go in train.init_from)", c.InitFrom)
	}
	switch c.RopeScaling {
	case "":
	case "llama3":
		switch {
		case c.Arch != ArchLlama:
			return fmt.Errorf("model.rope_scaling = %q: only for arch %q", c.RopeScaling, ArchLlama)
		case !(c.RopeFactor > 0):
			return fmt.Errorf("model.rope_factor = %g: must be > 0 with rope_scaling = llama3", c.RopeFactor)
		case !(c.RopeLowFreqFactor > 0 && c.RopeHighFreqFactor > c.RopeLowFreqFactor):
			return fmt.Errorf("model.rope_low_freq_factor = %g, rope_high_freq_factor = %g: want 0 < low < high", c.RopeLowFreqFactor, c.RopeHighFreqFactor)
		case c.RopeOriginalContext <= 0:
			return fmt.Errorf("model.rope_original_context = %d: must be > 0 with rope_scaling = llama3", c.RopeOriginalContext)
		}
	default:
		return fmt.Errorf("model.rope_scaling = %q: must be empty or \"llama3\"", c.RopeScaling)
	}
	return nil
}

// RotaryDim is the number of each head's dimensions that rotate:
// int(HeadDim·RotaryPct), as Hugging Face's GPT-NeoX computes it.
func (c Config) RotaryDim() int { return int(float64(c.HeadDim) * c.RotaryPct) }

// SameNetwork reports whether c and o describe the same computation, that
// is the same parameter shapes and the same function of them: the preset
// name, seed, init_from and stored dtype do not matter.
func (c Config) SameNetwork(o Config) bool {
	for _, x := range []*Config{&c, &o} {
		x.Preset, x.Seed, x.InitFrom, x.DType = "", 0, "", ""
	}
	return c == o
}

// Params is the parameter count of a resolved config. For memo's own
// decoder (llama, no biases, kv_heads = heads) that is
// V·d + layers·(4d² + 3d·ffn + 2d) + d, plus V·d when the head is untied.
func (c Config) Params() int64 {
	v, d, f, l := int64(c.Vocab), int64(c.Dim), int64(c.FFN), int64(c.Layers)
	q, kv := int64(c.Heads*c.HeadDim), int64(c.KVHeads*c.HeadDim)
	attn := d*(q+2*kv) + q*d
	if c.Bias {
		attn += q + 2*kv + d
	}
	mlp, norms, final := 3*d*f, 2*d, d
	if c.Arch == ArchGPTNeoX {
		mlp, norms, final = 2*d*f+f+d, 4*d, 2*d
	}
	n := v*d + l*(attn+mlp+norms) + final
	if c.Untied {
		n += v * d
	}
	return n
}

// FLOPsPerToken is the training cost of one token at full context:
// FLOPsPerTokenAt(Context).
func (c Config) FLOPsPerToken() float64 { return c.FLOPsPerTokenAt(c.Context) }

// FLOPsPerTokenAt is the forward+backward cost of one token in a sequence
// of seq tokens: 6 per weight that multiplies (the embedding lookup of an
// untied model is a gather, not a product) plus attention's
// 12·layers·seq·(heads·head_dim) (scores and weighted sum, forward and
// backward, counted without the causal half as PaLM's appendix B does).
func (c Config) FLOPsPerTokenAt(seq int) float64 {
	n := c.Params()
	if c.Untied {
		n -= int64(c.Vocab) * int64(c.Dim)
	}
	return 6*float64(n) + 12*float64(c.Layers)*float64(seq)*float64(c.Heads*c.HeadDim)
}

// String is a one-line summary for logs.
func (c Config) String() string {
	arch := ""
	if c.Arch == ArchGPTNeoX || c.KVHeads != c.Heads || c.Bias || c.RopeScaling != "" {
		arch = fmt.Sprintf(" arch=%s kv_heads=%d head_dim=%d rotary=%d rope_theta=%g rope_scaling=%q", c.Arch, c.KVHeads, c.HeadDim, c.RotaryDim(), c.RopeTheta, c.RopeScaling)
	}
	return fmt.Sprintf("preset=%s vocab=%d dim=%d layers=%d heads=%d ffn=%d context=%d untied=%v%s params=%d flops/token=%.3g",
		c.Preset, c.Vocab, c.Dim, c.Layers, c.Heads, c.FFN, c.Context, c.Untied, arch, c.Params(), c.FLOPsPerToken())
}
