package model

import (
	"fmt"
	"slices"
	"strings"
)

// LoRASite is one linear layer a LoRA adapter can sit on, named as Hugging
// Face names the module (PEFT's key for it).
type LoRASite struct {
	// Path is the module's Hugging Face path, "model.layers.0.self_attn.q_proj".
	Path string
	// Out and In are the layer's output and input sizes: its weight is
	// Out × In (In × Out in GPT-2's Conv1D, which PEFT calls fan_in_fan_out).
	Out, In int64
	// Conv1D is true where the family stores the weight transposed.
	Conv1D bool

	layer int
	mod   module
}

// loraModules are the block modules that are linear maps, the ones LoRA
// may adapt; norms, the embedding and the head are not adapted.
var loraModules = []module{modQ, modK, modV, modQKV, modOut, modGate, modUp, modGateUp, modDown}

// loraCandidates lists every adaptable linear layer of a model with config
// c (resolved), in layer and module order.
func loraCandidates(c Config) ([]LoRASite, error) {
	a, err := archOf(c.Arch)
	if err != nil {
		return nil, err
	}
	var out []LoRASite
	for i := 0; i < c.Layers; i++ {
		prefix := fmt.Sprintf(a.Names.Layer, i)
		for _, m := range loraModules {
			if !a.uses(m) {
				continue
			}
			o, in := a.shape(c, m)
			out = append(out, LoRASite{Path: prefix + a.name(m), Out: o, In: in, Conv1D: a.Conv1D, layer: i, mod: m})
		}
	}
	return out, nil
}

// peftMatches is PEFT's rule for a target_modules entry given as a list:
// the module's full name equals it or ends with "." + it.
func peftMatches(path, target string) bool {
	return path == target || strings.HasSuffix(path, "."+target)
}

// LoRAModuleNames are the distinct last names of the adaptable linear
// layers of a model with config c ("q_proj", "c_attn", ...), sorted: what
// train.lora.targets may name.
func LoRAModuleNames(c Config) ([]string, error) {
	cands, err := loraCandidates(c)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range cands {
		n := s.Path[strings.LastIndex(s.Path, ".")+1:]
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// LoRASites are the layers that targets (PEFT target_modules names) pick
// in a model with config c (resolved), checked as memo config checks them:
// every target must name a linear layer the family has, and rank must not
// exceed the smaller side of any picked matrix (a rank-r product of a
// smaller matrix adds parameters and no expressiveness, and is a typo).
func LoRASites(c Config, targets []string, rank int) ([]LoRASite, error) {
	cands, err := loraCandidates(c)
	if err != nil {
		return nil, err
	}
	var out []LoRASite
	for _, t := range targets {
		n := 0
		for _, s := range cands {
			if peftMatches(s.Path, t) {
				n++
			}
		}
		if n == 0 {
			have, _ := LoRAModuleNames(c)
			return nil, fmt.Errorf("train.lora.targets: %q: model.arch %s has no such linear layer; it has %s", t, c.Arch, strings.Join(have, ", "))
		}
	}
	for _, s := range cands {
		if !slices.ContainsFunc(targets, func(t string) bool { return peftMatches(s.Path, t) }) {
			continue
		}
		if side := min(s.Out, s.In); int64(rank) > side {
			return nil, fmt.Errorf("train.lora.rank = %d: larger than %s's smaller side (%d × %d)", rank, s.Path, s.Out, s.In)
		}
		out = append(out, s)
	}
	return out, nil
}
