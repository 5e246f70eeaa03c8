package experiments

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// checkTypes compares every value the file sets (raw, as go-toml reads
// it) with the Go type of its key, before the typed decode: go-toml
// reports some mismatches with its Go types and no line ("cannot decode
// TOML array into struct field train.Config.Steps of type int"), one
// with the value where the type belongs ("cannot assign boolean to a
// true"), and panicked on a date given to a number (reflect.Set). Keys
// the struct lacks are left to the decode's unknown-key error.
func checkTypes(file string, doc []byte, raw map[string]any, t reflect.Type) error {
	return checkTableTypes(file, doc, raw, t, "")
}

func checkTableTypes(file string, doc []byte, table map[string]any, t reflect.Type, prefix string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := tomlName(f)
		v, set := table[name]
		if name == "" || !set {
			continue
		}
		key := joinKey(prefix, name)
		if entries, ok := v.(map[string]any); ok && derefType(f.Type).Kind() == reflect.Map {
			// A [sweep] axis is named, with its line, not its table.
			for _, k := range slices.Sorted(maps.Keys(entries)) {
				if why := typeMismatch(entries[k], derefType(f.Type).Elem()); why != "" {
					sub := key + "." + k
					line := keyLine(doc, sub)
					if _, isTable := entries[k].(map[string]any); isTable {
						why += fmt.Sprintf(": quote a dotted axis, \"%s.%s\" = [...]", k, firstKey(entries[k]))
						if line == 0 {
							line = keyLine(doc, sub+"."+firstKey(entries[k]))
						}
					}
					return &ConfigError{File: file, Line: line, Key: sub, Msg: sub + ": " + why}
				}
			}
		}
		if why := typeMismatch(v, f.Type); why != "" {
			return &ConfigError{File: file, Line: keyLine(doc, key), Key: key, Msg: key + ": " + why}
		}
		if sub, ok := v.(map[string]any); ok && derefType(f.Type).Kind() == reflect.Struct {
			if err := checkTableTypes(file, doc, sub, derefType(f.Type), key); err != nil {
				return err
			}
		}
	}
	return nil
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// typeMismatch says why v, a value go-toml read, cannot be decoded into a
// Go value of type t ("" when it can, as far as its kind goes: ranges
// and the float-for-integer case are left to the decode, whose messages
// say them).
func typeMismatch(v any, t reflect.Type) string {
	t = derefType(t)
	kind := tomlKind(v)
	fits := true
	switch t.Kind() {
	case reflect.Interface:
		return ""
	case reflect.Bool:
		fits = kind == "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		fits = kind == "integer" || kind == "float" // a float: the decode's message
		if n, ok := v.(int64); ok && t.Kind() == reflect.Int32 && (n < math.MinInt32 || n > math.MaxInt32) {
			// go-toml's "number does not fit in an int32" names no key.
			return fmt.Sprintf("%d does not fit: the key takes a 32-bit integer, from %d to %d", n, math.MinInt32, math.MaxInt32)
		}
	case reflect.Float32, reflect.Float64:
		fits = kind == "integer" || kind == "float"
	case reflect.String:
		fits = kind == "string"
	case reflect.Slice, reflect.Array:
		items, ok := v.([]any)
		if !ok {
			fits = false
			break
		}
		for _, item := range items {
			if why := typeMismatch(item, t.Elem()); why != "" {
				return "an element of the array: " + why
			}
		}
	case reflect.Map:
		entries, ok := v.(map[string]any)
		if !ok {
			fits = false
			break
		}
		for _, e := range entries {
			if why := typeMismatch(e, t.Elem()); why != "" {
				return why
			}
		}
	case reflect.Struct:
		fits = kind == "table"
	}
	if fits {
		return ""
	}
	return fmt.Sprintf("wrong type: the value is a TOML %s, the key takes %s", kind, describeGoType(t.String()))
}

// tomlKind names the TOML type of a value go-toml read into an any.
func tomlKind(v any) string {
	switch v.(type) {
	case bool:
		return "boolean"
	case int64:
		return "integer"
	case float64:
		return "float"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "table"
	case toml.LocalDate:
		return "date"
	case toml.LocalTime:
		return "time"
	case toml.LocalDateTime, time.Time:
		return "date-time"
	}
	return fmt.Sprintf("%T", v)
}

// firstKey is the first key of a table go-toml read (v), in order.
func firstKey(v any) string {
	m, _ := v.(map[string]any)
	if len(m) == 0 {
		return "key"
	}
	return slices.Sorted(maps.Keys(m))[0]
}
