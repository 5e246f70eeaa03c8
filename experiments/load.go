package experiments

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// validator is what every stage Config implements.
type validator interface{ Validate() error }

// loadInto parses doc over spec, a pointer to a struct holding the defaults:
// syntax, unknown keys and wrong types first (each a ConfigError with a line),
// then the experiment seed copied into stage tables that set none, then each
// table's Validate (except the tables in skip, which the caller checks its
// own way). It returns the document as decoded TOML for sweeps.
func loadInto(file string, doc []byte, spec any, skip ...string) (map[string]any, error) {
	raw := map[string]any{}
	if err := toml.Unmarshal(doc, &raw); err != nil {
		return nil, syntaxError(file, doc, err)
	}
	if err := checkKeyCase(file, doc, raw, reflect.TypeOf(spec)); err != nil {
		return nil, err
	}
	if err := checkTypes(file, doc, raw, reflect.TypeOf(spec)); err != nil {
		return nil, err
	}
	if err := decodeStrict(file, doc, spec); err != nil {
		return nil, err
	}
	propagateSeed(spec, raw)
	if err := checkSweepAxes(file, doc, spec, raw); err != nil {
		return nil, err
	}
	if err := checkBounds(file, doc, spec); err != nil {
		return nil, err
	}
	if err := validateTables(file, doc, spec, skip); err != nil {
		return nil, err
	}
	return raw, nil
}

// propagateSeed copies the top-level seed into the seed of every table that
// has one and that the file leaves unset.
func propagateSeed(spec any, raw map[string]any) {
	v := reflect.ValueOf(spec).Elem()
	t := v.Type()
	var seed reflect.Value
	for i := 0; i < t.NumField(); i++ {
		if tomlName(t.Field(i)) == "seed" {
			seed = v.Field(i)
		}
	}
	if !seed.IsValid() || !seed.CanInt() {
		return
	}
	for i := 0; i < t.NumField(); i++ {
		f := v.Field(i)
		table := tomlName(t.Field(i))
		if f.Kind() != reflect.Struct || table == "" {
			continue
		}
		if tab, ok := raw[table].(map[string]any); ok {
			if _, set := tab["seed"]; set {
				continue
			}
		}
		for j := 0; j < f.NumField(); j++ {
			if tomlName(f.Type().Field(j)) != "seed" {
				continue
			}
			switch s := f.Field(j); {
			case s.CanInt():
				s.SetInt(seed.Int())
			case s.CanUint():
				s.SetUint(uint64(seed.Int()))
			}
		}
	}
}

// checkSweepAxes rejects axes (and keys of extra sweep points) that name no
// key of the spec, empty axes and empty points. Whether each value fits its
// key is checked when the grid is expanded.
func checkSweepAxes(file string, doc []byte, spec any, raw map[string]any) error {
	valid := leafKeys(reflect.TypeOf(spec), "")
	isValid := map[string]bool{}
	for _, k := range valid {
		isValid[k] = true
	}
	pts, _ := raw["sweep_points"].([]any)
	for i, p := range pts {
		m, _ := p.(map[string]any)
		if len(m) == 0 {
			return &ConfigError{File: file, Line: keyLine(doc, "sweep_points"), Key: "sweep_points",
				Msg: fmt.Sprintf("[[sweep_points]] number %d sets no key; give it dotted keys with one value each, e.g. \"goldfish.k\" = 0", i+1)}
		}
		for key := range m {
			if why := unsweepable(key); why != "" {
				return &ConfigError{File: file, Line: keyLine(doc, "sweep_points."+key), Key: "sweep_points." + key,
					Msg: fmt.Sprintf("[[sweep_points]] number %d: %s cannot vary: %s", i+1, key, why)}
			}
			if !isValid[key] {
				return &ConfigError{File: file, Line: keyLine(doc, "sweep_points."+key), Key: "sweep_points." + key,
					Msg: fmt.Sprintf("[[sweep_points]] number %d: %q is not a key of the spec; %swrite keys as \"table.key\", e.g. \"goldfish.k\"", i+1, key, suggestion(key, valid))}
			}
		}
	}
	sw, ok := raw["sweep"].(map[string]any)
	if !ok {
		return nil
	}
	for axis, vals := range sw {
		line := keyLine(doc, "sweep."+axis)
		if why := unsweepable(axis); why != "" {
			return &ConfigError{File: file, Line: line, Key: "sweep." + axis,
				Msg: fmt.Sprintf("%s cannot be a sweep axis: %s", axis, why)}
		}
		if !isValid[axis] {
			return &ConfigError{File: file, Line: line, Key: "sweep." + axis,
				Msg: fmt.Sprintf("sweep axis %q is not a key of the spec; %swrite axes as \"table.key\", e.g. \"goldfish.k\"", axis, suggestion(axis, valid))}
		}
		if a, ok := vals.([]any); !ok || len(a) == 0 {
			return &ConfigError{File: file, Line: line, Key: "sweep." + axis, Msg: "a sweep axis needs a non-empty array of values"}
		}
	}
	// The grid is every combination, built whole before anything runs: a
	// few lines of axes can ask for more runs than memory holds (9 axes of
	// 10 values, a billion points).
	points, sizes := 1, make([]string, 0, len(sw))
	for _, axis := range sortedKeys(sw) {
		n := len(sw[axis].([]any))
		points = min(points*n, maxSweepPoints+1) // capped: no overflow
		sizes = append(sizes, fmt.Sprintf("%s %d", axis, n))
	}
	if points > maxSweepPoints {
		line := 0
		if ls := headerLines(doc, "sweep"); len(ls) > 0 {
			line = ls[0]
		}
		return &ConfigError{File: file, Line: line, Key: "sweep",
			Msg: fmt.Sprintf("the grid has more than %d points (%s values, each combination a run): split it into several sweeps, or list the runs wanted as [[sweep_points]]", maxSweepPoints, strings.Join(sizes, " × "))}
	}
	return nil
}

// maxSweepPoints bounds a sweep's grid: well past any sweep run on one
// cluster allocation, far below what would exhaust memory expanding it.
const maxSweepPoints = 10000

// validateTables runs each table's Validate; the error's leading
// "table.key" (the stage packages' convention) locates its line.
func validateTables(file string, doc []byte, spec any, skip []string) error {
	v := reflect.ValueOf(spec).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if !t.Field(i).IsExported() || contains(skip, tomlName(t.Field(i))) {
			continue
		}
		val, ok := v.Field(i).Interface().(validator)
		if !ok {
			continue
		}
		if err := val.Validate(); err != nil {
			return locate(file, doc, tomlName(t.Field(i)), err)
		}
	}
	return nil
}

// locate makes a ConfigError of a validation error, finding the line of the
// key it names when the file sets it.
func locate(file string, doc []byte, table string, err error) *ConfigError {
	msg := err.Error()
	// errors.Join gives one problem per line; the first is the one to fix.
	if lines := strings.Split(msg, "\n"); len(lines) > 1 {
		msg = fmt.Sprintf("%s (and %d more problems)", lines[0], len(lines)-1)
	}
	key, _, _ := strings.Cut(msg, " ")
	key = strings.TrimRight(key, ":,")
	if !strings.Contains(key, ".") {
		key = table
	}
	return &ConfigError{File: file, Line: keyLine(doc, key), Key: key, Msg: msg}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// unsweepable says why key cannot vary over a sweep's points, "" when it
// can: a point named by its own value, a sweep inside each point (whose
// runs the outer sweep never saw), or [slurm], which a point's
// config.toml leaves out (its points would differ in name alone).
func unsweepable(key string) string {
	switch {
	case key == "name":
		return "each point's directory is named from the values it sweeps"
	case key == "sweep" || key == "sweep_points" || strings.HasPrefix(key, "sweep."):
		return "a point would be a sweep of its own"
	case key == "slurm" || strings.HasPrefix(key, "slurm."):
		return "[slurm] is how a sweep is submitted, not part of a run's spec: every point would train the same; submit sweeps with other [slurm] settings instead"
	}
	return ""
}
