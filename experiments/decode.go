package experiments

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// decodeStrict decodes doc over v, which holds the defaults, so that keys the
// file leaves out keep their default. Unknown keys and wrong types become a
// ConfigError naming file, line and key.
func decodeStrict(file string, doc []byte, v any) (err error) {
	defer func() {
		// checkTypes catches the mismatches known to panic in go-toml
		// (reflect.Set of a date); any other is still the file's fault.
		if r := recover(); r != nil {
			err = &ConfigError{File: file, Msg: fmt.Sprintf("a value does not fit its key's type (%v)", r)}
		}
	}()
	dec := toml.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	if err == nil {
		return nil
	}
	var missing *toml.StrictMissingError
	if errors.As(err, &missing) && len(missing.Errors) > 0 {
		e := missing.Errors[0]
		line, _ := e.Position()
		ce := unknownKey(file, line, e.Key(), reflect.TypeOf(v))
		if n := len(missing.Errors) - 1; n > 0 {
			// Named, so that one run of memo config finds every typo.
			var more []string
			for _, e := range missing.Errors[1:] {
				l, _ := e.Position()
				more = append(more, fmt.Sprintf("%s (line %d)", strings.Join(e.Key(), "."), l))
			}
			ce.Msg += "; also unknown: " + strings.Join(more, ", ")
		}
		return ce
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, _ := de.Position()
		key := keyAt(doc, line)
		msg := typeMessage(de.Error())
		if boolToOtherRE.MatchString(msg) {
			// go-toml names the value where it means the key's type.
			if ft, ok := fieldType(reflect.TypeOf(v), key); ok {
				msg = "wrong type: the value is a TOML boolean, the key takes " + describeGoType(ft.String())
			}
		}
		return &ConfigError{File: file, Line: line, Key: key, Msg: msg}
	}
	return syntaxError(file, doc, err)
}

// syntaxError is err, go-toml's failure to read doc, as a ConfigError with
// the line where go-toml gives one or where a key is set twice (for which
// it gives none).
func syntaxError(file string, doc []byte, err error) *ConfigError {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, _ := de.Position()
		msg := "TOML syntax: " + strings.TrimPrefix(de.Error(), "toml: ")
		switch {
		// strconv's words: the number is written right but too large.
		case strings.Contains(msg, "value out of range") && strings.Contains(msg, "ParseFloat"):
			msg = "the number is out of range (a TOML float is at most about 1.8e308 in magnitude)"
		case strings.Contains(msg, "value out of range"):
			msg = "the integer is out of range (TOML integers are 64-bit: -9223372036854775808 to 9223372036854775807)"
		}
		return &ConfigError{File: file, Line: line, Key: keyAt(doc, line), Msg: msg}
	}
	if m := duplicateRE.FindStringSubmatch(err.Error()); m != nil {
		if line, key := secondDefinition(doc, m[1]); line > 0 {
			return &ConfigError{File: file, Line: line, Key: key, Msg: fmt.Sprintf("%s is set twice (once above); keep one", key)}
		}
	}
	if m := valueThenTableRE.FindStringSubmatch(err.Error()); m != nil {
		if lines := headerLines(doc, m[1]); len(lines) > 0 {
			return &ConfigError{File: file, Line: lines[0], Key: m[1], Msg: fmt.Sprintf("[%s] is opened as a table after %s was set as a value; keep the table", m[1], m[1])}
		}
	}
	if m := tableTwiceRE.FindStringSubmatch(err.Error()); m != nil {
		lines := headerLines(doc, m[1])
		if len(lines) > 1 {
			return &ConfigError{File: file, Line: lines[1], Key: m[1], Msg: fmt.Sprintf("[%s] is opened twice (once above); keep one, holding all its keys", m[1])}
		}
		// One header, after dotted keys that made the table already
		// (train.steps = 5 at the top, then [train]).
		if len(lines) == 1 {
			for i, l := range strings.Split(string(doc), "\n")[:lines[0]-1] {
				if k, _, ok := strings.Cut(strings.TrimSpace(l), "="); ok && strings.HasPrefix(strings.TrimSpace(k), m[1]+".") {
					return &ConfigError{File: file, Line: lines[0], Key: m[1], Msg: fmt.Sprintf("[%s] is opened after line %d set %s as a dotted key, which made the table already; write its keys under [%s]", m[1], i+1, strings.TrimSpace(k), m[1])}
				}
			}
		}
	}
	return &ConfigError{File: file, Msg: err.Error()}
}

// valueThenTableRE is go-toml's message for a key set as a value and then
// opened as a [table], which gives no line.
var valueThenTableRE = regexp.MustCompile(`^toml: key (\S+) should be a table, not a value$`)

// tableTwiceRE is go-toml's message for a [table] header written twice,
// which gives no line.
var tableTwiceRE = regexp.MustCompile(`^toml: table (\S+) already exists$`)

// headerLines are the lines of doc's [table] headers.
func headerLines(doc []byte, table string) []int {
	var lines []int
	for i, l := range strings.Split(string(doc), "\n") {
		l, _, _ = strings.Cut(l, "#")
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "[") && !strings.HasPrefix(l, "[[") && strings.HasSuffix(l, "]") && strings.TrimSpace(l[1:len(l)-1]) == table {
			lines = append(lines, i+1)
		}
	}
	return lines
}

var duplicateRE = regexp.MustCompile(`^toml: key (\S+) is already defined$`)

// secondDefinition is the line and dotted key of the first key of doc set
// a second time whose last part is name; 0 when none is.
func secondDefinition(doc []byte, name string) (line int, key string) {
	seen := map[string]bool{}
	eachKey(doc, func(l int, full, k string) bool {
		if seen[full] && (k == name || strings.HasSuffix(k, "."+name)) {
			line, key = l, full
			return false
		}
		seen[full] = true
		return true
	})
	return line, key
}

func unknownKey(file string, line int, key []string, t reflect.Type) *ConfigError {
	// Find the deepest prefix of key that is a real table: the first part
	// after it is the unknown one.
	table := ""
	i := 0
	for ; i < len(key)-1; i++ {
		next := strings.Join(key[:i+1], ".")
		if _, ok := tableKeys(t, next); !ok {
			break
		}
		table = next
	}
	bad := key[i]
	valid, _ := tableKeys(t, table)
	where := "at the top level"
	if table != "" {
		where = "in [" + table + "]"
	}
	msg := fmt.Sprintf("unknown key %q %s; %s", bad, where, suggestion(bad, valid))
	if len(valid) <= 16 {
		msg += "valid keys: " + strings.Join(valid, ", ")
	} else {
		msg += "see `memo config --defaults` for the valid keys"
	}
	full := strings.Join(key[:i+1], ".")
	return &ConfigError{File: file, Line: line, Key: full, Msg: strings.TrimRight(msg, "; ")}
}

var mismatchRE = regexp.MustCompile(`cannot decode TOML (\w+(?: \w+)?) into (?:struct field \S+ of type|a Go value of type) (\S+)`)

// floatToIntRE is go-toml's message for a float (1e3, inf) given to an
// integer key.
var floatToIntRE = regexp.MustCompile(`^float cannot be assigned to u?int\d*$`)

// boolToOtherRE is go-toml's message for true or false given to a key that
// is no boolean: "cannot assign boolean to a true", the value where the
// type belongs.
var boolToOtherRE = regexp.MustCompile(`^cannot assign boolean to a (true|false)$`)

// typeMessage turns go-toml's message, which names Go types, into one that
// names what the file should say.
func typeMessage(msg string) string {
	msg = strings.TrimPrefix(msg, "toml: ")
	if floatToIntRE.MatchString(msg) {
		return "wrong type: the value is a TOML float, the key takes an integer (write 1000, not 1e3 or 1000.0)"
	}
	m := mismatchRE.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	return fmt.Sprintf("wrong type: the value is a TOML %s, the key takes %s", m[1], describeGoType(m[2]))
}

func describeGoType(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		switch elem := describeGoType(t[2:]); elem {
		case "an integer", "a number", "a string", "a table", "a value":
			return "an array of " + elem[strings.Index(elem, " ")+1:] + "s"
		default:
			return "an array of " + strings.TrimPrefix(strings.TrimPrefix(elem, "an "), "a ")
		}
	case t == "interface {}" || t == "any":
		return "a value" // not "an integer": "interface" begins with "int"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "map["), strings.Contains(t, "."):
		return "a table" // a map, or a struct of memo's (train.Config)
	}
	return "a " + t
}

// keyAt names the dotted key defined on a line of doc, tracking [table]
// headers above it: a header line names its table, any other line that
// sets no key the table it sits in ("" at the top level).
func keyAt(doc []byte, line int) string {
	name := ""
	walkSpec(doc, func(l int, table, key string) bool {
		if l < line {
			return true
		}
		name = table
		if key != "" {
			name = joinKey(table, key)
		}
		return false
	})
	return name
}

// keyLine finds the line defining a dotted key, 0 when the file does not set it.
func keyLine(doc []byte, key string) int {
	line := 0
	eachKey(doc, func(l int, full, _ string) bool {
		if full == key {
			line = l
		}
		return line == 0
	})
	if line == 0 {
		// A table's name: the line of its [header].
		lines := strings.Split(string(doc), "\n")
		walkSpec(doc, func(l int, table, k string) bool {
			if k == "" && table == key && strings.HasPrefix(strings.TrimSpace(lines[l-1]), "[") {
				line = l
			}
			return line == 0
		})
	}
	return line
}

// eachKey calls fn with the line, the dotted key (under its [table]) and
// the key as written of each key = value line of doc, in order, until fn
// returns false.
func eachKey(doc []byte, fn func(line int, full, key string) bool) {
	walkSpec(doc, func(line int, table, key string) bool {
		return key == "" || fn(line, joinKey(table, key), key)
	})
}

// walkSpec calls fn with each line of doc, in order, until fn returns
// false: its number, the [table] it sits in (or heads) and the key it
// sets, "" for a header, comment or any line without key = value.
func walkSpec(doc []byte, fn func(line int, table, key string) bool) {
	table := ""
	for i, l := range strings.Split(string(doc), "\n") {
		s := strings.TrimSpace(l)
		key := ""
		if h, ok := tableHeader(s); ok {
			table = h
		} else if k, _, ok := strings.Cut(s, "="); ok && !strings.HasPrefix(s, "#") {
			key = unquoteKey(strings.TrimSpace(k))
		}
		if !fn(i+1, table, key) {
			return
		}
	}
}

func joinKey(table, key string) string {
	if table == "" {
		return key
	}
	return table + "." + key
}

func tableHeader(s string) (string, bool) {
	if !strings.HasPrefix(s, "[") {
		return "", false
	}
	// An array of tables ([[sweep_points]]) is located by its name: a key
	// of the first such table that sets it.
	s = strings.TrimPrefix(s, "[")
	end := strings.Index(s, "]")
	if end < 0 {
		return "", false
	}
	return unquoteKey(strings.TrimSpace(strings.TrimPrefix(s[:end], "["))), true
}

func unquoteKey(k string) string {
	parts := strings.Split(k, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}

// checkKeyCase refuses keys that name a field only when case is ignored
// (Train.lr, train.LR): go-toml matches struct fields case-insensitively,
// so without this check such a key would set a value without a word. raw
// is doc decoded as TOML; t the type doc is decoded into. The error names
// the first such key by line and, as decodeStrict does, every other key
// the file gets wrong in case or name, so one run of memo config finds
// them all.
func checkKeyCase(file string, doc []byte, raw map[string]any, t reflect.Type) error {
	type badKey struct {
		key  []string
		line int
	}
	var folded []badKey
	var walk func(m map[string]any, ft reflect.Type, path []string)
	walk = func(m map[string]any, ft reflect.Type, path []string) {
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() != reflect.Struct {
			return
		}
		for k, v := range m {
			key := append(append([]string(nil), path...), k)
			var exact, near *reflect.StructField
			for i := 0; i < ft.NumField(); i++ {
				f := ft.Field(i)
				switch n := tomlName(f); {
				case n == k:
					exact = &f
				case n != "" && strings.EqualFold(n, k):
					near = &f
				}
			}
			switch {
			case exact != nil:
				if sub, ok := v.(map[string]any); ok {
					walk(sub, exact.Type, key)
				}
			case near != nil:
				folded = append(folded, badKey{key, keyLine(doc, strings.Join(key, "."))})
			}
		}
	}
	walk(raw, t, nil)
	if len(folded) == 0 {
		return nil
	}
	// The other unknown keys, as a strict decode into a scratch value
	// finds them (it takes the folded keys for their fields).
	scratch := t
	for scratch.Kind() == reflect.Pointer {
		scratch = scratch.Elem()
	}
	var missing *toml.StrictMissingError
	dec := toml.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = nil // a type checkTypes reports next
			}
		}()
		return dec.Decode(reflect.New(scratch).Interface())
	}(); errors.As(err, &missing) {
		for _, e := range missing.Errors {
			line, _ := e.Position()
			folded = append(folded, badKey{e.Key(), line})
		}
	}
	sort.SliceStable(folded, func(i, j int) bool {
		a, b := folded[i], folded[j]
		if (a.line == 0) != (b.line == 0) {
			return b.line == 0 // keys without a line last
		}
		if a.line != b.line {
			return a.line < b.line
		}
		return strings.Join(a.key, ".") < strings.Join(b.key, ".")
	})
	ce := unknownKey(file, folded[0].line, folded[0].key, t)
	var more []string
	for _, k := range folded[1:] {
		if k.line > 0 {
			more = append(more, fmt.Sprintf("%s (line %d)", strings.Join(k.key, "."), k.line))
		} else {
			more = append(more, strings.Join(k.key, "."))
		}
	}
	if len(more) > 0 {
		ce.Msg += "; also unknown: " + strings.Join(more, ", ")
	}
	return ce
}
