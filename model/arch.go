package model

import (
	"fmt"
	"sort"
	"strings"
)

// An Arch is one decoder family as Hugging Face transformers defines it:
// how its config.json maps to a Config and back, what its tensors are
// called, and the recipe its blocks follow. Each family is one file,
// arch_<name>.go, that declares an Arch and registers it; the forward pass
// (gpt.go) reads only the recipe, so adding a family is that file plus its
// golden checkpoint.
type Arch struct {
	// Name is model.arch's value.
	Name string
	// ModelTypes are the config.json model_type values it imports; Class is
	// the architectures entry its exports carry.
	ModelTypes []string
	Class      string
	Recipe
	// Names are the tensor names (without .weight/.bias).
	Names Names
	// Defaults fills what the family fixes or defaults in a config that
	// leaves it at zero (Resolve calls it before validating); may be nil.
	Defaults func(c *Config)
	// Validate refuses settings the family cannot compute; may be nil.
	Validate func(c Config) error
	// FromHF maps config.json's keys (reading them through h, which counts
	// the keys used) to a config; ToHF writes them back in the form asked.
	FromHF func(h *hfReader) (Config, error)
	ToHF   func(c Config, out map[string]any, form HFForm)
}

// Recipe is how a family's blocks compute; see gpt.go's block for the
// order in which the pieces meet.
type Recipe struct {
	Norm NormKind
	// PreNorm normalizes each branch's input; PostNorm its output before
	// the residual sum (OLMo 2 has only the second, Gemma both).
	PreNorm, PostNorm bool
	QKV               QKVLayout
	QKNorm            QKNormKind
	MLP               MLPKind
	Act               Activation
	Positions         PositionKind
	// Conv1D: linear weights are stored [in, out] (GPT-2's Conv1D), not
	// [out, in].
	Conv1D bool
	// EmbedScale multiplies the embeddings by sqrt(dim) (Gemma).
	EmbedScale bool
	// Unscaled attention scores are q·k without 1/sqrt(head_dim) (GPT-Neo).
	Unscaled bool
	// OutBias says when the attention output projection has a bias.
	OutBias BiasRule
	// MLPBias gives the MLP's projections biases.
	MLPBias bool
}

// BiasRule says when a projection carries a bias.
type BiasRule int

const (
	// BiasWithQKV: when Config.Bias gives q, k and v theirs (Llama's attention_bias).
	BiasWithQKV BiasRule = iota
	// BiasAlways (GPT-Neo's output projection).
	BiasAlways
	// BiasNever (Qwen2's output projection).
	BiasNever
)

// NormKind is a family's normalization.
type NormKind int

const (
	// NormRMS is x/rms(x)·w.
	NormRMS NormKind = iota
	// NormRMSOffset is x/rms(x)·(1+w): Gemma stores the gain minus one.
	NormRMSOffset
	// NormLayer is LayerNorm with gain and bias.
	NormLayer
	// NormLayerPlain is LayerNorm without parameters (OLMo).
	NormLayerPlain
)

// QKVLayout is how the query, key and value projections are stored.
type QKVLayout int

const (
	// QKVSeparate: q_proj, k_proj, v_proj, concatenated for one product.
	QKVSeparate QKVLayout = iota
	// QKVFused: one weight, rows q then k then v (Phi-3, GPT-2).
	QKVFused
	// QKVPerHead: one weight whose rows are q|k|v of head 0, then of head
	// 1, … (GPT-NeoX; key/value heads equal query heads).
	QKVPerHead
)

// QKNormKind normalizes queries and keys before the rotary embedding.
type QKNormKind int

const (
	QKNormNone QKNormKind = iota
	// QKNormHead normalizes each head's vector (Qwen3, Gemma 3).
	QKNormHead
	// QKNormFull normalizes the whole projection, all heads at once (OLMo 2).
	QKNormFull
)

// MLPKind is the feed-forward block's layout.
type MLPKind int

const (
	// MLPGated is down(act(gate(x)) · up(x)) with separate gate and up.
	MLPGated MLPKind = iota
	// MLPGatedFused is MLPGated with one gate_up weight, gate rows first.
	MLPGatedFused
	// MLPPlain is down(act(up(x))).
	MLPPlain
)

// Activation is the MLP's nonlinearity.
type Activation int

const (
	ActSiLU Activation = iota
	// ActGELU is the exact (erf) GELU.
	ActGELU
	// ActGELUTanh is GELU's tanh approximation (gelu_new, gelu_pytorch_tanh).
	ActGELUTanh
)

// PositionKind is how positions enter the network.
type PositionKind int

const (
	// PosRotary rotates queries and keys (rotate-half).
	PosRotary PositionKind = iota
	// PosLearned adds a learned position embedding to the token embedding.
	PosLearned
)

// Names are a family's tensor names without the .weight/.bias suffix.
// Layer is the prefix of block i's names, with one %d; the block's module
// names follow it. A module the recipe does not use is left empty.
type Names struct {
	Embed, Positions, FinalNorm, Head string
	Layer                             string
	AttnNorm, AttnPostNorm            string
	Q, K, V, QKV, QNorm, KNorm, Out   string
	MLPNorm, MLPPostNorm              string
	Gate, Up, GateUp, Down            string
}

// HFForm is the form of config.json to write: transformers 5's
// (rope_parameters, dtype) or 4's (rope_theta, rope_scaling, torch_dtype).
type HFForm int

const (
	HFForm5 HFForm = 5
	HFForm4 HFForm = 4
)

var archs = map[string]*Arch{}

// register adds a family; each arch_*.go calls it from init.
func register(a *Arch) {
	if _, dup := archs[a.Name]; dup {
		panic("model: architecture " + a.Name + " registered twice")
	}
	archs[a.Name] = a
}

// Architectures lists model.arch's valid values.
func Architectures() []string {
	names := make([]string, 0, len(archs))
	for n := range archs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// archOf finds a registered family.
func archOf(name string) (*Arch, error) {
	a, ok := archs[name]
	if !ok {
		return nil, fmt.Errorf("model.arch = %q: must be one of %s", name, strings.Join(Architectures(), ", "))
	}
	return a, nil
}

// archForModelType finds the family that imports a config.json model_type.
func archForModelType(t string) (*Arch, bool) {
	for _, a := range archs {
		for _, m := range a.ModelTypes {
			if m == t {
				return a, true
			}
		}
	}
	return nil, false
}

// modelTypes lists every importable model_type, for error messages.
func modelTypes() string {
	var out []string
	for _, a := range archs {
		out = append(out, a.ModelTypes...)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// weightKind says how a fresh weight starts.
type weightKind int

const (
	matrixWeight weightKind = iota // N(0, 0.02), decayed
	gainWeight                     // ones (zeros for NormRMSOffset, whose gain is 1+w)
	biasWeight                     // zeros
)

// slot is where in the model a tensor goes: the model-level weights, or
// module mod of block layer.
type slot struct {
	layer int // -1 for the model-level tensors
	mod   module
	bias  bool
}

// module is a block's (or the model's) piece that owns a weight and maybe
// a bias. The order here is the order of Params within a block.
type module int

const (
	modAttnNorm module = iota
	modQ
	modK
	modV
	modQKV
	modQNorm
	modKNorm
	modOut
	modAttnPostNorm
	modMLPNorm
	modGate
	modUp
	modGateUp
	modDown
	modMLPPostNorm
	numBlockModules
	// model-level
	modEmbed = numBlockModules + iota
	modPositions
	modFinalNorm
	modHead
)

// tensorSpec is one tensor of a family's layout.
type tensorSpec struct {
	Name  string
	Shape []int64
	Kind  weightKind
	slot  slot
}

func (m module) isNorm() bool {
	switch m {
	case modAttnNorm, modAttnPostNorm, modMLPNorm, modMLPPostNorm, modQNorm, modKNorm, modFinalNorm:
		return true
	}
	return false
}

// name is module m's name in a's Names.
func (a *Arch) name(m module) string {
	n := a.Names
	return [...]string{modAttnNorm: n.AttnNorm, modQ: n.Q, modK: n.K, modV: n.V, modQKV: n.QKV,
		modQNorm: n.QNorm, modKNorm: n.KNorm, modOut: n.Out, modAttnPostNorm: n.AttnPostNorm,
		modMLPNorm: n.MLPNorm, modGate: n.Gate, modUp: n.Up, modGateUp: n.GateUp, modDown: n.Down,
		modMLPPostNorm: n.MLPPostNorm, modEmbed: n.Embed, modPositions: n.Positions,
		modFinalNorm: n.FinalNorm, modHead: n.Head}[m]
}

// uses reports whether a block of this recipe has module m.
func (r Recipe) uses(m module) bool {
	switch m {
	case modAttnNorm, modMLPNorm:
		return r.PreNorm
	case modAttnPostNorm, modMLPPostNorm:
		return r.PostNorm
	case modQ, modK, modV:
		return r.QKV == QKVSeparate
	case modQKV:
		return r.QKV != QKVSeparate
	case modQNorm, modKNorm:
		return r.QKNorm != QKNormNone
	case modGate:
		return r.MLP == MLPGated
	case modUp:
		return r.MLP != MLPGatedFused
	case modGateUp:
		return r.MLP == MLPGatedFused
	}
	return true
}

// shape is module m's weight shape [out, in] ([in, out] for Conv1D), or
// [n] for a norm's gain and any bias (n the output size).
func (a *Arch) shape(c Config, m module) (out, in int64) {
	d, f := int64(c.Dim), int64(c.FFN)
	q, kv := int64(c.Heads*c.HeadDim), int64(c.KVHeads*c.HeadDim)
	switch m {
	case modQ:
		return q, d
	case modK, modV:
		return kv, d
	case modQKV:
		return q + 2*kv, d
	case modOut:
		return d, q
	case modGate, modUp:
		return f, d
	case modGateUp:
		return 2 * f, d
	case modDown:
		return d, f
	case modQNorm:
		if a.QKNorm == QKNormFull {
			return q, 0
		}
		return int64(c.HeadDim), 0
	case modKNorm:
		if a.QKNorm == QKNormFull {
			return kv, 0
		}
		return int64(c.HeadDim), 0
	case modEmbed, modHead:
		return int64(c.Vocab), d
	case modPositions:
		return int64(c.Context), d
	}
	return d, 0 // the other norms
}

// hasBias reports whether module m carries a bias under c.
func (a *Arch) hasBias(c Config, m module) bool {
	switch m {
	case modQ, modK, modV, modQKV:
		return c.Bias
	case modOut:
		return a.OutBias == BiasAlways || a.OutBias == BiasWithQKV && c.Bias
	case modGate, modUp, modGateUp, modDown:
		return a.MLPBias
	}
	return m.isNorm() && a.Norm == NormLayer
}

// layout lists every tensor of a model with config c, in Params order:
// the embedding (and learned positions), each block's modules in module
// order (weight, then bias), the final norm, and the untied head.
func (a *Arch) layout(c Config) []tensorSpec {
	var out []tensorSpec
	add := func(layer int, prefix string, m module) {
		rows, cols := a.shape(c, m)
		name := prefix + a.name(m)
		if m.isNorm() {
			if a.Norm != NormLayerPlain {
				out = append(out, tensorSpec{name + ".weight", []int64{rows}, gainWeight, slot{layer, m, false}})
			}
		} else {
			shape := []int64{rows, cols}
			if cols == 0 {
				shape = shape[:1]
			} else if a.Conv1D && m < numBlockModules {
				shape = []int64{cols, rows}
			}
			out = append(out, tensorSpec{name + ".weight", shape, matrixWeight, slot{layer, m, false}})
		}
		if a.hasBias(c, m) {
			out = append(out, tensorSpec{name + ".bias", []int64{rows}, biasWeight, slot{layer, m, true}})
		}
	}
	add(-1, "", modEmbed)
	if a.Positions == PosLearned {
		add(-1, "", modPositions)
	}
	for i := 0; i < c.Layers; i++ {
		prefix := fmt.Sprintf(a.Names.Layer, i)
		for m := module(0); m < numBlockModules; m++ {
			if a.uses(m) {
				add(i, prefix, m)
			}
		}
	}
	add(-1, "", modFinalNorm)
	if c.Untied {
		add(-1, "", modHead)
	}
	return out
}

// headName is the untied head's tensor name in this family, which a
// tied model's files may still carry as a copy of the embedding.
func (a *Arch) headName() string { return a.Names.Head + ".weight" }
