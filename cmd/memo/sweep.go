package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/memo-research/memo/experiments"
	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/outguard"
	"github.com/memo-research/memo/internal/rankenv"
	"github.com/memo-research/memo/plots"
	"github.com/urfave/cli/v2"
)

func sweepCommand() *cli.Command {
	return &cli.Command{
		Name:      "sweep",
		Usage:     "run the grid of a spec's [sweep] table locally, or write a Slurm job array for it",
		ArgsUsage: "FILE.toml",
		Description: "Each grid point is one run, RUNS/<name>/<point>/, named after its axis values\n" +
			"(e.g. k=4_preset=tiny). Locally, -j runs go at once as subprocesses of this binary;\n" +
			"a failed run does not stop the others and finished runs are skipped. The sweep ends\n" +
			"with the comparison table and figures in RUNS/<name>/report/.\n" +
			"With --slurm, writes RUNS/<name>/slurm.sh, a job array with one task per grid point\n" +
			"(--dry-run prints it instead; --submit also submits it with sbatch, plus a report job\n" +
			"that runs when the array ends; --force and --threads go into its memo run lines).\n" +
			"Points that differ from an earlier one only in extract, eval, plots or mia keys do not\n" +
			"train: they go into RUNS/<name>/slurm-attack.sh, a second array that attacks the trained\n" +
			"points' models once the first has ended (--submit chains it).\n" +
			"The thread count changes a model's last bits (docs/LIMITS.md): -j, which divides the\n" +
			"default --threads among parallel runs, changes them too; give --threads to compare.",
		Flags: append(runFlags(),
			&cli.BoolFlag{Name: "slurm", Usage: "write a Slurm job-array script instead of running locally"},
			&cli.BoolFlag{Name: "submit", Usage: "with --slurm: submit the script with sbatch"},
			&cli.BoolFlag{Name: "dry-run", Usage: "with --slurm: print the script and write nothing"},
			&cli.StringFlag{Name: "account", Usage: "with --slurm: the account to charge (sbatch --account)"},
			&cli.StringFlag{Name: "partition", Usage: "with --slurm: the partition (sbatch --partition)"},
			&cli.StringFlag{Name: "time", Value: "04:00:00", Usage: "with --slurm: the time limit per grid point, e.g. 02:00:00 or 1-00:00:00"},
			&cli.IntFlag{Name: "gpus", Usage: "with --slurm: GPUs per node for each grid point"},
			&cli.IntFlag{Name: "nodes", Value: 1, Usage: "with --slurm: nodes per grid point; > 1 trains across nodes with srun"},
			&cli.IntFlag{Name: "nproc", Value: 1, Usage: "training processes (ranks) per node for each grid point"},
			&cli.IntFlag{Name: "cpus", Usage: "with --slurm: CPUs per task (0: the cluster's default)"},
			&cli.StringFlag{Name: "mem", Usage: "with --slurm: memory per node (sbatch --mem), e.g. 16G"},
			&cli.StringFlag{Name: "qos", Usage: "with --slurm: quality of service (sbatch --qos)"},
			&cli.StringFlag{Name: "constraint", Usage: "with --slurm: node features (sbatch --constraint), e.g. a100"},
			&cli.IntFlag{Name: "gpus-per-task", Usage: "with --slurm: GPUs per task (sbatch --gpus-per-task)"},
			&cli.IntFlag{Name: "array-throttle", Usage: "with --slurm: at most N grid points at once (--array=0-M%N)"},
			&cli.StringSliceFlag{Name: "sbatch", Usage: "with --slurm: an extra #SBATCH line, e.g. --sbatch --mail-type=END (repeatable)"},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				for _, a := range c.Args().Tail() {
					if strings.HasPrefix(a, "-") {
						return usageError("sweep: flag %s after FILE: put flags first, e.g. memo sweep --slurm --dry-run FILE.toml", a)
					}
				}
				return usageError("sweep: want one spec FILE, got %d arguments", c.NArg())
			}
			spec, err := loadSpec(c.Args().First(), c.StringSlice("set"))
			if err != nil {
				return err
			}
			if !spec.IsSweep() {
				return usageError("sweep: %s has no [sweep] table; use `memo run` for a single run", spec.File())
			}
			if note := spec.DefaultLossNote(); note != "" {
				slog.Info(note)
			}
			for _, f := range []string{"nodes", "nproc"} {
				if c.Int(f) < 1 {
					return usageError("sweep: --%s %d: must be >= 1", f, c.Int(f))
				}
			}
			// Every point's batch must split over the ranks it will train
			// on (a node's --nproc, times --nodes on Slurm): found now, not
			// once each point has started (or on the cluster).
			ranks := c.Int("nproc")
			if c.Bool("slurm") {
				ranks *= c.Int("nodes")
			}
			if err := spec.CheckRanksEachPoint(ranks); err != nil {
				return configError(err)
			}
			if (c.Bool("submit") || c.Bool("dry-run")) && !c.Bool("slurm") {
				return usageError("sweep: --submit and --dry-run go with --slurm")
			}
			if c.Bool("slurm") && c.IsSet("jobs") {
				return usageError("sweep --slurm: -j runs points at once on this machine; Slurm's array schedules them (--array-throttle N bounds how many at once)")
			}
			if c.Bool("submit") && c.Bool("dry-run") {
				return usageError("sweep --slurm: --submit and --dry-run exclude each other: --dry-run writes and submits nothing")
			}
			if !c.Bool("slurm") {
				// A local sweep would ignore them: say so rather than run
				// without the limits the user thinks are set.
				for _, f := range slurmOnlyFlags {
					if c.IsSet(f) {
						return usageError("sweep: --%s is a Slurm setting: add --slurm, or leave it out to run here", f)
					}
				}
			}
			if err := checkRunsRoot(c, spec); err != nil {
				return err
			}
			if err := checkSweepDir(c, spec); err != nil {
				return err
			}
			if !c.Bool("slurm") {
				// A Slurm script runs elsewhere: its nodes' GPUs are not ours.
				if err := spec.CheckDevices(); err != nil {
					return configError(err)
				}
			}
			ctx, cancel := signalContext()
			defer cancel()
			if c.Bool("slurm") {
				return slurmSweep(ctx, c, spec)
			}
			return localSweep(ctx, c, spec)
		},
	}
}

// checkSweepDir refuses a sweep's directory that is neither new nor one an
// earlier sweep made: the sweep writes specs/, logs/, report/ and slurm.sh
// into it, and its points' directories.
func checkSweepDir(c *cli.Context, spec *experiments.Spec) error {
	dir := spec.SweepDir(c.String("runs"))
	if why := outguard.Claim(dir, []string{experiments.SweepIndexFile}); why != "" {
		return usageError("%s: %s %s; a sweep writes only into a new directory or its own: rename the sweep (name = ...) or give --runs DIR",
			c.Command.Name, dir, why)
	}
	return nil
}

// localSweep runs a sweep's grid on this machine, then reports over it.
func localSweep(ctx context.Context, c *cli.Context, spec *experiments.Spec) error {
	if err := checkRunFlags(c); err != nil {
		return err
	}
	jobs := c.Int("jobs")
	threads := c.Int("threads")
	if threads <= 0 {
		// What memo run itself would take here (inside a Slurm job, the
		// CPUs it holds, not the node's), shared by the parallel runs.
		cpus, _ := rankenv.Threads(rankenv.Config{})
		threads = max(1, cpus/jobs)
	}
	args := []string{"--threads", strconv.Itoa(threads)}
	if c.IsSet("nproc") && c.Int("nproc") > 1 {
		args = append(args, "--nproc", strconv.Itoa(c.Int("nproc")))
	}
	dir, results, err := experiments.RunSweep(ctx, spec, c.String("runs"), experiments.SweepOptions{
		Jobs: jobs, Args: args, Force: c.Bool("force"), Progress: c.App.ErrWriter,
	})
	if err != nil {
		// A bad sweep value is found when the grid is expanded, before
		// anything is written: a usage error like any other spec problem.
		return configError(err)
	}
	fmt.Fprint(c.App.Writer, experiments.Summary(results))
	if err := ctx.Err(); err != nil {
		// Runs stopped by SIGINT or SIGTERM did not fail: they resume.
		return fmt.Errorf("sweep: %w", err)
	}
	failed, refused := 0, 0
	for _, r := range results {
		if r.Status == experiments.PointFailed {
			failed++
			var exit *exec.ExitError
			if errors.As(r.Err, &exit) && exit.ExitCode() == exitBadInput {
				refused++
			}
		}
	}
	// Made again even when every point had finished before, or none did
	// now: the grid may have changed (a value dropped, a key changed), and
	// the old report still showed points the sweep no longer has. It is
	// seconds of work.
	if err := plots.Report(dir, spec.Plots, experiments.ReadPlotsSpec); err != nil {
		if failed == 0 {
			return err
		}
		// The failures are the news: say the report's problem and go on
		// to them.
		fmt.Fprintf(c.App.ErrWriter, "memo: %s\n", oneLine(err.Error()))
	} else if err := printTable(c, dir); err != nil {
		return err
	}
	if failed > 0 && refused == failed {
		// Every failure was a run refusing its input: the sweep's input
		// is bad, as each run's exit code said.
		return cli.Exit(fmt.Sprintf("memo: %d of %d sweep runs refused their input (exit 2; logs in %s)", failed, len(results), filepath.Join(dir, "logs")), exitBadInput)
	}
	if failed > 0 {
		return cli.Exit(fmt.Sprintf("memo: %d of %d sweep runs failed (logs in %s)", failed, len(results), filepath.Join(dir, "logs")), 1)
	}
	return nil
}

// slurmMaxArraySize is slurm.conf's MaxArraySize default: array indices
// run from 0 to one less.
const slurmMaxArraySize = 1001

var submittedRE = regexp.MustCompile(`Submitted batch job (\d+)`)

// slurmOnlyFlags are the sweep's flags that only a job script uses.
var slurmOnlyFlags = []string{"account", "partition", "time", "gpus", "cpus", "mem", "qos", "constraint", "gpus-per-task", "array-throttle", "sbatch", "nodes"}

// slurmSweep writes (and maybe submits) the job array of a sweep.
// absCache is MEMO_CACHE as the Slurm script exports it: absolute, since
// a submission from another directory (or the job's own working
// directory) would read a relative one from elsewhere.
func absCache(dir string) string {
	if dir == "" {
		return ""
	}
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

func slurmSweep(ctx context.Context, c *cli.Context, spec *experiments.Spec) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	runs, err := filepath.Abs(c.String("runs"))
	if err != nil {
		return err
	}
	if strings.ContainsAny(runs, " \t\n\"'\\") {
		// #SBATCH --output takes the path as one unquoted word, and a
		// backslash there turns off its %A and %a.
		return usageError("sweep --slurm: --runs %q: the path %q holds a space, quote or backslash, which Slurm's #SBATCH --output cannot take; use a directory without one", c.String("runs"), runs)
	}
	// The spec's [slurm] table, then the flags set on the command line.
	sl := spec.Slurm
	str := func(flag, fromSpec string) string {
		if c.IsSet(flag) || fromSpec == "" {
			return c.String(flag)
		}
		return fromSpec
	}
	num := func(flag string, fromSpec int) int {
		if c.IsSet(flag) || fromSpec == 0 {
			return c.Int(flag)
		}
		return fromSpec
	}
	opt := experiments.SlurmOptions{
		Account: str("account", sl.Account), Partition: str("partition", sl.Partition), Time: str("time", sl.Time),
		GPUs: num("gpus", sl.GPUs), Nodes: c.Int("nodes"), Nproc: c.Int("nproc"), CPUs: num("cpus", sl.CPUs),
		Exe: exe, SweepDir: spec.SweepDir(runs), JobName: spec.Name,
		Mem: str("mem", sl.Mem), QOS: str("qos", sl.QOS), Constraint: str("constraint", sl.Constraint),
		GPUsPerTask: num("gpus-per-task", sl.GPUsPerTask), ArrayThrottle: num("array-throttle", sl.ArrayThrottle),
		Extra: append(append([]string(nil), sl.Sbatch...), c.StringSlice("sbatch")...),
		Cache: absCache(os.Getenv("MEMO_CACHE")),
	}
	if wd, err := os.Getwd(); err == nil {
		opt.Dir = wd
	}
	// memo run's own flags, for each point as a local sweep passes them.
	if c.Bool("force") {
		opt.RunFlags = append(opt.RunFlags, "--force")
	}
	if c.Int("threads") > 0 {
		opt.RunFlags = append(opt.RunFlags, "--threads", strconv.Itoa(c.Int("threads")))
	}
	// Refused before anything is written or submitted.
	probe := opt
	probe.Specs = []string{"probe.toml"}
	if _, err := experiments.SlurmScript(probe); err != nil {
		return usageError("sweep --slurm: %v", err)
	}
	var pts []experiments.Point
	if c.Bool("dry-run") {
		pts, err = spec.Expand()
	} else {
		// The array's pending tasks read specs/ when they start, and
		// --force moves run directories aside: both under running jobs.
		ids, active, qerr := activeSweepJobs(ctx, opt.SweepDir)
		if qerr != nil {
			return usageError("sweep --slurm: %s was submitted as job %s, and squeue cannot say whether it still runs (%v): once `squeue -j %s` shows it ended, remove %s and run this again",
				opt.SweepDir, strings.Join(ids, ", "), qerr, strings.Join(ids, ","), filepath.Join(opt.SweepDir, slurmJobsFile))
		}
		if len(active) > 0 {
			return usageError("sweep --slurm: %s was submitted as job %s, whose tasks %s are still queued or running: wait for them or scancel %s, then run this again",
				opt.SweepDir, strings.Join(ids, ", "), strings.Join(active, ", "), strings.Join(ids, " "))
		}
		_, pts, err = experiments.PrepareSweep(spec, runs, c.Bool("force"))
	}
	if err != nil {
		return configError(err)
	}
	// Points that only attack another point's model go into a second array
	// that starts when the training array has ended: on a cluster, as in a
	// local sweep, a model is trained once per training key.
	attack := opt
	attack.JobName, attack.Specs, attack.ReuseTrain = spec.Name+"-attack", nil, []string{}
	for _, p := range pts {
		if p.Reuses != "" {
			attack.Specs = append(attack.Specs, p.Name+".toml")
			attack.ReuseTrain = append(attack.ReuseTrain, p.Reuses)
		} else {
			opt.Specs = append(opt.Specs, p.Name+".toml")
		}
	}
	if n := max(len(opt.Specs), len(attack.Specs)); n > slurmMaxArraySize {
		slog.Warn("sweep --slurm: the array's indices go past Slurm's default MaxArraySize (1001: indices 0 to 1000); sbatch refuses it on a cluster that keeps the default (scontrol show config | grep MaxArraySize)", "tasks", n)
	}
	script, err := experiments.SlurmScript(opt)
	if err != nil {
		return usageError("sweep --slurm: %v", err)
	}
	attackScript := ""
	if len(attack.Specs) > 0 {
		if attackScript, err = experiments.SlurmScript(attack); err != nil {
			return usageError("sweep --slurm: %v", err)
		}
	}
	if c.Bool("dry-run") {
		fmt.Fprint(c.App.Writer, script)
		if attackScript != "" {
			fmt.Fprintf(c.App.Writer, "\n# ---- slurm-attack.sh: submit with --dependency=afterany:<the array above> ----\n%s", attackScript)
		}
		return nil
	}
	path := filepath.Join(opt.SweepDir, "slurm.sh")
	if err := writeScript(path, []byte(script)); err != nil {
		return err
	}
	attackPath := filepath.Join(opt.SweepDir, "slurm-attack.sh")
	if attackScript == "" {
		if err := os.Remove(attackPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	} else if err := writeScript(attackPath, []byte(attackScript)); err != nil {
		return err
	}
	if !c.Bool("submit") {
		fmt.Fprintf(c.App.Writer, "wrote %s (%d tasks); submit with: sbatch %s\n", path, len(opt.Specs), experiments.ShellQuote(path))
		if attackScript != "" {
			fmt.Fprintf(c.App.Writer, "wrote %s (%d attack-only tasks, no training); submit it after the first: sbatch --dependency=afterany:JOBID %s\n", attackPath, len(attack.Specs), experiments.ShellQuote(attackPath))
		}
		fmt.Fprintf(c.App.Writer, "then: memo report %s\n", experiments.ShellQuote(opt.SweepDir))
		return nil
	}
	jobs, err := sbatch(ctx, c, path)
	if err != nil {
		return err
	}
	if err := recordSweepJobs(opt.SweepDir, jobs); err != nil {
		return err
	}
	if attackScript != "" {
		if jobs == "" {
			return fmt.Errorf("sbatch %s printed no job id to make %s wait for: submit it by hand with sbatch --dependency=afterany:JOBID %s", path, attackPath, attackPath)
		}
		id, err := sbatch(ctx, c, "--dependency=afterany:"+jobs, attackPath)
		if err != nil {
			return err
		}
		if id != "" {
			jobs += ":" + id
		}
		if err := recordSweepJobs(opt.SweepDir, jobs); err != nil {
			return err
		}
	}
	if jobs == "" {
		return nil
	}
	// The report job fails, naming them, when grid points did not finish.
	rep := exec.CommandContext(ctx, "sbatch", experiments.SlurmReportJob(opt, exe, jobs)...)
	out, err := rep.CombinedOutput()
	if err != nil {
		return fmt.Errorf("sbatch the report job: %w: %s", err, out)
	}
	fmt.Fprintf(c.App.Writer, "report job: %s", out)
	if m := submittedRE.FindSubmatch(out); m != nil {
		// A second submission while it waits would have it report on
		// the rewritten sweep.
		return recordSweepJobs(opt.SweepDir, jobs+":"+string(m[1]))
	}
	return nil
}

// slurmJobsFile, in a sweep's directory, holds the ids of the arrays
// memo sweep --submit last submitted for it (colon-separated), so that a
// second submission can see whether they are still in the queue.
const slurmJobsFile = "slurm-jobs.txt"

// recordSweepJobs writes slurmJobsFile; nothing when sbatch printed no id.
func recordSweepJobs(sweepDir, jobs string) error {
	if jobs == "" {
		return nil
	}
	return atomicfile.WriteFile(filepath.Join(sweepDir, slurmJobsFile), []byte(jobs+"\n"))
}

// slurmDoneStates are the job states squeue may still show of a job that
// will run no more.
var slurmDoneStates = []string{"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "TIMEOUT"}

// activeSweepJobs reads the ids of the sweep's last submission and which
// of their tasks ("41_3", "41_[4-9]") squeue shows queued or running: a
// second submission would run their points twice at once, and
// rewriting specs/ would change what the pending tasks run. None when
// nothing was submitted, or squeue forgot the jobs (they ended long
// ago); an error when squeue is missing or fails otherwise (a controller
// it cannot reach), since it cannot then tell.
func activeSweepJobs(ctx context.Context, sweepDir string) (ids, active []string, err error) {
	raw, err := os.ReadFile(filepath.Join(sweepDir, slurmJobsFile))
	if err != nil {
		return nil, nil, nil
	}
	ids = strings.FieldsFunc(strings.TrimSpace(string(raw)), func(r rune) bool { return r == ':' || r == ',' || r == ' ' })
	if len(ids) == 0 {
		return nil, nil, nil
	}
	out, err := exec.CommandContext(ctx, "squeue", "-h", "-o", "%i %T", "-j", strings.Join(ids, ",")).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			// squeue refuses a list it knows none of: jobs long finished.
			if strings.Contains(string(exit.Stderr), "Invalid job id") {
				return ids, nil, nil
			}
			if msg := strings.TrimSpace(string(exit.Stderr)); msg != "" {
				err = fmt.Errorf("%w: %s", err, strings.Join(strings.Fields(msg), " "))
			}
		}
		return ids, nil, fmt.Errorf("squeue: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && !slices.Contains(slurmDoneStates, f[1]) {
			active = append(active, f[0])
		}
	}
	return ids, active, nil
}

// sbatch submits a script (args end with its path) and returns the job id
// it printed ("" when sbatch said something else).
func sbatch(ctx context.Context, c *cli.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "sbatch", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("sbatch %s: %w: %s", strings.Join(args, " "), err, out)
	}
	fmt.Fprint(c.App.Writer, string(out))
	if m := submittedRE.FindSubmatch(out); m != nil {
		return string(m[1]), nil
	}
	return "", nil
}

// writeScript writes an executable script whole or not at all.
func writeScript(path string, body []byte) error {
	if err := atomicfile.WriteFile(path, body); err != nil {
		return err
	}
	return os.Chmod(path, 0o755)
}
