package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/dist"
	"github.com/memo-research/memo/experiments"
	"github.com/memo-research/memo/internal/outguard"
	"github.com/memo-research/memo/internal/rankenv"
	"github.com/memo-research/memo/internal/runfiles"
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
			"run again runs only the stages whose outputs are missing or changed (docs/COMMANDS.md).\n" +
			"Started by a launcher (srun -n N memo run FILE, torchrun\n" +
			"--nproc-per-node N memo run FILE), every rank trains and rank 0 alone runs the other\n" +
			"stages; the others wait for its data, then exit once training is done.\n" +
			"An interrupted run resumes at the stage that stopped, and\n" +
			"training resumes from its latest checkpoint. A file with a [sweep] table runs every\n" +
			"grid point (like `memo sweep`) and ends with the comparison table and figures.",
		Flags: append(runFlags(),
			&cli.IntFlag{Name: "nproc", Value: 1, Usage: "training processes (ranks) on this machine; > 1 trains data-parallel. Under srun or torchrun, which start the ranks themselves, leave it out (or give their number of tasks)"},
			&cli.IntFlag{Name: "master-port", Usage: "rendezvous port of rank 0 for multi-process training", DefaultText: "$MASTER_PORT, else a free port"},
			&cli.StringFlag{Name: "reuse-train", Usage: "take data and the trained model from the finished run `DIR`, which must have been trained with the same data, model, train, goldfish and seed settings, and only attack it (sweeps pass this to points that differ only in extract, eval, mia or plots keys)"},
			&cli.StringFlag{Name: "stages", Usage: "comma-separated stages to run (data,train,references,extract,eval,plots); default all. A stage needs the ones it reads done or listed with it. Under a launcher, give the same stages to every rank; only train runs on more than one"},
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
	if st, err := os.Stat(runs); err == nil && !st.IsDir() {
		return usageError("--runs %s: not a directory (the run directories go under it)", runs)
	}
	if where := outguard.Inside(runs, data.ResolveCacheDir(""), data.ResolveCacheDir(spec.Data.CacheDir)); where != "" {
		return usageError("--runs %s: is in %s; run directories never go there: name a directory elsewhere", runs, where)
	}
	// The longest paths memo writes under a run (a sweep point's
	// checkpoint's temporary optimizer file) add about this much; past
	// PATH_MAX a run trained to its end and failed saving it.
	const deepest = 300
	if abs, err := filepath.Abs(filepath.Join(runs, spec.Name)); err == nil && len(abs)+deepest > pathMax {
		return usageError("--runs %s: the run directory's path is %d bytes; the files memo writes under it would pass the system's %d-byte path limit: choose a shorter --runs or name", runs, len(abs), pathMax)
	}
	return nil
}

// pathMax is Linux's PATH_MAX, the longest path a system call takes.
const pathMax = 4096

// signalContext is the context of a command that stops by itself
// (gracefulCommands): cancelled by SIGINT, SIGTERM and SIGHUP (an ssh
// session that drops), so that training saves before it exits. A broken
// pipe on stdout or stderr (`| tee log` killed) no longer kills the
// process where it stands: SIGPIPE is ignored, the lost output is lost
// and the run goes on to save its results.
func signalContext() (context.Context, context.CancelFunc) {
	sigs := interruptSignals() // before Ignore, which Ignored would report
	signal.Ignore(syscall.SIGPIPE)
	return signal.NotifyContext(context.Background(), sigs...)
}

// interruptSignals end a command as Ctrl-C does (exit 130): SIGINT,
// SIGTERM, and SIGHUP unless the process was started ignoring it (nohup:
// asking for it would undo that, and a logout would stop the run).
func interruptSignals() []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}

func runAction(c *cli.Context) (err error) {
	if c.NArg() != 1 {
		return usageError("run: want one spec FILE, got %d arguments", c.NArg())
	}
	if err := checkRunFlags(c); err != nil {
		return err
	}
	place, err := launchPlace(c)
	if err != nil {
		return err
	}
	// A launcher (srun, torchrun) started this process as one of several
	// ranks of the run: rank 0 runs its stages (all, or --stages), the
	// others train with it when it trains and otherwise hear its verdict:
	// had they gone their own way, a rank 0 that refused left them in the
	// c10d rendezvous for its 30 minutes, and they ran the other stages
	// too. memo run --nproc's own ranks are the exception: their parent
	// told them their stage (--stages train) and waits for them.
	launched := place.Size > 1 && !dist.Launched()
	if launched && place.Rank > 0 {
		return followRank0(c, place)
	}
	var lead *rankenv.Leader
	if launched {
		if lead, err = rankenv.Lead(place, rankenv.MeetTimeout); err != nil {
			return err
		}
		// The others wait for a verdict: they train, have nothing to do, or
		// exit with this process's code without a word (it says what failed).
		defer func() {
			if err == nil {
				_ = lead.Release(rankenv.Verdict{Kind: "skip"})
				return
			}
			var exit cli.ExitCoder
			msg, code := "", 0
			if errors.As(err, &exit) {
				msg, code = strings.TrimPrefix(err.Error(), "memo: "), exit.ExitCode()
			} else {
				msg, code = failure(err)
			}
			_ = lead.Release(rankenv.Verdict{Kind: "fail", Code: code, Msg: msg})
		}()
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
	if note := spec.DefaultLossNote(); note != "" && place.Rank == 0 {
		slog.Info(note)
	}
	ctx, cancel := signalContext()
	defer cancel()
	if lead != nil {
		lead.StopOn(ctx.Done())
	}
	if spec.IsSweep() {
		if place.Size > 1 {
			return usageError("run: %s is a sweep; under a launcher run one grid point at a time (memo sweep --slurm writes the job array)", spec.File())
		}
		// A sweep runs every stage of every point and chooses itself which
		// points reuse a training: these would be dropped without a word.
		for _, f := range []string{"stages", "reuse-train"} {
			if c.IsSet(f) {
				return usageError("run: --%s does not go with a sweep (%s has a [sweep] table): give it to one point: memo run --%s ... RUNS/SWEEP/specs/POINT.toml", f, spec.File(), f)
			}
		}
		if c.Int("nproc") < 1 {
			return usageError("--nproc %d: want >= 1", c.Int("nproc"))
		}
		if err := spec.CheckRanksEachPoint(c.Int("nproc")); err != nil {
			return configError(err)
		}
		if err := checkSweepDir(c, spec); err != nil {
			return err
		}
		return localSweep(ctx, c, spec)
	}
	nproc := c.Int("nproc")
	if nproc < 1 {
		return usageError("--nproc %d: want >= 1", nproc)
	}
	if launched || dist.Launched() {
		nproc = 1 // the launcher started the ranks (launchPlace checked --nproc)
	}
	opt := experiments.Options{Force: c.Bool("force"), ReuseTrain: c.String("reuse-train")}
	if src := opt.ReuseTrain; src != "" {
		if st, err := os.Stat(filepath.Join(src, runfiles.ConfigFile)); err != nil || st.IsDir() {
			return usageError("run: --reuse-train %s: not a run directory (no config.toml)", src)
		}
	}
	if c.IsSet("stages") {
		s := c.String("stages")
		if strings.TrimSpace(s) == "" {
			// An empty variable in a script ("--stages $STAGES") would
			// otherwise run every stage.
			return usageError("run: --stages %q: name the stages to run (data,train,references,extract,eval,plots), or leave --stages out for all", s)
		}
		for _, st := range strings.Split(s, ",") {
			opt.Stages = append(opt.Stages, strings.TrimSpace(st))
		}
	}
	threads, from := runThreads(c, place)
	job := rankenv.JobOf(place, threads, from)
	if nproc > 1 {
		perRank := max(1, threads/nproc)
		job.Launcher, job.WorldSize, job.LocalSize, job.Threads = "memo", nproc, nproc, perRank
		job.ThreadsFrom = fmt.Sprintf("%s/%d ranks", from, nproc)
		if threads != perRank {
			job.StageThreads = threads // this process: data, extract, eval
		}
		opt.Ranks = nproc
		port := 0 // a free one
		if place.PortSet {
			port = place.Port // --master-port or MASTER_PORT
			// Checked now, not after the data stage's minutes; taken later
			// still, the launch says so then.
			trains := len(opt.Stages) == 0 || slices.Contains(opt.Stages, "train")
			if _, err := dist.FreePort(port); err != nil && trains {
				return usageError("--nproc %d: rendezvous %v", nproc, err)
			}
		}
		opt.Train = func(ctx context.Context, spec *experiments.Spec, dir string) error {
			return launchTraining(ctx, nproc, c.Args().First(), c.StringSlice("set"), c.String("runs"), perRank, port)
		}
	}
	opt.Job = &job
	if lead != nil {
		opt.BeforeTrain = func() error {
			if err := lead.Release(rankenv.Verdict{Kind: "train"}); err != nil {
				return err
			}
			return rankenv.UseMeetingPort(lead.Port())
		}
	}
	slog.Debug("threads", "threads", threads, "from", from, "launcher", place.Source, "rank", place.Rank, "world", place.Size)
	torchx.Init(threads, uint64(spec.Seed))
	finished := experiments.Finished(spec, experiments.RunDir(spec, c.String("runs")))
	dir, err := experiments.Run(ctx, spec, c.String("runs"), opt)
	if err != nil {
		return err
	}
	if lead != nil {
		// Training is over on every rank (or was done before): free them.
		_ = lead.Release(rankenv.Verdict{Kind: "skip"})
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

// launchPlace is where this process sits in a launch, with --master-port
// applied. A launcher environment that cannot be read (RANK=x, a port out
// of range), or --nproc against a launcher that started another number of
// ranks, is bad input.
func launchPlace(c *cli.Context) (rankenv.Config, error) {
	cfg := rankenv.Unset()
	// A refusal that every rank meets alike is said by rank 0 alone; a
	// rank past the world (RANK=2 WORLD_SIZE=2) has no rank 0 to say it.
	quiet := func(place rankenv.Config, err error) error {
		if place.Rank > 0 && place.Rank < place.Size && !dist.Launched() {
			slog.Debug("refused; rank 0 says why", "rank", place.Rank, "err", err)
			return cli.Exit("", exitBadInput)
		}
		return err
	}
	if c.IsSet("master-port") {
		p := c.Int("master-port")
		if p < 1 || p > 65535 {
			// Every rank of srun -n2 printed it: the ranks' places first.
			place, _ := rankenv.Discover(cfg)
			return cfg, quiet(place, usageError("--master-port %d: must be in 1..65535", p))
		}
		cfg.Port = p
	}
	place, err := rankenv.Discover(cfg)
	if err != nil {
		return place, quiet(place, usageError("launcher environment: %v", err))
	}
	// A launcher that started one process (srun --pty bash, srun -n1 -c8)
	// leaves the ranks to --nproc, as an sbatch script's shell does.
	if c.IsSet("nproc") && place.Source != "single" && place.Size > 1 && !dist.Launched() && c.Int("nproc") != place.Size {
		return place, quiet(place, usageError("--nproc %d: %s started this process as one of %d ranks; leave --nproc out (or give --nproc %d)",
			c.Int("nproc"), launcherName(place.Source), place.Size, place.Size))
	}
	return place, nil
}

func launcherName(src string) string {
	switch src {
	case "slurm":
		return "srun (SLURM_PROCID/SLURM_NTASKS)"
	case "torchrun":
		return "the launcher (RANK/WORLD_SIZE)"
	}
	return src
}

// runThreads is the libtorch thread count of this process: --threads, or
// what the allocation gives it (rankenv.Threads), and whence.
func runThreads(c *cli.Context, place rankenv.Config) (int, string) {
	t, from := c.Int("threads"), "--threads"
	if t <= 0 {
		t, from = rankenv.Threads(place)
	}
	// PyTorch reads OMP_NUM_THREADS; memo sets libtorch's count itself. A
	// probe found the variable ignored without a word.
	if omp := os.Getenv("OMP_NUM_THREADS"); omp != "" && omp != strconv.Itoa(t) {
		slog.Warn("OMP_NUM_THREADS is not read: memo sets libtorch's threads itself (--threads)", "OMP_NUM_THREADS", omp, "threads", t, "from", from)
	}
	return t, from
}

// followRank0 is a rank > 0 of a launch: it waits for rank 0 to build the
// data, trains with it, and leaves the later stages to it. When rank 0
// failed first, this rank exits with its code and leaves the saying to it.
func followRank0(c *cli.Context, place rankenv.Config) error {
	ctx, cancel := signalContext()
	defer cancel()
	v, err := rankenv.Follow(ctx, place, rankenv.MeetTimeout)
	if err != nil {
		return err
	}
	switch v.Kind {
	case "skip":
		slog.Debug("rank 0 says there is nothing to train", "rank", place.Rank)
		return nil
	case "fail":
		slog.Debug("rank 0 failed", "rank", place.Rank, "code", v.Code, "error", v.Msg)
		return cli.Exit("", v.Code)
	}
	if err := rankenv.UseMeetingPort(v.Port); err != nil {
		return err
	}
	spec, err := loadSpec(c.Args().First(), c.StringSlice("set"))
	if err != nil {
		return err
	}
	threads, from := runThreads(c, place)
	job := rankenv.JobOf(place, threads, from)
	torchx.Init(threads, uint64(spec.Seed))
	_, err = experiments.Run(ctx, spec, c.String("runs"), experiments.Options{Stages: []string{"train"}, Job: &job})
	return err
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
func launchTraining(ctx context.Context, n int, specFile string, sets []string, runs string, threadsPerRank, port int) error {
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
		"--threads", strconv.Itoa(threadsPerRank)}
	for _, s := range sets {
		argv = append(argv, "--set", s) // the ranks must train the spec this process resolved
	}
	argv = append(argv, spec)
	slog.Info("launching training ranks", "nproc", n, "threads_per_rank", threadsPerRank)
	if err := dist.Launch(ctx, n, argv, port); err != nil {
		return fmt.Errorf("training on %d processes: %w", n, err)
	}
	return nil
}
