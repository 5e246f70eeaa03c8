package main

import (
	"fmt"
	"regexp"
	"time"

	"github.com/urfave/cli/v2"
)

// The messages of Go's flag package, which urfave/cli passes on: they name
// a flag with one dash (-sample-rate) and end in strconv's words.
var (
	flagUndefined = regexp.MustCompile(`^flag provided but not defined: -{1,2}(.+)$`)
	flagBadValue  = regexp.MustCompile(`^invalid (?:boolean )?value (".*") for (?:flag )?-{1,2}([^:]+): `)
	flagNoValue   = regexp.MustCompile(`^flag needs an argument: -{1,2}(.+)$`)
)

// flagMessage rewrites a flag parse error of command name (flags its
// flags) in memo's words: the flag as a user types it and what it takes.
// Other errors come back as they are.
func flagMessage(name string, flags []cli.Flag, err error) string {
	msg := err.Error()
	if m := flagUndefined.FindStringSubmatch(msg); m != nil {
		help := "memo --help"
		if name != "" {
			help = "memo " + name + " --help"
		}
		return fmt.Sprintf("unknown flag %s; see `%s`", dashed(m[1]), help)
	}
	if m := flagBadValue.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s %s: want %s", dashed(m[2]), m[1], flagTakes(flags, m[2]))
	}
	if m := flagNoValue.FindStringSubmatch(msg); m != nil {
		if takes := flagTakes(flags, m[1]); takes != "a value" {
			return fmt.Sprintf("%s needs a value (%s)", dashed(m[1]), takes)
		}
		return fmt.Sprintf("%s needs a value", dashed(m[1]))
	}
	return msg
}

// dashed writes a flag's name as memo's help does: --sample-rate, -v.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// flagTakes says what kind of value the flag named takes.
func flagTakes(flags []cli.Flag, name string) string {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			switch f.(type) {
			case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag, *cli.IntSliceFlag, *cli.Int64SliceFlag:
				return "an integer"
			case *cli.Float64Flag, *cli.Float64SliceFlag:
				return "a number"
			case *cli.BoolFlag:
				return "true or false, written --" + name + "=false"
			case *cli.DurationFlag:
				return "a duration such as " + (90 * time.Second).String()
			}
		}
	}
	return "a value"
}
