package model

import (
	"fmt"
	"sort"
	"strings"
)

// Config is the [model] table of an experiment spec. Preset names a size;
// any non-zero field overrides the preset's value.
type Config struct {
	// Preset is one of nano, tiny, small, medium, base.
	Preset string `toml:"preset" json:"preset"`
	// Vocab is the vocabulary size (the tokenizer's); it has no preset value.
	Vocab int `toml:"vocab" json:"vocab"`
	// Dim is the model width d.
	Dim int `toml:"dim" json:"dim"`
	// Layers is the number of decoder blocks.
	Layers int `toml:"layers" json:"layers"`
	// Heads is the number of attention heads; it must divide Dim into an even head size.
	Heads int `toml:"heads" json:"heads"`
	// FFN is the SwiGLU hidden size; 0 means 8·Dim/3 rounded up to a multiple of 8.
	FFN int `toml:"ffn" json:"ffn"`
	// Context is the longest sequence the rotary tables cover.
	Context int `toml:"context" json:"context"`
	// Untied gives the LM head its own matrix instead of the embedding's.
	Untied bool `toml:"untied" json:"untied"`
	// Seed seeds the weight initialisation.
	Seed int64 `toml:"seed" json:"seed"`
}

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
// validates the result.
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
	if r.FFN == 0 && r.Dim > 0 {
		r.FFN = DefaultFFN(r.Dim)
	}
	return r, r.Validate()
}

// Validate checks a resolved config and names the offending key.
func (c Config) Validate() error {
	switch {
	case c.Vocab <= 0:
		return fmt.Errorf("model.vocab = %d: must be > 0 (the tokenizer's vocabulary size)", c.Vocab)
	case c.Dim <= 0:
		return fmt.Errorf("model.dim = %d: must be > 0 (or set model.preset)", c.Dim)
	case c.Layers <= 0:
		return fmt.Errorf("model.layers = %d: must be > 0 (or set model.preset)", c.Layers)
	case c.Heads <= 0 || c.Dim%c.Heads != 0:
		return fmt.Errorf("model.heads = %d: must be > 0 and divide model.dim = %d", c.Heads, c.Dim)
	case (c.Dim/c.Heads)%2 != 0:
		return fmt.Errorf("model.heads = %d: head size %d must be even for rotary embeddings", c.Heads, c.Dim/c.Heads)
	case c.FFN <= 0:
		return fmt.Errorf("model.ffn = %d: must be > 0", c.FFN)
	case c.Context <= 0:
		return fmt.Errorf("model.context = %d: must be > 0 (or set model.preset)", c.Context)
	}
	return nil
}

// HeadDim is Dim / Heads.
func (c Config) HeadDim() int { return c.Dim / c.Heads }

// Params is the parameter count of a resolved config:
// V·d + layers·(4d² + 3d·ffn + 2d) + d, plus V·d when the head is untied.
func (c Config) Params() int64 {
	v, d, f, l := int64(c.Vocab), int64(c.Dim), int64(c.FFN), int64(c.Layers)
	n := v*d + l*(4*d*d+3*d*f+2*d) + d
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
// untied model is a gather, not a product) plus attention's 12·layers·seq·d
// (scores and weighted sum, forward and backward, counted without the causal
// half as PaLM's appendix B does).
func (c Config) FLOPsPerTokenAt(seq int) float64 {
	n := c.Params()
	if c.Untied {
		n -= int64(c.Vocab) * int64(c.Dim)
	}
	return 6*float64(n) + 12*float64(c.Layers)*float64(seq)*float64(c.Dim)
}

// String is a one-line summary for logs.
func (c Config) String() string {
	return fmt.Sprintf("preset=%s vocab=%d dim=%d layers=%d heads=%d ffn=%d context=%d untied=%v params=%d flops/token=%.3g",
		c.Preset, c.Vocab, c.Dim, c.Layers, c.Heads, c.FFN, c.Context, c.Untied, c.Params(), c.FLOPsPerToken())
}
