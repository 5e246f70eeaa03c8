package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/memo-research/memo/experiments"
	"github.com/memo-research/memo/internal/rankenv"
	"github.com/memo-research/memo/internal/torchx"
)

func referencesCommand() *cli.Command {
	cacheFlag := &cli.StringFlag{Name: "cache", Usage: "cache `DIR` (default $MEMO_CACHE or ~/.cache/memo)"}
	return &cli.Command{
		Name:  "references",
		Usage: "train, list or remove the reference models of calibrated attacks (CACHE/references)",
		Description: "A spec with mia.references = K trains K reference models once and keeps them in the\n" +
			"cache, keyed by the dataset, the settings and the half of the candidate pool each trained\n" +
			"on; any later run that asks for the same model reuses it (docs/ATTACKS.md).",
		Subcommands: []*cli.Command{
			{
				Name:      "train",
				Usage:     "train a spec's reference models (or some of them, --index) without the rest of the run",
				ArgsUsage: "FILE.toml",
				Description: "Trains the reference models of FILE's [mia] table into the cache, from the dataset\n" +
					"of its run directory, which must be built first (`memo run --stages data FILE`).\n" +
					"Processes may train different indices at once: on one machine\n" +
					"  seq 0 15 | xargs -P 2 -I{} memo references train --index {} --threads 1 FILE\n" +
					"or as a Slurm array (--array=0-15, --index $SLURM_ARRAY_TASK_ID); `memo run FILE`\n" +
					"then finds them trained and only scores (docs/ATTACKS.md).",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "runs", Value: "runs", Usage: "directory that holds run directories (for a sweep point's spec under RUNS/NAME/specs/: RUNS/NAME)"},
					&cli.IntSliceFlag{Name: "index", Usage: "reference model `I` to train (repeat for more; default all)"},
					&cli.IntFlag{Name: "threads", Usage: "libtorch threads (0: all cores)"},
					setFlag,
				},
				Action: referencesTrainAction,
			},
			{
				Name:      "ls",
				Usage:     "list the cached reference models: key, index, members, trained, size",
				ArgsUsage: " ",
				Flags:     []cli.Flag{cacheFlag},
				Action: func(c *cli.Context) error {
					if c.NArg() != 0 {
						return usageError("references ls: takes no arguments (got %q)", c.Args().Slice())
					}
					cache, err := existingCache(c, "references ls")
					if err != nil {
						return err
					}
					ents, err := experiments.ListReferences(cache)
					if err != nil {
						return err
					}
					w := c.App.Writer
					fmt.Fprintf(w, "reference models in %s: %d\n", experiments.ReferencesDir(cache), len(ents))
					if len(ents) == 0 {
						return nil
					}
					fmt.Fprintf(w, "%-24s %5s %7s %-7s %10s  %s\n", "KEY", "INDEX", "MEMBERS", "TRAINED", "SIZE", "MODIFIED")
					var total int64
					for _, e := range ents {
						total += e.Bytes
						when := e.Modified.UTC().Format("2006-01-02 15:04:05")
						if e.Problem != "" {
							fmt.Fprintf(w, "%-24s damaged: %s\n", e.Key, e.Problem)
							continue
						}
						fmt.Fprintf(w, "%-24s %5d %7d %-7v %10s  %s\n", e.Key, e.Index, e.Members, e.Trained, mib(e.Bytes), when)
					}
					fmt.Fprintf(w, "total %s\n", mib(total))
					return nil
				},
			},
			{
				Name:      "rm",
				Usage:     "remove cached reference models by key (a later run trains them again)",
				ArgsUsage: "KEY...",
				Flags:     []cli.Flag{cacheFlag},
				Action: func(c *cli.Context) error {
					if c.NArg() == 0 {
						return usageError("references rm: want one or more KEYs (see `memo references ls`)")
					}
					cache, err := existingCache(c, "references rm")
					if err != nil {
						return err
					}
					keys := c.Args().Slice()
					if err := experiments.RemoveReferences(cache, keys); err != nil {
						return err
					}
					for _, key := range keys {
						fmt.Fprintf(c.App.Writer, "removed %s\n", key)
					}
					return nil
				},
			},
		},
	}
}

func referencesTrainAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageError("references train: want one spec FILE, got %d arguments", c.NArg())
	}
	spec, err := loadSpec(c.Args().First(), c.StringSlice("set"))
	if err != nil {
		return err
	}
	if spec.IsSweep() {
		return usageError("references train: %s is a sweep; train the references of one point (its spec under RUNS/NAME/specs/, whose run is in RUNS/NAME)", c.Args().First())
	}
	// As memo run takes them: a one-CPU array task on a node without CPU
	// binding took every core, 25 times slower.
	threads, _ := runThreads(c, rankenv.Config{})
	torchx.Init(threads, uint64(spec.Seed))
	ctx, cancel := signalContext()
	defer cancel()
	runs := c.String("runs")
	if !c.IsSet("runs") {
		// A point's spec (RUNS/NAME/specs/POINT.toml) names a run in
		// RUNS/NAME: told --runs RUNS, the refusal sent users to build a
		// stray run beside the sweep.
		if sweep := experiments.PointSpecSweep(c.Args().First()); sweep != "" {
			runs = sweep
		}
	}
	return experiments.TrainReferences(ctx, spec, runs, c.IntSlice("index"))
}
