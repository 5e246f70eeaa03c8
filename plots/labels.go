package plots

import (
	"fmt"
	"math"
	"strings"
)

// labelRuns names each run for the legends: Variant is what sets it apart
// besides its loss (DP-SGD with its ε, LoRA with its rank, its values on
// the sweep's other axes that differ between runs), Label its loss and
// then Variant. A figure review found legends of raw run directory names
// (k=0_enabled=true_target_epsilon=8) that ran off the canvas, and
// train.dp.enabled and train.lora.enabled both shown as "enabled=true".
func labelRuns(runs []*runData, axes []string) {
	shown := variedAxes(runs, axes)
	names := shortKeys(shown)
	for _, r := range runs {
		var parts []string
		if r.Summary != nil && r.Summary.DP != nil {
			parts = append(parts, "DP-SGD ε="+epsText(r.Summary.DP.Eps()))
		}
		if l := r.loraText(); l != "" {
			parts = append(parts, l)
		}
		for _, a := range shown {
			if v, ok := r.Values[a]; ok {
				parts = append(parts, names[a]+"="+fmt.Sprint(v))
			}
		}
		r.Variant = strings.Join(parts, ", ")
		r.Label = joinLabel(r.goldfishLabel(), r.Variant)
	}
	disambiguate(runs, axes)
}

// disambiguate tells apart runs that labelRuns gave one label: the words
// for the loss, DP-SGD and LoRA leave keys out (goldfish.seed, ε rounded
// to three figures, train.dp.max_grad_norm at one target ε, lora.alpha),
// and a figure review found a goldfish.seed sweep drawn as one category
// and a DP sweep's repetitions table holding one run's rows twice. Each
// group sharing a label has the axes whose values differ within it added
// to its variants, or, where none does, the run's name.
func disambiguate(runs []*runData, axes []string) {
	groups := map[string][]*runData{}
	var order []string
	for _, r := range runs {
		if _, ok := groups[r.Label]; !ok {
			order = append(order, r.Label)
		}
		groups[r.Label] = append(groups[r.Label], r)
	}
	for _, label := range order {
		group := groups[label]
		if len(group) < 2 {
			continue
		}
		differ := differing(group, axes)
		names := shortKeys(differ)
		for _, r := range group {
			var parts []string
			for _, a := range differ {
				if v, ok := r.Values[a]; ok {
					parts = append(parts, names[a]+"="+fmt.Sprint(v))
				}
			}
			if len(differ) == 0 {
				parts = []string{r.Name}
			}
			r.Variant = joinLabel(r.Variant, strings.Join(parts, ", "))
			r.Label = joinLabel(r.goldfishLabel(), r.Variant)
		}
	}
}

// loraText is "LoRA r=8" for a run that trained LoRA adapters, else "".
func (r *runData) loraText() string {
	switch {
	case r.Summary != nil && r.Summary.LoRA != nil:
		return fmt.Sprintf("LoRA r=%d", r.Summary.LoRA.Rank)
	case r.Spec.Value != nil && r.Spec.Value("train.lora.enabled") == true:
		// A summary written before it recorded LoRA.
		return fmt.Sprintf("LoRA r=%v", r.Spec.Value("train.lora.rank"))
	}
	return ""
}

// modelText is the table's model column: the preset, and the LoRA rank
// of a run that trained adapters on it (a table review found a LoRA
// fine-tune and its full fine-tune peer both named by the base alone).
func (r *runData) modelText() string {
	if l := r.loraText(); l != "" {
		return r.Preset + ", " + l
	}
	return r.Preset
}

// variedAxes are the axes a legend names by key and value: not the loss's
// (goldfishLabel says it) nor DP-SGD's and LoRA's (said in words), and
// only those whose value differs between runs (a [[sweep_points]] key
// that other runs take from their config at the same value says nothing).
func variedAxes(runs []*runData, axes []string) []string {
	var named []string
	for _, a := range axes {
		if !lossKey(a) && !strings.HasPrefix(a, "train.dp.") && !strings.HasPrefix(a, "train.lora.") {
			named = append(named, a)
		}
	}
	return differing(runs, named)
}

// differing are the axes whose value is not the same in every run.
func differing(runs []*runData, axes []string) []string {
	var out []string
	for _, a := range axes {
		seen := map[string]bool{}
		for _, r := range runs {
			seen[fmt.Sprint(r.Values[a])] = true
		}
		if len(seen) > 1 {
			out = append(out, a)
		}
	}
	return out
}

// shortKeys names each dotted key by its shortest ending that no other
// key shares: lr for train.lr, but dp.enabled and lora.enabled.
func shortKeys(keys []string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		parts := strings.Split(k, ".")
		for n := 1; n <= len(parts); n++ {
			end := strings.Join(parts[len(parts)-n:], ".")
			unique := true
			for _, o := range keys {
				if o != k && (o == end || strings.HasSuffix(o, "."+end)) {
					unique = false
					break
				}
			}
			if unique || n == len(parts) {
				out[k] = end
				break
			}
		}
	}
	return out
}

// epsText is ε as a legend shows it: three figures, ∞ without noise.
func epsText(eps float64) string {
	if math.IsInf(eps, 1) {
		return "∞"
	}
	return fmt.Sprintf("%.3g", eps)
}
