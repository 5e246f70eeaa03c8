package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/dist"
	"github.com/memo-research/memo/experiments"
	"github.com/memo-research/memo/internal/outguard"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/plots"
	"github.com/urfave/cli/v2"
)

func runSpecCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run an experiment: data, training, extraction, scoring and figures",
		ArgsUsage: "FILE.toml",
		Description: "Runs data → train → extract → eval → plots into RUNS/<name>/. Running a finished\n" +
			"run again does nothing; an interrupted run resumes at the stage that stopped, and\n" +
			"training resumes from its latest checkpoint. A file with a [sweep] table runs every\n" +
			"grid point (like `memo sweep`) and ends with the comparison table and figures.",
		Flags: append(runFlags(),
			&cli.IntFlag{Name: "nproc", Value: 1, Usage: "training processes (ranks) on this machine; > 1 trains data-parallel"},
			&cli.StringFlag{Name: "reuse-train", Usage: "take data and the trained model from the finished run `DIR`, which must have been trained with the same data, model, train, goldfish and seed settings, and only attack it (sweeps pass this to points that differ only in extract, eval or plots keys)"},
			&cli.StringFlag{Name: "stages", Usage: "comma-separated stages to run (data,train,extract,eval,plots); default all. Used by Slurm scripts", Hidden: true},
		),
		Action: runAction,
	}
}

// runFlags are shared by `run` and `sweep`.
func runFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "runs", Value: "runs", Usage: "directory that holds run directories"},
		&cli.BoolFlag{Name: "force", Usage: "if the run directory holds a different spec, move it aside (NAME.old-TIME) and start again"},
		&cli.IntFlag{Name: "threads", Usage: "libtorch threads per run (0: all cores, divided among parallel sweep runs)"},
		&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: 1, Usage: "sweep runs at a time on this machine"},
		setFlag,
	}
}

// checkRunFlags refuses values of the shared flags that mean nothing,
// whether or not the spec has a sweep that would use them.
func checkRunFlags(c *cli.Context) error {
	if t := c.Int("threads"); t < 0 {
		return usageError("--threads %d: want >= 0 (0: all cores)", t)
	}
	if j := c.Int("jobs"); j < 1 {
		return usageError("-j %d: want >= 1", j)
	}
	return nil
}

// checkRunsRoot keeps --runs out of the places memo made for something
// else: a run's data/ or checkpoints/, a checkpoint, the cache (whose
// `data gc` would delete the runs it found there).
func checkRunsRoot(c *cli.Context, spec *experiments.Spec) error {
	runs := c.String("runs")
	if where := outguard.Inside(runs, data.ResolveCacheDir(""), data.ResolveCacheDir(spec.Data.CacheDir)); where != "" {
		return usageError("--runs %s: is in %s; run directories never go there: name a directory elsewhere", runs, where)
	}
	return nil
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func runAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageError("run: want one spec FILE, got %d arguments", c.NArg())
	}
	if err := checkRunFlags(c); err != nil {
		return err
	}
	spec, err := loadSpec(c.Args().First(), c.StringSlice("set"))
	if err != nil {
		return err
	}
	if err := checkRunsRoot(c, spec); err != nil {
		return err
	}
	if err := preflight(c.Args().First(), spec); err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	if spec.IsSweep() {
		return localSweep(ctx, c, spec)
	}
	if c.Int("nproc") < 1 {
		return usageError("--nproc %d: want >= 1", c.Int("nproc"))
	}
	opt := experiments.Options{Force: c.Bool("force"), ReuseTrain: c.String("reuse-train")}
	if src := opt.ReuseTrain; src != "" {
		if st, err := os.Stat(filepath.Join(src, "config.toml")); err != nil || st.IsDir() {
			return usageError("run: --reuse-train %s: not a run directory (no config.toml)", src)
		}
	}
	if s := c.String("stages"); s != "" {
		for _, st := range strings.Split(s, ",") {
			opt.Stages = append(opt.Stages, strings.TrimSpace(st))
		}
	}
	threads := c.Int("threads")
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	if n := c.Int("nproc"); n > 1 {
		opt.Ranks = n
		opt.Train = func(ctx context.Context, spec *experiments.Spec, dir string) error {
			return launchTraining(ctx, n, c.Args().First(), c.StringSlice("set"), c.String("runs"), threads)
		}
	}
	torchx.Init(threads, uint64(spec.Seed))
	finished := experiments.Finished(spec, experiments.RunDir(spec, c.String("runs")))
	dir, err := experiments.Run(ctx, spec, c.String("runs"), opt)
	if err != nil {
		return err
	}
	if len(opt.Stages) > 0 {
		return nil
	}
	// A run that was already finished ran nothing: its report stands.
	if !finished || !reportExists(dir) {
		if err := plots.Report(dir, spec.Plots, experiments.ReadPlotsSpec); err != nil {
			return err
		}
	}
	return printTable(c, dir)
}

// reportExists reports whether dir holds the report table printTable shows.
func reportExists(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "report", "table.md"))
	return err == nil
}

// printTable shows the report table of a run or sweep directory.
func printTable(c *cli.Context, dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "report", "table.md"))
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "\n%s\nTables and figures: %s\n", b, filepath.Join(dir, "report"))
	return nil
}

// launchTraining runs the train stage as n processes of this binary, one per
// rank, on loopback through the dist package's launcher. Each rank runs
// `memo run --stages train` on the same spec and run directory, finds its
// place from RANK/WORLD_SIZE, and the libtorch threads are divided among the
// ranks so that they do not oversubscribe the cores. This process goes on
// with the later stages once every rank has finished.
func launchTraining(ctx context.Context, n int, specFile string, sets []string, runs string, threads int) error {
	if dist.Launched() {
		return fmt.Errorf("--nproc %d: this process is already one of the ranks of a launch", n)
	}
	spec, err := filepath.Abs(specFile)
	if err != nil {
		return fmt.Errorf("launch training: %w", err)
	}
	runsAbs, err := filepath.Abs(runs)
	if err != nil {
		return fmt.Errorf("launch training: %w", err)
	}
	argv := []string{"run", "--runs", runsAbs, "--stages", "train",
		"--threads", strconv.Itoa(max(1, threads/n))}
	for _, s := range sets {
		argv = append(argv, "--set", s) // the ranks must train the spec this process resolved
	}
	argv = append(argv, spec)
	slog.Info("launching training ranks", "nproc", n, "threads_per_rank", max(1, threads/n))
	if err := dist.Launch(ctx, n, argv); err != nil {
		return fmt.Errorf("training on %d processes: %w", n, err)
	}
	return nil
}
