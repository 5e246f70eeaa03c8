package experiments

import (
	"fmt"
	"sort"
	"strings"
)

// Axis is one [sweep] entry: a dotted spec key and the values it takes.
type Axis struct {
	Key    string
	Values []any
}

// sortedAxes orders axes by key so that grid order and run names do not
// depend on map iteration.
func sortedAxes(sweep map[string][]any) []Axis {
	axes := make([]Axis, 0, len(sweep))
	for k, v := range sweep {
		axes = append(axes, Axis{k, v})
	}
	sort.Slice(axes, func(i, j int) bool { return axes[i].Key < axes[j].Key })
	return axes
}

// grid is the cartesian product of the axes' values, the last axis varying
// fastest.
func grid(axes []Axis) [][]any {
	out := [][]any{{}}
	for _, a := range axes {
		var next [][]any
		for _, prefix := range out {
			for _, v := range a.Values {
				p := append(append([]any(nil), prefix...), v)
				next = append(next, p)
			}
		}
		out = next
	}
	return out
}

// axisLabels gives each axis a short name for run names: the last part of its
// key, or the whole key (dots as dashes) when two axes share a last part.
func axisLabels(axes []Axis) []string {
	count := map[string]int{}
	for _, a := range axes {
		count[lastPart(a.Key)]++
	}
	labels := make([]string, len(axes))
	for i, a := range axes {
		if l := lastPart(a.Key); count[l] == 1 {
			labels[i] = l
		} else {
			labels[i] = strings.ReplaceAll(a.Key, ".", "-")
		}
	}
	return labels
}

func lastPart(k string) string { return k[strings.LastIndex(k, ".")+1:] }

// pointName names a grid point after its values, e.g. "k=4_preset=tiny".
func pointName(labels []string, vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = labels[i] + "=" + sanitize(formatValue(v))
	}
	return strings.Join(parts, "_")
}

func formatValue(v any) string {
	if a, ok := v.([]any); ok {
		s := make([]string, len(a))
		for i, x := range a {
			s[i] = formatValue(x)
		}
		return strings.Join(s, "-")
	}
	return fmt.Sprint(v)
}

// sanitize keeps a name safe in paths, shells and Slurm job names.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '+':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	return b.String()
}

// deepCopy copies a decoded TOML document so that each grid point can be
// edited on its own.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		a := make([]any, len(t))
		for i, x := range t {
			a[i] = deepCopy(x)
		}
		return a
	}
	return v
}

// setPath sets a dotted key in a decoded TOML document, making tables on the way.
func setPath(m map[string]any, key string, v any) error {
	parts := strings.Split(key, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p]
		if !ok {
			nm := map[string]any{}
			m[p] = nm
			m = nm
			continue
		}
		nm, ok := next.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %s is not a table", key, p)
		}
		m = nm
	}
	m[parts[len(parts)-1]] = v
	return nil
}

// sortedKeys are m's keys in order, so that an extra sweep point's name
// does not depend on map iteration.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
