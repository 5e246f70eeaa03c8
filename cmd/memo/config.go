package main

import (
	"errors"
	"fmt"

	"github.com/memo-research/memo/experiments"
	"github.com/urfave/cli/v2"
)

func configCommand() *cli.Command {
	return &cli.Command{
		Name:      "config",
		Usage:     "print the default experiment spec, or the resolved spec of a file",
		ArgsUsage: "[FILE.toml]",
		Description: "With --defaults, prints every key of an experiment spec with its default value and\n" +
			"documentation: a template to copy. With FILE, checks the file (unknown keys, wrong\n" +
			"types, cross-table rules) and prints it with every default filled in.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "defaults", Usage: "print the default spec with every key documented"},
			&cli.IntFlag{Name: "nproc", Value: 1, Usage: "check the spec for training on this many processes, as `memo run --nproc` would"},
			setFlag,
		},
		Action: func(c *cli.Context) error {
			var out string
			var err error
			switch {
			case c.Bool("defaults") && c.NArg() == 0:
				out, err = experiments.DefaultsTOML()
			case !c.Bool("defaults") && c.NArg() == 1:
				spec, perr := loadSpec(c.Args().First(), c.StringSlice("set"))
				if perr != nil {
					return perr
				}
				if perr := spec.CheckRanks(c.Int("nproc")); perr != nil {
					return configError(perr)
				}
				out, err = spec.Render()
			default:
				return usageError("config: want either --defaults or one spec FILE")
			}
			if err != nil {
				return err
			}
			fmt.Fprint(c.App.Writer, out)
			return nil
		},
	}
}

// setFlag overrides spec keys from the command line.
var setFlag = &cli.StringSliceFlag{Name: "set", Usage: "override a spec key, `KEY=VALUE` as in TOML (--set train.lr=1e-3 --set model.preset=small); repeatable"}

// loadSpec parses a spec file with --set overrides; a problem with the file is a usage error
// (one line, exit code 2) and nothing is written.
func loadSpec(path string, sets []string) (*experiments.Spec, error) {
	spec, err := experiments.ParseWithOverrides(path, sets)
	if err != nil {
		return nil, configError(err)
	}
	return spec, nil
}

// configError makes a problem with a spec (a *experiments.ConfigError
// anywhere in err's chain) a usage error: one line, exit code 2. Other
// errors pass through unchanged.
func configError(err error) error {
	var ce *experiments.ConfigError
	if errors.As(err, &ce) {
		return usageError("%v", ce)
	}
	return err
}
