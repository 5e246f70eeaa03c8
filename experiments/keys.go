package experiments

import (
	"reflect"
	"sort"
	"strings"
)

// tomlName is the key a struct field has in TOML ("" for skipped fields).
func tomlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag := f.Tag.Get("toml")
	if tag == "-" {
		return ""
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name
}

// tableKeys lists the valid keys of the table at path (a dotted key of nested
// tables; "" is the root) in a struct type, and whether path is a table.
func tableKeys(t reflect.Type, path string) ([]string, bool) {
	ft, ok := fieldType(t, path)
	if !ok || ft.Kind() != reflect.Struct {
		return nil, false
	}
	var keys []string
	for i := 0; i < ft.NumField(); i++ {
		if n := tomlName(ft.Field(i)); n != "" {
			keys = append(keys, n)
		}
	}
	sort.Strings(keys)
	return keys, true
}

// fieldType follows a dotted key through struct fields.
func fieldType(t reflect.Type, path string) (reflect.Type, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if path == "" {
		return t, true
	}
	head, rest, _ := strings.Cut(path, ".")
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	for i := 0; i < t.NumField(); i++ {
		if tomlName(t.Field(i)) == head {
			return fieldType(t.Field(i).Type, rest)
		}
	}
	return nil, false
}

// leafKeys lists every dotted key of scalar or array fields under t, the keys
// a sweep axis may name.
func leafKeys(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		n := tomlName(f)
		if n == "" {
			continue
		}
		key := n
		if prefix != "" {
			key = prefix + "." + n
		}
		ft := f.Type
		if ft.Kind() == reflect.Struct {
			out = append(out, leafKeys(ft, key)...)
			continue
		}
		if ft.Kind() == reflect.Map {
			continue
		}
		out = append(out, key)
	}
	return out
}
