package experiments

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/memo-research/memo/internal/badinput"
)

// ParseWithOverrides is Parse with `--set key=value` overrides applied to
// the file first: any key of the spec (model.preset, train.lr,
// goldfish.k, sweep."goldfish.k", …), its value written as in TOML
// (3e-3, "tiny", [0, 4], true); a value that is not valid TOML is taken as
// a string, so --set model.preset=tiny works unquoted. The overridden spec
// goes through every check a file does, so an unknown key or a bad value
// is refused by name. Errors name the file "FILE (with --set …)" and the
// key's line in FILE (none when --set gave the key).
func ParseWithOverrides(path string, sets []string) (*Spec, error) {
	if len(sets) == 0 {
		return Parse(path)
	}
	doc, err := readSpecFile(path)
	if err != nil {
		return nil, &ConfigError{File: path, Msg: fmt.Sprintf("cannot read the spec: %v", badinput.PathCause(err))}
	}
	out, err := applyOverrides(doc, sets)
	if err != nil {
		return nil, &ConfigError{File: path, Msg: err.Error()}
	}
	given := map[string]bool{} // the keys --set gave, which no line of the file holds
	for _, s := range sets {
		k, _, _ := strings.Cut(s, "=")
		given[strings.TrimSpace(k)] = true
	}
	spec, err := ParseBytes(path+" (with --set "+strings.Join(sets, " ")+")", out)
	var ce *ConfigError
	if errors.As(err, &ce) && ce.Key != "" {
		// Line numbers of the rewritten document mean nothing to the
		// user: point at the key's line in the file, unless --set gave it.
		ce.Line = keyLine(doc, ce.Key)
		if given[ce.Key] {
			ce.Line = 0
			ce.Msg = bareStringMsg(sets, ce.Key, ce.Msg)
		}
	}
	if err == nil {
		// Checks after parsing (CheckDevices, a sweep's points) locate
		// keys in the user's file too.
		spec.lines, spec.set = stripBOM(doc), given
		spec.path, spec.sets = path, sets
	}
	return spec, err
}

// applyOverrides sets each key=value of sets in the TOML document doc.
func applyOverrides(doc []byte, sets []string) ([]byte, error) {
	raw := map[string]any{}
	if err := toml.Unmarshal(stripBOM(doc), &raw); err != nil {
		return nil, fmt.Errorf("not valid TOML: %v", err)
	}
	for _, s := range sets {
		key, value, ok := strings.Cut(s, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" || strings.HasPrefix(key, ".") || strings.HasSuffix(key, ".") {
			return nil, fmt.Errorf("--set %q: want KEY=VALUE, e.g. --set train.lr=1e-3", s)
		}
		v, err := overrideValue(strings.TrimSpace(value))
		if err != nil {
			return nil, fmt.Errorf("--set %q: %v", s, err)
		}
		if err := setOverride(raw, key, v); err != nil {
			return nil, fmt.Errorf("--set %q: %v", s, err)
		}
	}
	return toml.Marshal(raw)
}

// setOverride is setPath, except that a quoted sweep axis
// (sweep."goldfish.k") is one key of the sweep table.
func setOverride(raw map[string]any, key string, v any) error {
	if axis, ok := strings.CutPrefix(key, "sweep."); ok {
		sweep, _ := raw["sweep"].(map[string]any)
		if sweep == nil {
			sweep = map[string]any{}
			raw["sweep"] = sweep
		}
		sweep[strings.Trim(axis, `"`)] = v
		return nil
	}
	return setPath(raw, key, v)
}

// bareStringMsg is msg, a wrong-type error of key, said of the --set text
// it came from when that text is no TOML value and was read as a string
// (--set model.preset=tiny): "train.steps=1 2" said "the value is a TOML
// string", which the user never wrote.
func bareStringMsg(sets []string, key, msg string) string {
	_, takes, ok := strings.Cut(msg, "wrong type: the value is a TOML string, the key takes ")
	if !ok {
		return msg
	}
	for _, s := range slices.Backward(sets) { // the last --set of a key wins
		k, text, _ := strings.Cut(s, "=")
		if strings.TrimSpace(k) != key {
			continue
		}
		text = strings.TrimSpace(text)
		var holder map[string]any
		if toml.Unmarshal([]byte("v = "+text), &holder) == nil {
			return msg // a quoted string: the message says what it was
		}
		if text == "" {
			return "--set gave no value; the key takes " + takes
		}
		return fmt.Sprintf("%q is not a TOML value, so --set read it as a string; the key takes %s", text, takes)
	}
	return msg
}

// overrideValue parses a TOML value, or takes the text as a string.
func overrideValue(text string) (any, error) {
	var holder map[string]any
	if err := toml.Unmarshal([]byte("v = "+text), &holder); err == nil {
		if len(holder) != 1 {
			// "5\nbogus = 1" parses as two keys; taking v alone would drop
			// the rest without a word.
			return nil, fmt.Errorf("value %q is more than one TOML value: give one key=value a --set", text)
		}
		return holder["v"], nil
	}
	if strings.ContainsAny(text, "\"[]{}\n") {
		return nil, fmt.Errorf("value %s is not valid TOML", text)
	}
	if _, err := strconv.ParseInt(text, 10, 64); errors.Is(err, strconv.ErrRange) {
		// A number too large, not a string.
		return nil, fmt.Errorf("value %s is out of range (TOML integers are 64-bit: -9223372036854775808 to 9223372036854775807)", text)
	}
	if _, err := strconv.ParseFloat(text, 64); errors.Is(err, strconv.ErrRange) {
		return nil, fmt.Errorf("value %s is out of range (a TOML float is at most about 1.8e308 in magnitude)", text)
	}
	return text, nil
}

// stripBOM drops a UTF-8 byte-order mark, which editors on some systems
// put at the start of a file.
func stripBOM(doc []byte) []byte { return []byte(strings.TrimPrefix(string(doc), "\ufeff")) }

// OverrideTables applies `--set table.key=value` overrides to v, a pointer
// to a struct of stage tables (as memo extract holds the run's [extract]),
// with the checks a spec file gets: an unknown key is refused by name with a
// suggestion, a wrong type or a value out of range by its table's Validate.
func OverrideTables(v any, sets []string) error {
	if len(sets) == 0 {
		return nil
	}
	doc, err := toml.Marshal(v)
	if err != nil {
		return fmt.Errorf("--set: %w", err)
	}
	out, err := applyOverrides(doc, sets)
	if err != nil {
		return &ConfigError{File: "--set", Msg: err.Error()}
	}
	_, err = loadInto("--set "+strings.Join(sets, " "), out, v)
	var ce *ConfigError
	if errors.As(err, &ce) {
		ce.Line = 0 // a line of the document memo wrote, not of anything the user wrote
	}
	return err
}
