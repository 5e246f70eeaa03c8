package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/memo-research/memo/experiments"
	"github.com/memo-research/memo/internal/memlimit"
	"github.com/memo-research/memo/internal/safetensors"
	"github.com/urfave/cli/v2"
)

func configCommand() *cli.Command {
	return &cli.Command{
		Name:      "config",
		Usage:     "print the default experiment spec, or the resolved spec of a file",
		ArgsUsage: "[FILE.toml]",
		Description: "With --defaults, or no FILE, prints every key of an experiment spec with its default value and\n" +
			"documentation: a template to copy. With FILE, checks the file (unknown keys, wrong\n" +
			"types, cross-table rules) and prints it with every default filled in.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "defaults", Usage: "print the default spec with every key documented"},
			&cli.IntFlag{Name: "nproc", Value: 1, Usage: "check the spec for training on this many processes, as memo run --nproc would"},
			setFlag,
		},
		Action: func(c *cli.Context) error {
			var out string
			var err error
			switch {
			case c.Bool("defaults") && (c.IsSet("set") || c.IsSet("nproc")):
				return usageError("config: --defaults prints the built-in defaults alone; --set and --nproc check a spec FILE (memo config --set KEY=VALUE FILE)")
			case c.NArg() == 0 && !c.IsSet("set") && !c.IsSet("nproc"):
				// Bare, as with --defaults: what its usage line promises.
				out, err = experiments.DefaultsTOML()
			case !c.Bool("defaults") && c.NArg() == 1:
				spec, perr := loadSpec(c.Args().First(), c.StringSlice("set"))
				if perr != nil {
					return perr
				}
				if c.Int("nproc") < 1 {
					return usageError("config: --nproc %d: want >= 1", c.Int("nproc"))
				}
				if perr := spec.CheckRanksEachPoint(c.Int("nproc")); perr != nil {
					return configError(perr)
				}
				if perr := preflight(c.Args().First(), spec); perr != nil {
					return perr
				}
				out, err = spec.Render()
			default:
				return usageError("config: want one spec FILE (--set and --nproc check a FILE), or none for the defaults")
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
	// A sweep point's spec holds the base's tables, which its other
	// points turn on: not idle keys of the user's.
	if keys := spec.IdleMitigationKeys(); len(keys) > 0 && experiments.PointSpecSweep(path) == "" {
		slog.Warn("the spec sets keys of a mitigation it leaves off, which change nothing: set its enabled = true to use them", "keys", strings.Join(keys, ","))
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

// preflight checks what `memo run` would otherwise refuse only once it has
// made the run directory and taken its lock, or find by crashing: every
// point of a sweep, the devices and precisions, and the size of the model against
// the machine's memory. `memo config` and `memo run` both call it, so the
// file that passes one passes the other.
func preflight(file string, spec *experiments.Spec) error {
	if spec.IsSweep() {
		pts, err := spec.Expand()
		if err != nil {
			if cerr := configError(err); cerr != err {
				return cerr
			}
			return usageError("%s: %v", file, err)
		}
		for _, p := range pts {
			if err := preflightRun(file, p.Spec); err != nil {
				return err
			}
		}
		return nil
	}
	return preflightRun(file, spec)
}

// preflightRun is preflight for one run's resolved spec.
func preflightRun(file string, spec *experiments.Spec) error {
	// The spec's own check names the key the user set (device,
	// train.device or extract.device) and its line.
	if err := spec.CheckDevices(); err != nil {
		return configError(err)
	}
	m, err := spec.ResolvedModel()
	if err != nil {
		return usageError("%s: %v", file, err)
	}
	if dir, ok := strings.CutPrefix(m.InitFrom, "hf:"); ok {
		// The headers say where every tensor ends: a truncated file shows
		// now, not after the data stage.
		set, err := safetensors.OpenDir(dir)
		if err != nil {
			return usageError("%s: model.init_from = %q: %v", file, m.InitFrom, err)
		}
		set.Close()
	}
	// Training holds the weights, their gradients and AdamW's two moments.
	if err := memlimit.Check(file+": [model]", m, 16); err != nil {
		return usageError("%v", err)
	}
	return nil
}
