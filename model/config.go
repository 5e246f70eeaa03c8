package model

import (
	"fmt"
	"slices"
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
	// Untied, when true, gives the LM head its own matrix instead of the
	// embedding's.
	Untied bool `toml:"untied" json:"untied"`
	// Seed is the seed of the weight initialisation.
	Seed int64 `toml:"seed" json:"seed"`

	// Arch is the decoder family, each declared by its model/arch_<name>.go: "llama" is memo's own (RMSNorm, SwiGLU, rotary), the others are families memo imports from Hugging Face.
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
	// RopeScaling rescales the rotary frequencies: "" (none), "linear" (positions divided by rope_factor, Hugging Face's linear scaling) or "llama3" (Llama 3.1's wavelength-dependent scaling, with the rope_* keys below).
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
	// SlidingWindow is how many recent positions a sliding-window layer attends (Mistral, Gemma, GPT-Neo's local layers); 0 means every layer attends the whole context.
	SlidingWindow int `toml:"sliding_window" json:"sliding_window,omitempty"`
	// LayerTypes lists each layer's attention, comma-separated: "full" or "sliding"; empty means every layer is sliding when sliding_window is set, else full.
	LayerTypes string `toml:"layer_types" json:"layer_types,omitempty"`
	// LocalRopeTheta is the rotary base of the sliding layers when it differs from rope_theta (Gemma 3); 0 means rope_theta.
	LocalRopeTheta float64 `toml:"local_rope_theta" json:"local_rope_theta,omitempty"`
	// AttnSoftcap caps attention scores at ±cap through tanh (Gemma 2); 0 means none.
	AttnSoftcap float64 `toml:"attn_softcap" json:"attn_softcap,omitempty"`
	// FinalSoftcap caps the logits at ±cap through tanh (Gemma 2); 0 means none.
	FinalSoftcap float64 `toml:"final_softcap" json:"final_softcap,omitempty"`
	// QueryScalar scales attention scores by 1/sqrt(query_scalar) instead of 1/sqrt(head_dim) (Gemma's query_pre_attn_scalar); 0 means head_dim.
	QueryScalar float64 `toml:"query_scalar" json:"query_scalar,omitempty"`
	// QKVClip clamps queries, keys and values to ±clip after their projection (OLMo's clip_qkv); 0 means none.
	QKVClip float64 `toml:"qkv_clip" json:"qkv_clip,omitempty"`
	// DType is how imported weights were stored: "float32", "bfloat16" or "float16"; memo computes in float32 on the CPU either way.
	DType string `toml:"dtype" json:"dtype,omitempty"`
}

// ArchLlama is memo's own decoder, the default architecture.
const ArchLlama = "llama"

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
	a, err := archOf(r.Arch)
	if err != nil {
		return Config{}, err
	}
	if a.Defaults != nil {
		a.Defaults(&r)
	}
	if r.FFN == 0 && r.Dim > 0 {
		r.FFN = DefaultFFN(r.Dim)
		if a.MLP == MLPPlain {
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
	case (c.HeadDim <= 0 || c.HeadDim%2 != 0) && c.HeadDim != c.Dim/c.Heads:
		// Set apart from model.dim / model.heads: the key named is its own.
		return fmt.Errorf("model.head_dim = %d: must be > 0 and even for rotary embeddings (0: model.dim / model.heads)", c.HeadDim)
	case c.HeadDim <= 0 || c.HeadDim%2 != 0:
		return fmt.Errorf("model.heads = %d: head size %d must be even for rotary embeddings", c.Heads, c.HeadDim)
	case c.KVHeads <= 0 || c.Heads%c.KVHeads != 0:
		return fmt.Errorf("model.kv_heads = %d: must be > 0 and divide model.heads = %d", c.KVHeads, c.Heads)
	case c.FFN <= 0:
		return fmt.Errorf("model.ffn = %d: must be > 0", c.FFN)
	case c.Context <= 0:
		return fmt.Errorf("model.context = %d: must be > 0 (or set model.preset)", c.Context)
	case !(c.NormEps > 0):
		return fmt.Errorf("model.norm_eps = %g: must be > 0", c.NormEps)
	case !(c.RopeTheta > 0):
		return fmt.Errorf("model.rope_theta = %g: must be > 0", c.RopeTheta)
	case !(c.RotaryPct > 0 && c.RotaryPct <= 1) || c.RotaryDim() < 2 || c.RotaryDim()%2 != 0:
		return fmt.Errorf("model.rotary_pct = %g: must be in (0, 1] and rotate an even number of each head's %d dimensions (it rotates %d)", c.RotaryPct, c.HeadDim, c.RotaryDim())
	case c.SlidingWindow < 0:
		return fmt.Errorf("model.sliding_window = %d: must be >= 0", c.SlidingWindow)
	case negativeOption(c) != "":
		return fmt.Errorf("model.%s: must be >= 0 (0: off)", negativeOption(c))
	case c.DType != "float32" && c.DType != "bfloat16" && c.DType != "float16":
		return fmt.Errorf("model.dtype = %q: must be float32, bfloat16 or float16", c.DType)
	case c.InitFrom != "" && !strings.HasPrefix(c.InitFrom, "hf:"):
		return fmt.Errorf("model.init_from = %q: want hf:DIR, a Hugging Face model directory (memo checkpoints go in train.init_from)", c.InitFrom)
	}
	if err := c.validateLayers(); err != nil {
		return err
	}
	a, err := archOf(c.Arch)
	if err != nil {
		return err
	}
	if a.Validate != nil {
		if err := a.Validate(c); err != nil {
			return err
		}
	}
	switch c.RopeScaling {
	case "":
		// The scaling keys without a scaling: a typo in rope_scaling's
		// absence, or a model read without it; none may be negative.
		switch {
		case c.RopeFactor < 0:
			return fmt.Errorf("model.rope_factor = %g: must be >= 0 (0: none; used with rope_scaling)", c.RopeFactor)
		case c.RopeOriginalContext < 0:
			return fmt.Errorf("model.rope_original_context = %d: must be >= 0 (0: none; used with rope_scaling = llama3)", c.RopeOriginalContext)
		}
	case "linear":
		if !(c.RopeFactor > 0) {
			return fmt.Errorf("model.rope_factor = %g: must be > 0 with rope_scaling = linear", c.RopeFactor)
		}
	case "llama3":
		switch {
		case !(c.RopeFactor > 0):
			return fmt.Errorf("model.rope_factor = %g: must be > 0 with rope_scaling = llama3", c.RopeFactor)
		case !(c.RopeLowFreqFactor > 0 && c.RopeHighFreqFactor > c.RopeLowFreqFactor):
			return fmt.Errorf("model.rope_low_freq_factor = %g, rope_high_freq_factor = %g: want 0 < low < high", c.RopeLowFreqFactor, c.RopeHighFreqFactor)
		case c.RopeOriginalContext <= 0:
			return fmt.Errorf("model.rope_original_context = %d: must be > 0 with rope_scaling = llama3", c.RopeOriginalContext)
		}
	default:
		return fmt.Errorf("model.rope_scaling = %q: must be empty, \"linear\" or \"llama3\"", c.RopeScaling)
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
	return c.canonical() == o.canonical()
}

// canonical is c without what SameNetwork ignores, and with settings
// spelled two ways for one computation spelled one way: query_scalar 0
// and head_dim; layer_types empty and each layer named.
func (c Config) canonical() Config {
	c.Preset, c.Seed, c.InitFrom, c.DType = "", 0, "", ""
	if c.QueryScalar == float64(c.HeadDim) {
		c.QueryScalar = 0 // 0 means head_dim
	}
	kinds := strings.Split(c.LayerTypes, ",")
	if c.LayerTypes == "" {
		kinds = []string{"full"}
		if c.SlidingWindow > 0 {
			kinds = []string{"sliding"}
		}
	}
	switch {
	case !slices.Contains(kinds, "sliding"):
		c.LayerTypes, c.SlidingWindow = "", 0
	case !slices.Contains(kinds, "full"):
		c.LayerTypes = ""
	}
	return c
}

// Params is the parameter count of a resolved config: the sizes of its
// family's tensors. For memo's own decoder (llama, no biases, kv_heads =
// heads) that is V·d + layers·(4d² + 3d·ffn + 2d) + d, plus V·d when the
// head is untied.
func (c Config) Params() int64 {
	a, err := archOf(c.Arch)
	if err != nil {
		return 0
	}
	var n int64
	for _, t := range a.layout(c) {
		size := int64(1)
		for _, d := range t.Shape {
			size *= d
		}
		n += size
	}
	return n
}

// MLPMatrices is how many dim × ffn matrices a block's MLP has: 3 for the
// gated families (gate, up, down: Llama, Mistral, Qwen, Gemma, OLMo,
// Phi-3), 2 for the others (up and down: GPT-2, GPT-Neo, GPT-NeoX), and
// 2 for a family memo does not know (which Resolve refuses), so that a
// lower bound built on it stays one.
func (c Config) MLPMatrices() int {
	name := c.Arch
	if name == "" {
		name = ArchLlama
	}
	if a, err := archOf(name); err == nil && a.MLP != MLPPlain {
		return 3
	}
	return 2
}

// gathered is how many parameters are looked up rather than multiplied:
// an untied model's embedding and learned position embeddings.
func (c Config) gathered() int64 {
	var n int64
	if c.Untied {
		n += int64(c.Vocab) * int64(c.Dim)
	}
	if a, err := archOf(c.Arch); err == nil && a.Positions == PosLearned {
		n += int64(c.Context) * int64(c.Dim)
	}
	return n
}

// Windows are each layer's sliding-window length, 0 for full attention.
func (c Config) Windows() []int { return c.windows() }

// windows are each layer's sliding-window length, 0 for full attention
// (one pass over layer_types: reading it per layer is quadratic, minutes
// for a config.json of 65,536 layers).
func (c Config) windows() []int {
	w := make([]int, c.Layers)
	if c.SlidingWindow == 0 {
		return w
	}
	var types []string
	if c.LayerTypes != "" {
		types = strings.Split(c.LayerTypes, ",")
	}
	for i := range w {
		if types == nil || i < len(types) && types[i] == "sliding" {
			w[i] = c.SlidingWindow
		}
	}
	return w
}

// validateLayers checks layer_types against the layer count.
func (c Config) validateLayers() error {
	if c.LayerTypes == "" {
		return nil
	}
	types := strings.Split(c.LayerTypes, ",")
	if len(types) != c.Layers {
		return fmt.Errorf("model.layer_types = %s: %d entries for %d layers", typesBrief(types), len(types), c.Layers)
	}
	for i, t := range types {
		if t != "full" && t != "sliding" {
			return fmt.Errorf("model.layer_types = %s: entry %d is %q; want full or sliding", typesBrief(types), i, clipped(t))
		}
	}
	if c.SlidingWindow == 0 && strings.Contains(c.LayerTypes, "sliding") {
		return fmt.Errorf("model.layer_types = %s has sliding layers but model.sliding_window = 0", typesBrief(types))
	}
	return nil
}

// typesBrief quotes layer_types for a message: whole when it has a few
// entries, else its first ones and the count (a list as long as the
// layers of a malformed file would make a message of megabytes).
func typesBrief(types []string) string {
	const keep = 8
	if len(types) <= keep && len(strings.Join(types, ",")) <= 200 {
		return fmt.Sprintf("%q", strings.Join(types, ","))
	}
	head := make([]string, 0, keep)
	for _, t := range types[:min(keep, len(types))] {
		head = append(head, clipped(t))
	}
	return fmt.Sprintf("%q... (%d entries)", strings.Join(head, ","), len(types))
}

// clipped is s cut to 20 bytes for a message.
func clipped(s string) string {
	if len(s) > 20 {
		return s[:20] + "..."
	}
	return s
}

// FLOPsPerToken is the training cost of one token at full context:
// FLOPsPerTokenAt(Context).
func (c Config) FLOPsPerToken() float64 { return c.FLOPsPerTokenAt(c.Context) }

// FLOPsPerTokenAt is the forward+backward cost of one token in a sequence
// of seq tokens: 6 per weight that multiplies (the embedding lookup of an
// untied model is a gather, not a product) plus attention's
// 12·layers·seq·(heads·head_dim) (scores and weighted sum, forward and
// backward, counted without the causal half as PaLM's appendix B does).
// Sliding windows are not subtracted.
func (c Config) FLOPsPerTokenAt(seq int) float64 {
	n := c.Params() - c.gathered()
	return 6*float64(n) + 12*float64(c.Layers)*float64(seq)*float64(c.Heads*c.HeadDim)
}

// String is a one-line summary for logs.
func (c Config) String() string {
	arch := ""
	if c.Arch != ArchLlama || c.KVHeads != c.Heads || c.Bias || c.RopeScaling != "" {
		arch = fmt.Sprintf(" arch=%s kv_heads=%d head_dim=%d rotary=%d rope_theta=%g rope_scaling=%q", c.Arch, c.KVHeads, c.HeadDim, c.RotaryDim(), c.RopeTheta, c.RopeScaling)
	}
	return fmt.Sprintf("preset=%s vocab=%d dim=%d layers=%d heads=%d ffn=%d context=%d untied=%v%s params=%d flops/token=%.3g",
		c.Preset, c.Vocab, c.Dim, c.Layers, c.Heads, c.FFN, c.Context, c.Untied, arch, c.Params(), c.FLOPsPerToken())
}

// negativeOption is "key = value" of the first family option that is
// negative or NaN (each is off at 0), or "".
func negativeOption(c Config) string {
	for _, o := range []struct {
		key string
		v   float64
	}{
		{"attn_softcap", c.AttnSoftcap}, {"final_softcap", c.FinalSoftcap}, {"query_scalar", c.QueryScalar},
		{"qkv_clip", c.QKVClip}, {"local_rope_theta", c.LocalRopeTheta},
	} {
		if !(o.v >= 0) {
			return fmt.Sprintf("%s = %g", o.key, o.v)
		}
	}
	return ""
}
