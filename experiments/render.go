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
		fmt.Fprintf(b, "[%s]\n", key)
		if f.Kind() == reflect.Map {
			keys := f.MapKeys()
			names := make([]string, len(keys))
			for j, k := range keys {
				names[j] = k.String()
			}
			sort.Strings(names)
			for _, n := range names {
				val, err := tomlValue(f.MapIndex(reflect.ValueOf(n)).Interface())
				if err != nil {
					return fmt.Errorf("%s.%s: %w", key, n, err)
				}
				fmt.Fprintf(b, "%q = %s\n", n, val)
			}
			continue
		}
		if err := renderTable(b, f, key, docs); err != nil {
			return err
		}
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
