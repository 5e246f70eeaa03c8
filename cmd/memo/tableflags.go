package main

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/memo-research/memo/experiments"
	"github.com/memo-research/memo/extract"
	"github.com/urfave/cli/v2"
)

// memo extract and memo eval take the keys of their spec table ([extract],
// [eval]) as flags. The flags are derived here from the table's Config
// struct, as memo run's --set is: a key added to the struct is a flag, its
// comment is the help text, and no flag restates a key by hand.
//
// A key holding a string, an int, a float, a bool or a list of strings
// (comma-separated on the command line) gets a flag named after it with '-'
// for '_' (extract.top_k: --top-k); keys of other types (extract.checkpoints,
// the [extract.loki] table) are reachable through --set.

// flagKey is one key of a table that a flag sets.
type flagKey struct {
	key   string // the dotted spec key, "extract.top_k"
	flag  string // its flag, "top-k"
	index int    // the Config field that holds it
}

// flagKeys lists the keys of table (its Config struct type t) that flags set.
func flagKeys(table string, t reflect.Type) []flagKey {
	var out []flagKey
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if !f.IsExported() || name == "" || name == "-" || !flaggable(f.Type) {
			continue
		}
		out = append(out, flagKey{key: table + "." + name, flag: strings.ReplaceAll(name, "_", "-"), index: i})
	}
	return out
}

// flaggable says whether a flag can hold a value of type t.
func flaggable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Int, reflect.Int64, reflect.Float64, reflect.Bool:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.String
	}
	return false
}

// emptyMeans is what an empty string key means, where it means a setting
// rather than nothing: the help's default says that setting.
var emptyMeans = map[string]string{
	"extract.precision": "fp32",
	"extract.decode_on": "auto",
	"extract.device":    "cpu",
}

// setBy says where the value of the key a Validate error of table names
// came from: its flag, the run's config.toml (config), or memo's default
// where the run has none.
func setBy(c *cli.Context, table string, err error, config string, hasConfig bool) string {
	msg := err.Error()
	key := msg[:strings.IndexFunc(msg+" ", func(r rune) bool { return r == ' ' || r == ':' || r == '=' })]
	if name, ok := strings.CutPrefix(key, table+"."); ok && !strings.Contains(name, ".") {
		if flag := strings.ReplaceAll(name, "_", "-"); c.IsSet(flag) {
			return "set by --" + flag
		}
	}
	// extract --approximation sets the keys its name holds: an error in
	// one of them blamed the run's config.toml, which set none.
	if name, ok := strings.CutPrefix(key, table+"."); ok && table == "extract" && c.IsSet("approximation") && slices.Contains(extract.ApproximationKeys, name) {
		return "set by --approximation"
	}
	if hasConfig {
		return "set by " + config
	}
	return "memo's default"
}

// tableFlags are the flags of table's keys; defaults (the table's Config,
// as the stage package's DefaultConfig gives it) fills in the help's
// "config.toml, else …".
func tableFlags(table string, defaults any) []cli.Flag {
	v := reflect.ValueOf(defaults)
	var flags []cli.Flag
	for _, k := range flagKeys(table, v.Type()) {
		f := v.Field(k.index)
		usage := flagUsage(k.key, v.Type().Field(k.index).Name)
		def := fmt.Sprint(f.Interface())
		switch {
		case f.Kind() == reflect.Slice:
			def = strings.Join(f.Interface().([]string), ",")
		case f.Kind() == reflect.String && def == "":
			def = "unset"
			if means, ok := emptyMeans[k.key]; ok {
				def = means
			}
		}
		shown := fromConfig(def)
		var flag cli.Flag
		switch f.Kind() {
		case reflect.String, reflect.Slice:
			flag = &cli.StringFlag{Name: k.flag, Usage: usage, DefaultText: shown}
		case reflect.Int:
			flag = &cli.IntFlag{Name: k.flag, Usage: usage, DefaultText: shown}
		case reflect.Int64:
			flag = &cli.Int64Flag{Name: k.flag, Usage: usage, DefaultText: shown}
		case reflect.Float64:
			flag = &cli.Float64Flag{Name: k.flag, Usage: usage, DefaultText: shown}
		case reflect.Bool:
			flag = &cli.BoolFlag{Name: k.flag, Usage: usage, DefaultText: shown}
		}
		flags = append(flags, flag)
	}
	return flags
}

// flagUsage is the help of a key's flag: its comment on one line, the Go
// field name it starts with replaced by the key's ("TopK samples …":
// "top_k samples …"; "Beams is the beam width …": "the beam width …").
// Backquotes would make urfave/cli take the quoted word as the value's
// placeholder.
func flagUsage(key, field string) string {
	doc := strings.Join(strings.Fields(experiments.KeyDoc(key)), " ")
	doc = strings.ReplaceAll(doc, "`", "'")
	_, name, _ := strings.Cut(key, ".")
	rest, ok := strings.CutPrefix(doc, field)
	switch {
	case !ok || (rest != "" && rest[0] != ' ' && rest[0] != ','):
		return doc
	case strings.HasPrefix(rest, " is ") || strings.HasPrefix(rest, " are "):
		_, rest, _ = strings.Cut(rest[1:], " ")
		return rest
	}
	return name + rest
}

// setTableFlags copies the value of every flag of table given on the
// command line into cfg, a pointer to the table's Config.
func setTableFlags(c *cli.Context, table string, cfg any) {
	v := reflect.ValueOf(cfg).Elem()
	for _, k := range flagKeys(table, v.Type()) {
		if !c.IsSet(k.flag) {
			continue
		}
		setFromFlag(c, k.flag, v.Field(k.index))
	}
}

// setFromFlag sets field f to the value of c's flag.
func setFromFlag(c *cli.Context, flag string, f reflect.Value) {
	switch f.Kind() {
	case reflect.String:
		f.SetString(c.String(flag))
	case reflect.Int:
		f.SetInt(int64(c.Int(flag)))
	case reflect.Int64:
		f.SetInt(c.Int64(flag))
	case reflect.Float64:
		f.SetFloat(c.Float64(flag))
	case reflect.Bool:
		f.SetBool(c.Bool(flag))
	case reflect.Slice:
		var list []string
		for _, s := range strings.Split(c.String(flag), ",") {
			if s = strings.TrimSpace(s); s != "" {
				list = append(list, s)
			}
		}
		f.Set(reflect.ValueOf(list))
	}
}

// benchKey is one spec key that a memo bench command takes as a flag, with
// what the command adds to the key's doc.
type benchKey struct{ name, extra string }

// benchFlags are the flags of some keys of table for a memo bench command:
// each is named and typed after its key (model.kv_heads: --kv-heads), its
// help is the first sentence of the key's doc comment, then extra when it
// is a note in parentheses (when that sentence is long, the key's name and
// the note); any other extra is the flag's help in place of the key's doc,
// and
// its default is the bench's own, the field's value in defaults (the
// table's Config). A bench flag that sets a spec key thus never restates
// the key by hand; the bench's own settings (--steps, --reps) stay flags of
// their own.
func benchFlags(table string, defaults any, keys ...benchKey) []cli.Flag {
	v := reflect.ValueOf(defaults)
	byName := map[string]flagKey{}
	for _, k := range flagKeys(table, v.Type()) {
		byName[strings.TrimPrefix(k.key, table+".")] = k
	}
	flags := make([]cli.Flag, 0, len(keys))
	for _, bk := range keys {
		k, ok := byName[bk.name]
		if !ok {
			panic(fmt.Sprintf("benchFlags: %s.%s is not a key a flag can set", table, bk.name))
		}
		usage := strings.TrimSuffix(firstSentence(flagUsage(k.key, v.Type().Field(k.index).Name)), ".")
		switch note := strings.HasPrefix(bk.extra, "("); {
		case bk.extra != "" && !note:
			usage = bk.extra + " (sets " + k.key + ")" // the bench's own words
		case len(usage) > maxBenchUsage && note:
			usage = "sets " + k.key + " " + bk.extra
		case len(usage) > maxBenchUsage:
			usage = "sets " + k.key + " (memo config --defaults explains it)"
		case note:
			usage += " " + bk.extra
		}
		f := v.Field(k.index)
		var flag cli.Flag
		switch f.Kind() {
		case reflect.String:
			flag = &cli.StringFlag{Name: k.flag, Value: f.String(), Usage: usage}
		case reflect.Int:
			flag = &cli.IntFlag{Name: k.flag, Value: int(f.Int()), Usage: usage}
		case reflect.Int64:
			flag = &cli.Int64Flag{Name: k.flag, Value: f.Int(), Usage: usage}
		case reflect.Float64:
			flag = &cli.Float64Flag{Name: k.flag, Value: f.Float(), Usage: usage}
		case reflect.Bool:
			flag = &cli.BoolFlag{Name: k.flag, Value: f.Bool(), Usage: usage}
		default:
			panic(fmt.Sprintf("benchFlags: %s has no single-value flag", k.key))
		}
		flags = append(flags, flag)
	}
	return flags
}

// setBenchFlags copies into cfg (a pointer to table's Config) the values of
// the named keys' flags, given or default: the bench's settings as the
// stage would read them from a spec.
func setBenchFlags(c *cli.Context, table string, cfg any, names ...string) {
	v := reflect.ValueOf(cfg).Elem()
	for _, k := range flagKeys(table, v.Type()) {
		if !slices.Contains(names, strings.TrimPrefix(k.key, table+".")) {
			continue
		}
		setFromFlag(c, k.flag, v.Field(k.index))
	}
}

// maxBenchUsage is the longest key doc a bench flag's help repeats; a
// longer one is pointed to instead.
const maxBenchUsage = 100

// firstSentence is s up to the first full stop followed by a capital (or
// all of s; "et al. (2021)" ends nothing): a key's doc opens with what the
// key is, and a flag's help wants no more.
func firstSentence(s string) string {
	for i := 0; i+2 < len(s); i++ {
		if s[i] == '.' && s[i+1] == ' ' && s[i+2] >= 'A' && s[i+2] <= 'Z' {
			return s[:i+1]
		}
	}
	return s
}
