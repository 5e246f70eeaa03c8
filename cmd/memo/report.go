package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/experiments"
	"github.com/memo-research/memo/internal/outguard"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/plots"
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
			"repetitions per model, loss curves and membership-inference ROC curves. Where the runs\n" +
			"have their numbers it also writes calibrated.{md,csv,tex} (LiRA, RMIA by reference\n" +
			"count), threshold, repetitions, corpus-counts and approx (.md, .csv). Unfinished\n" +
			"sweep runs are left out, and listed with the reason in left_out.csv. Figure settings\n" +
			"come from the runs' [plots] table.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "formats", Usage: "comma-separated image formats (png,svg,pdf); default from the spec"},
			&cli.BoolFlag{Name: "require-all", Usage: "after the report of the finished points, exit 1 naming each grid point of the sweep that did not finish (memo sweep --submit's report job passes it)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("report: want one directory, got %d arguments", c.NArg())
			}
			dir := c.Args().First()
			if st, err := os.Stat(dir); err != nil {
				return usageError("report: %s does not exist (want a run or sweep directory)", dir)
			} else if !st.IsDir() {
				return usageError("report: %s is not a directory (want a run or sweep directory)", dir)
			}
			if err := checkReportDir(dir); err != nil {
				return err
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
			// --require-all's verdict is a failure (exit 1) whether some
			// points or none finished: with none it was exit 2, bad input,
			// for points that had failed.
			requireAll := func() error {
				if !c.Bool("require-all") {
					return nil // reading every point's manifest is the flag's cost only
				}
				if missing := unfinishedPoints(dir); len(missing) > 0 {
					return cli.Exit(fmt.Sprintf("memo: report: %d grid point(s) of %s did not finish: %s (logs in %s)",
						len(missing), dir, strings.Join(missing, ", "), filepath.Join(dir, "logs")), exitFailure)
				}
				return nil
			}
			if err := plots.Report(dir, cfg, experiments.ReadPlotsSpec); err != nil {
				if errors.Is(err, plots.ErrNoPoint) {
					if rerr := requireAll(); rerr != nil {
						return rerr
					}
				}
				return configError(err) // a sweep run's damaged config.toml is bad input
			}
			if err := printTable(c, dir); err != nil {
				return err
			}
			return requireAll()
		},
	}
}

// unfinishedPoints are the grid points of a sweep directory (its
// sweep.json) whose run did not finish every stage, or finished under
// another version of the point's spec. specs/ was globbed, which counted
// points an older grid had and, in a path holding [ or *, matched nothing.
func unfinishedPoints(dir string) []string {
	names, dirs, err := experiments.SweepPoints(dir)
	if err != nil {
		return nil // a single run's directory: nothing to require
	}
	var out []string
	for i, name := range names {
		m, err := experiments.ReadManifest(dirs[i])
		if err != nil || !m.Done(experiments.Stages) || experiments.StalePoint(dirs[i]) != "" {
			out = append(out, name)
		}
	}
	return out
}

// reportConfig takes the [plots] table of the run's config.toml, or of the
// first sweep run that has one.
func reportConfig(dir string) (plots.Config, error) {
	more, _ := filepath.Glob(filepath.Join(dir, "*", runfiles.ConfigFile))
	for _, runDir := range append([]string{dir}, dirsOf(more)...) {
		spec, ok, err := experiments.ReadRun(runDir)
		if err != nil {
			return plots.Config{}, configError(err)
		}
		if ok {
			return spec.Plots, nil
		}
	}
	return plots.DefaultConfig(), nil
}

// dirsOf is the directory of each path.
func dirsOf(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Dir(p)
	}
	return out
}

// checkReportDir keeps the report's writes in DIR/report/ and its
// figures/: no link there leads them elsewhere, and an existing report/
// is one memo report made (it holds table.md).
func checkReportDir(dir string) error {
	out := filepath.Join(dir, plots.ReportDir)
	for _, d := range []struct {
		path    string
		markers []string
	}{{out, []string{plots.TableFile}}, {filepath.Join(out, plots.FiguresDir), nil}} {
		if why := outguard.Claim(d.path, d.markers, data.ResolveCacheDir("")); why != "" {
			return usageError("report: %s %s: remove it, or copy the runs elsewhere to report them", d.path, why)
		}
	}
	return nil
}
