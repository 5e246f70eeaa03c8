package experiments

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// renderTOML writes a spec struct as TOML with each key's doc comment above
// it: `memo config --defaults` and `memo config FILE` print this.
func renderTOML(v any, docs map[string]string) (string, error) {
	var b strings.Builder
	if err := renderTable(&b, reflect.Indirect(reflect.ValueOf(v)), "", docs); err != nil {
		return "", err
	}
	return b.String(), nil
}

func renderTable(b *strings.Builder, v reflect.Value, prefix string, docs map[string]string) error {
	t := v.Type()
	var tables []int
	for i := 0; i < t.NumField(); i++ {
		name := tomlName(t.Field(i))
		if name == "" {
			continue
		}
		f := v.Field(i)
		key := join(prefix, name)
		switch f.Kind() {
		case reflect.Struct:
			tables = append(tables, i)
			continue
		case reflect.Map:
			if f.Len() == 0 {
				writeComment(b, docs[key])
				fmt.Fprintf(b, "# [%s]\n# \"goldfish.k\" = [0, 4]\n", key)
				continue
			}
			tables = append(tables, i)
			continue
		case reflect.Slice:
			if f.Len() > 0 && f.Type().Elem().Kind() == reflect.Map {
				// [[sweep_points]]: an array of tables, after the keys
				// (tomlValue wrote it as a key's value cut at its first =).
				tables = append(tables, i)
				continue
			}
		case reflect.Interface:
			if f.IsNil() {
				// A key of several TOML types (extract.checkpoints) left
				// unset has the default its comment names; TOML has no null.
				writeComment(b, docs[key])
				fmt.Fprintf(b, "# %s: unset (its default)\n", name)
				continue
			}
		}
		writeComment(b, docs[key])
		val, err := tomlValue(f.Interface())
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		fmt.Fprintf(b, "%s = %s\n", name, val)
	}
	for _, i := range tables {
		key := join(prefix, tomlName(t.Field(i)))
		f := v.Field(i)
		b.WriteString("\n")
		writeComment(b, docs[key])
		if f.Kind() == reflect.Slice {
			for j := 0; j < f.Len(); j++ {
				if j > 0 {
					b.WriteString("\n")
				}
				fmt.Fprintf(b, "[[%s]]\n", key)
				if err := renderMap(b, f.Index(j), fmt.Sprintf("%s[%d]", key, j)); err != nil {
					return err
				}
			}
			continue
		}
		fmt.Fprintf(b, "[%s]\n", key)
		if f.Kind() == reflect.Map {
			if err := renderMap(b, f, key); err != nil {
				return err
			}
			continue
		}
		if err := renderTable(b, f, key, docs); err != nil {
			return err
		}
	}
	return nil
}

// renderMap writes a map of dotted keys (a [sweep] table, a
// [[sweep_points]] entry) as quoted keys in sorted order.
func renderMap(b *strings.Builder, m reflect.Value, key string) error {
	if m.Kind() == reflect.Interface {
		m = m.Elem()
	}
	keys := m.MapKeys()
	names := make([]string, len(keys))
	for j, k := range keys {
		names[j] = k.String()
	}
	sort.Strings(names)
	for _, n := range names {
		val, err := tomlValue(m.MapIndex(reflect.ValueOf(n)).Interface())
		if err != nil {
			return fmt.Errorf("%s.%s: %w", key, n, err)
		}
		fmt.Fprintf(b, "%q = %s\n", n, val)
	}
	return nil
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func writeComment(b *strings.Builder, doc string) {
	if doc == "" {
		return
	}
	for _, l := range strings.Split(doc, "\n") {
		b.WriteString(strings.TrimRight("# "+l, " ") + "\n")
	}
}

// tomlValue encodes one value the way go-toml writes it in a key/value line.
func tomlValue(v any) (string, error) {
	out, err := toml.Marshal(map[string]any{"v": v})
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(out))
	_, val, ok := strings.Cut(s, "=")
	if !ok {
		return "", fmt.Errorf("cannot encode %T as a TOML value", v)
	}
	return strings.TrimSpace(val), nil
}
