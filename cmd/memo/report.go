package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/memo-research/memo/plots"
	"github.com/pelletier/go-toml/v2"
	"github.com/urfave/cli/v2"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "write the comparison table and figures of a sweep or run directory",
		ArgsUsage: "DIR",
		Description: "Reads each run's scores.parquet, metrics.arrow and config.toml and writes\n" +
			"DIR/report/table.{md,csv,tex} and DIR/report/figures/*.{png,svg,pdf}: exact match\n" +
			"against k with 95 % confidence intervals, RougeL distributions, memorization against\n" +
			"repetitions per model, loss curves and membership-inference ROC curves. Unfinished\n" +
			"sweep runs are left out. Figure settings come from the runs' [plots] table.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "formats", Usage: "comma-separated image formats (png,svg,pdf); default from the spec"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("report: want one directory, got %d arguments", c.NArg())
			}
			dir := c.Args().First()
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return usageError("report: %s is not a directory", dir)
			}
			cfg, err := reportConfig(dir)
			if err != nil {
				return err
			}
			if f := c.String("formats"); f != "" {
				cfg.Formats = strings.Split(f, ",")
			}
			if err := cfg.Validate(); err != nil {
				return usageError("report: %v", err)
			}
			if err := plots.Report(dir, cfg); err != nil {
				return err
			}
			return printTable(c, dir)
		},
	}
}

// reportConfig takes the [plots] table of the run's config.toml, or of the
// first sweep run that has one.
func reportConfig(dir string) (plots.Config, error) {
	cands := []string{filepath.Join(dir, "config.toml")}
	more, _ := filepath.Glob(filepath.Join(dir, "*", "config.toml"))
	cands = append(cands, more...)
	for _, p := range cands {
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return plots.Config{}, err
		}
		var doc struct {
			Plots plots.Config `toml:"plots"`
		}
		doc.Plots = plots.DefaultConfig()
		if err := toml.Unmarshal(b, &doc); err != nil {
			return plots.Config{}, usageError("report: %s: %v", p, err)
		}
		return doc.Plots, nil
	}
	return plots.DefaultConfig(), nil
}
