package hftok

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// obj is one JSON object of tokenizer.json, read key by key. Every key a
// component has must be consumed by the code that builds it: done() reports
// the rest, so an option we do not implement is an error instead of being
// silently ignored (the Rust library would act on it).
type obj struct {
	where string // "pre_tokenizer.pretokenizers[1]", for errors
	m     map[string]json.RawMessage
	used  map[string]bool
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	return len(s) == 0 || string(s) == "null"
}

func parseObj(raw json.RawMessage, where string) (*obj, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %s: %w", where, err)
	}
	if m == nil {
		return nil, fmt.Errorf("tokenizer.json: %s: want an object, got null", where)
	}
	return &obj{where: where, m: m, used: map[string]bool{}}, nil
}

func (o *obj) errorf(format string, args ...any) error {
	return fmt.Errorf("tokenizer.json: %s: %s", o.where, fmt.Sprintf(format, args...))
}

// raw returns the value of key (nil when absent or null) and marks it used.
func (o *obj) raw(key string) json.RawMessage {
	o.used[key] = true
	v := o.m[key]
	if isNull(v) {
		return nil
	}
	return v
}

func (o *obj) has(key string) bool { return o.raw(key) != nil }

// get decodes key into v when present; it reports whether it was.
func (o *obj) get(key string, v any) (bool, error) {
	r := o.raw(key)
	if r == nil {
		return false, nil
	}
	if err := json.Unmarshal(r, v); err != nil {
		return true, o.errorf("%s = %s: %v", key, clip(r), err)
	}
	return true, nil
}

func (o *obj) str(key, def string) (string, error) {
	s := def
	_, err := o.get(key, &s)
	return s, err
}

func (o *obj) boolean(key string, def bool) (bool, error) {
	b := def
	_, err := o.get(key, &b)
	return b, err
}

func (o *obj) integer(key string, def int) (int, error) {
	n := def
	_, err := o.get(key, &n)
	return n, err
}

// typ is the "type" field every component carries.
func (o *obj) typ() string {
	t, _ := o.str("type", "")
	return t
}

// ignore marks keys the library reads but that cannot change ids or text
// (offsets only, or legacy spellings checked elsewhere).
func (o *obj) ignore(keys ...string) {
	for _, k := range keys {
		o.used[k] = true
	}
}

// done fails on keys nobody read.
func (o *obj) done() error {
	var left []string
	for k := range o.m {
		if !o.used[k] {
			left = append(left, k)
		}
	}
	if len(left) == 0 {
		return nil
	}
	sort.Strings(left)
	return o.errorf("option %q is not supported", strings.Join(left, `", "`))
}

// unsupported is the error for a component type memo does not read,
// naming the types it does (Sequence aside).
func unsupported(where, typ string, supported ...string) error {
	return fmt.Errorf("tokenizer.json: %s type %q is not supported (memo reads %s)", where, typ, strings.Join(supported, ", "))
}

// clip shortens a JSON value for an error message.
func clip(r json.RawMessage) string {
	s := string(r)
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

// replacement reads a Replace step, normalizer or decoder alike: what
// its pattern matches and the content that takes its place.
func (o *obj) replacement() (matcher, string, error) {
	m, _, err := o.pattern("pattern")
	if err != nil {
		return nil, "", err
	}
	content, err := o.str("content", "")
	return m, content, err
}

// pattern is the {"String": s} or {"Regex": r} of Split, Replace.
func (o *obj) pattern(key string) (matcher, string, error) {
	var p struct {
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	}
	ok, err := o.get(key, &p)
	if err != nil {
		return nil, "", err
	}
	switch {
	case !ok:
		return nil, "", o.errorf("%s is missing", key)
	case p.String != nil && p.Regex == nil:
		if *p.String == "" {
			return nil, "", o.errorf(`%s: an empty "String" pattern is not supported`, key)
		}
		return literal(*p.String), *p.String, nil
	case p.Regex != nil && p.String == nil:
		m, err := compileRegex(*p.Regex)
		if err != nil {
			return nil, "", o.errorf("%s: Regex %q: %v", key, *p.Regex, err)
		}
		return m, *p.Regex, nil
	}
	return nil, "", o.errorf(`%s = %s: want {"String": ...} or {"Regex": ...}`, key, clip(o.m[key]))
}

// parseComponent reads one component of tokenizer.json as all four kinds
// (normalizer, pre-tokenizer, post-processor, decoder) are written: null
// is none; type "Sequence" lists components of the same kind under
// listKey (parse reads each, seq joins them); any other type is one's to
// read. Either way a key nobody read fails it (obj.done).
func parseComponent[T comparable](raw json.RawMessage, where, listKey string,
	parse func(json.RawMessage, string) (T, error), seq func([]T) T,
	one func(o *obj, where, t string) (T, error)) (T, error) {
	var zero T
	if isNull(raw) {
		return zero, nil
	}
	o, err := parseObj(raw, where)
	if err != nil {
		return zero, err
	}
	var c T
	if t := o.typ(); t == "Sequence" {
		list, err := parseList(o, listKey, where, parse)
		if err != nil {
			return zero, err
		}
		c = seq(list)
	} else if c, err = one(o, where, t); err != nil {
		return zero, err
	}
	return c, o.done()
}

// parseList reads the components a Sequence lists under key, leaving out
// null ones.
func parseList[T comparable](o *obj, key, where string, parse func(json.RawMessage, string) (T, error)) ([]T, error) {
	var list []json.RawMessage
	if _, err := o.get(key, &list); err != nil {
		return nil, err
	}
	var zero T
	out := make([]T, 0, len(list))
	for i, r := range list {
		c, err := parse(r, fmt.Sprintf("%s.%s[%d]", where, key, i))
		if err != nil {
			return nil, err
		}
		if c != zero {
			out = append(out, c)
		}
	}
	return out, nil
}
