package model

import (
	"reflect"
	"regexp"
	"strings"
)

// memoKey matches the spec keys (model.heads) a Config's errors name.
var memoKey = regexp.MustCompile(`model\.[a-z_]+`)

// hfNames rewrites the spec keys in msg, an error about c as read from a
// config.json whose top-level keys are file, as that file's own keys
// (model.heads as num_attention_heads, model.dtype as torch_dtype): a user
// mends the file, not a spec. A key is found by writing c back with its
// value marked, so each family's writer names its keys, in either of
// transformers' forms; a key not found stays memo's.
func hfNames(c Config, msg string, file map[string]bool) string {
	// A file has no preset to fall back on.
	msg = strings.ReplaceAll(msg, " (or set model.preset)", "")
	return memoKey.ReplaceAllStringFunc(msg, func(m string) string {
		key := strings.TrimPrefix(m, "model.")
		if key == "dtype" {
			for _, k := range []string{"torch_dtype", "dtype"} {
				if file[k] {
					return k
				}
			}
			return m
		}
		if hf := hfKeyOf(c, key, file); hf != "" {
			return hf
		}
		return m
	})
}

// hfKeyOf is the config.json key among file that holds Config's spec key
// key, or "".
func hfKeyOf(c Config, key string, file map[string]bool) (found string) {
	f, ok := fieldByTOML(&c, key)
	if !ok {
		return ""
	}
	var mark any
	switch f.Kind() {
	case reflect.Int:
		f.SetInt(7_654_321)
		mark = 7_654_321
	case reflect.Float64:
		f.SetFloat(7_654_321.5)
		mark = 7_654_321.5
	default:
		return ""
	}
	defer func() {
		if recover() != nil { // a writer that cannot take the marked value
			found = ""
		}
	}()
	for _, form := range []HFForm{HFForm5, HFForm4} {
		for k, v := range c.HFConfigForm(form) {
			if !file[k] {
				continue
			}
			if v == mark {
				return k
			}
			if nested, ok := v.(map[string]any); ok {
				for nk, nv := range nested {
					if nv == mark {
						return k + "." + nk
					}
				}
			}
		}
	}
	return ""
}

// fieldByTOML is the settable field of *c whose toml tag is key.
func fieldByTOML(c *Config, key string) (reflect.Value, bool) {
	v := reflect.ValueOf(c).Elem()
	for i := 0; i < v.NumField(); i++ {
		if name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("toml"), ","); name == key {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}
