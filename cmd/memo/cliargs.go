package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// hoistFlags moves the flags a user wrote after a command's positional
// arguments (`memo run exp/x.toml --nproc 2`) in front of them, where
// urfave/cli looks for flags: it stops at the first positional argument
// and would report "want one spec FILE, got 3 arguments". A flag's value
// moves with it; everything after "--" stays positional.
func hoistFlags(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	i := 1
	// The app's own flags, then the command path.
	for i < len(args) && isFlag(args[i]) {
		i += flagArgs(app.Flags, args[i:])
	}
	out = append(out, args[1:i]...)
	appEnd := len(out) // where the app's flags found later go
	cmds := app.Commands
	var cmd *cli.Command
	for i < len(args) && !isFlag(args[i]) {
		next := findCommand(cmds, args[i])
		if next == nil {
			break
		}
		cmd, cmds = next, next.Subcommands
		out = append(out, args[i])
		i++
	}
	if cmd == nil || cmd.SkipFlagParsing {
		return append(out, args[i:]...)
	}
	var global, flags, positional []string
	for i < len(args) {
		a := args[i]
		switch {
		case a == "--":
			positional = append(positional, args[i:]...)
			i = len(args)
		case isFlag(a) && !hasFlag(cmd.Flags, a) && hasFlag(app.Flags, a):
			// The app's own flag after the command (memo run x.toml
			// --log-level debug) goes before the command, where it is read.
			n := flagArgs(app.Flags, args[i:])
			global = append(global, args[i:i+n]...)
			i += n
		case isFlag(a):
			n := flagArgs(cmd.Flags, args[i:])
			flags = append(flags, args[i:i+n]...)
			i += n
		default:
			positional = append(positional, a)
			i++
		}
	}
	out = append(out[:appEnd], append(global, out[appEnd:]...)...)
	out = append(out, flags...)
	return append(out, positional...)
}

// hasFlag reports whether the flag argument a (-x, --name or --name=v)
// names one of flags.
func hasFlag(flags []cli.Flag, a string) bool { return lookupFlag(flags, a) != nil }

// lookupFlag is the one of flags that the flag argument a (-x, --name or
// --name=v) names, or nil.
func lookupFlag(flags []cli.Flag, a string) cli.Flag {
	name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

// isFlag reports whether an argument is a flag: a dash and a name ("-" alone
// means standard input to some commands).
func isFlag(a string) bool { return len(a) > 1 && a[0] == '-' }

// flagArgs is the number of arguments the flag at args[0] takes up: 2 for a
// flag with a separate value (--nproc 2), else 1 (--force, --nproc=2, or an
// unknown flag, which the command's parser will then refuse).
func flagArgs(flags []cli.Flag, args []string) int {
	if strings.Contains(args[0], "=") || len(args) < 2 {
		return 1
	}
	if v, ok := lookupFlag(flags, args[0]).(cli.DocGenerationFlag); ok && v.TakesValue() {
		return 2
	}
	return 1
}

// findCommand is the command of cmds named (or aliased) name.
func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// helpRequest reports whether a command line asks for help anywhere on it
// (`memo -h`, `memo run x.toml --help`, `memo data build -h`) and for which
// command path (empty: the app). urfave/cli sees a help flag only where it
// parses flags, and memo's own help command hides the app's help flag, so
// such lines read "flag: help requested" or "unknown command" there.
// A flag's value is not a request ("--out --help" names a file), nor is
// anything after "--". -h is help unless the command has a flag named h
// (mask's goldfish width) and a value follows it.
func helpRequest(app *cli.App, args []string) ([]string, bool) {
	var path []string
	cmds, flags := app.Commands, app.Flags
	commandDone := false
	for i := 1; i < len(args); {
		a := args[i]
		if a == "--" {
			return nil, false
		}
		if !isFlag(a) {
			if !commandDone {
				if next := findCommand(cmds, a); next != nil {
					path = append(path, next.Name)
					cmds, flags = next.Subcommands, next.Flags
					i++
					continue
				}
			}
			commandDone = true // a positional argument ends the command path
			i++
			continue
		}
		switch strings.TrimLeft(a, "-") {
		case "help":
			return path, true
		case "h":
			if flagArgs(flags, args[i:]) == 1 {
				return path, true
			}
		}
		i += flagArgs(flags, args[i:])
	}
	return nil, false
}

// atLeast refuses the first of the int flags below min, naming it and its
// value ("audit: --window -1: must be >= 0").
func atLeast(c *cli.Context, cmd string, min int, flags ...string) error {
	for _, f := range flags {
		if v := c.Int(f); v < min {
			return usageError("%s: --%s %d: must be >= %d", cmd, typedName(c, f), v, min)
		}
	}
	return nil
}

// typedName is the name the user gave flag name on the command line, an
// alias (--batch-size for --batch) or name itself, so that an error
// echoes what was typed. The context cannot tell: urfave/cli marks every
// alias of a set flag as set, so the command line is read again.
func typedName(c *cli.Context, name string) string {
	var names []string
	for _, f := range c.Command.Flags {
		if slices.Contains(f.Names(), name) {
			names = f.Names()
		}
	}
	typed := name
	for _, arg := range os.Args[1:] {
		if arg == "--" {
			break
		}
		if !strings.HasPrefix(arg, "-") {
			continue
		}
		arg, _, _ = strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if slices.Contains(names, arg) {
			typed = arg // the last one given is the value used
		}
	}
	return typed
}

// jsonProblem says what is wrong with a JSON input in the user's terms:
// encoding/json names Go types ("[][]json.RawMessage").
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		where := ""
		if te.Field != "" {
			where = " in " + te.Field
		}
		return fmt.Sprintf("a JSON %s%s where %s goes", te.Value, where, jsonKind(te.Type))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("not JSON at byte %d: %v", se.Offset, se)
	}
	return err.Error()
}

// jsonKind names what JSON value decodes into t.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 { // json.RawMessage: any value
			return "a value"
		}
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "another value"
}
