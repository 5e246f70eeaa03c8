package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/experiments"
)

func referencesCommand() *cli.Command {
	cacheFlag := &cli.StringFlag{Name: "cache", Usage: "cache `DIR` (default $MEMO_CACHE or ~/.cache/memo)"}
	return &cli.Command{
		Name:  "references",
		Usage: "list or remove the reference models of calibrated attacks (CACHE/references)",
		Description: "A spec with mia.references = K trains K reference models once and keeps them in the\n" +
			"cache, keyed by the dataset, the settings and the half of the candidate pool each trained\n" +
			"on; any later run that asks for the same model reuses it (docs/ATTACKS.md).",
		Subcommands: []*cli.Command{
			{
				Name:      "ls",
				Usage:     "list the cached reference models: key, index, members, trained, size",
				ArgsUsage: " ",
				Flags:     []cli.Flag{cacheFlag},
				Action: func(c *cli.Context) error {
					if c.NArg() != 0 {
						return usageError("references ls: takes no arguments (got %q)", c.Args().Slice())
					}
					cache := data.ResolveCacheDir(c.String("cache"))
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
					cache := data.ResolveCacheDir(c.String("cache"))
					for _, key := range c.Args().Slice() {
						if err := experiments.RemoveReference(cache, key); err != nil {
							return err
						}
						fmt.Fprintf(c.App.Writer, "removed %s\n", key)
					}
					return nil
				},
			},
		},
	}
}
