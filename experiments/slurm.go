package experiments

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// SlurmOptions shape the job-array script of a sweep.
type SlurmOptions struct {
	Account   string // --account; empty leaves it to the cluster default
	Partition string // --partition
	Time      string // --time, e.g. "02:00:00"
	GPUs      int    // GPUs per node (0 for CPU jobs)
	Nodes     int    // nodes per grid point; > 1 trains across nodes with srun
	Nproc     int    // training processes per node (ranks); 1 for a single process
	CPUs      int    // CPUs per task
	Exe       string // absolute path of the memo binary the tasks run
	SweepDir  string // the sweep's directory (absolute)
	Specs     []string
	// ReuseTrain, when set, has one entry per spec: the grid point (a
	// directory of the sweep) whose trained model the task only attacks
	// (`memo run --reuse-train`). Such tasks run on one process: they do
	// not train.
	ReuseTrain []string
	JobName    string
	// Scheduler options passed through: --mem (e.g. 16G), --qos,
	// --constraint, --gpus-per-task, the array's throttle (%N: at most N
	// tasks at once) and extra "#SBATCH" lines ("--mail-type=END").
	Mem           string
	QOS           string
	Constraint    string
	GPUsPerTask   int
	ArrayThrottle int
	Extra         []string
	// RunFlags go into every memo run line after "run" (memo sweep's
	// --force, --threads N): each a word the shell takes as it is.
	RunFlags []string
	// Dir, when set, is the directory memo sweep ran in: the script
	// starts there, so that the points' relative paths (data sources,
	// data.cache_dir, hf:PATH) read what the sweep checked, wherever
	// sbatch is run from (the tasks start where sbatch was run).
	Dir string
	// Cache, when set, is MEMO_CACHE as the sweep saw it: the script
	// exports it, so that tasks share the sweep's dataset cache however
	// sbatch passes the environment (--export=NONE, a later submission
	// from another shell).
	Cache string
}

// sbatchOptions are the long options sbatch 22.05 knows (sbatch --help):
// an extra #SBATCH line naming another is refused before submitting.
var sbatchOptions = strings.Fields(`account acctg-freq array batch bb bbf begin chdir cluster-constraint clusters comment
constraint container contiguous core-spec cores-per-socket cpu-freq cpus-per-gpu cpus-per-task deadline delay-boot
dependency distribution error exclude exclusive export export-file get-user-env gid gpu-bind gpu-freq gpus
gpus-per-node gpus-per-socket gpus-per-task gres gres-flags hint hold ignore-pbs input job-name kill-on-invalid-dep
licenses mail-type mail-user mcs-label mem mem-bind mem-per-cpu mem-per-gpu mincpus network nice no-kill no-requeue
nodefile nodelist nodes ntasks ntasks-per-core ntasks-per-gpu ntasks-per-node ntasks-per-socket open-mode output
overcommit oversubscribe partition power priority profile propagate qos reboot requeue reservation signal
sockets-per-node spread-job switches thread-spec threads-per-core time time-min tmp uid use-min-nodes wckey`)

var slurmMem = regexp.MustCompile(`^\d+[KMGT]?$`)

// CheckSbatchLine refuses an extra #SBATCH line that is not one long option
// sbatch knows ("--mail-type=END", "--exclusive").
func CheckSbatchLine(line string) error {
	name, _, _ := strings.Cut(strings.TrimPrefix(line, "--"), "=")
	switch {
	case !strings.HasPrefix(line, "--") || strings.ContainsAny(line, "\n\r"):
		return fmt.Errorf("#SBATCH line %q: want one long option, e.g. --mail-type=END", line)
	case strings.ContainsAny(line, " \t"):
		// sbatch reads "--comment=a b" as an option and a stray
		// directive "b", and refuses the whole script when submitted.
		return fmt.Errorf("#SBATCH line %q: no spaces (sbatch would read a second directive after one)", line)
	case !contains(sbatchOptions, name):
		return fmt.Errorf("#SBATCH line %q: sbatch has no option --%s", line, name)
	case name == "array" || name == "output" || name == "job-name":
		return fmt.Errorf("#SBATCH line %q: memo sets --%s itself (--array-throttle limits the array)", line, name)
	case name == "nodes" || name == "ntasks" || name == "ntasks-per-node":
		// Written after memo's own, it won the allocation while the srun
		// line still launched memo's count of ranks.
		return fmt.Errorf("#SBATCH line %q: memo sets --%s itself from --nodes and --nproc: give those", line, name)
	}
	return nil
}

var slurmTime = regexp.MustCompile(`^(\d+-)?\d+(:\d{1,2}){0,2}$`)

func (o SlurmOptions) validate() error {
	if o.Time != "" && !slurmTime.MatchString(o.Time) {
		return fmt.Errorf("--time %q: want minutes, MM:SS, HH:MM:SS or D-HH:MM:SS", o.Time)
	}
	for _, f := range []struct {
		flag string
		v    int
	}{{"gpus", o.GPUs}, {"nodes", o.Nodes}, {"nproc", o.Nproc}, {"cpus", o.CPUs}, {"gpus-per-task", o.GPUsPerTask}, {"array-throttle", o.ArrayThrottle}} {
		if f.v < 0 {
			return fmt.Errorf("--%s %d: must be >= 0", f.flag, f.v)
		}
	}
	if tasks := max(o.Nproc, 1); o.GPUs > 0 && o.GPUsPerTask*tasks > o.GPUs {
		// sbatch takes both and refuses the job at submission, once
		// every script is written.
		return fmt.Errorf("--gpus-per-task %d with --gpus %d: %d task(s) a node would need %d GPUs of the node's %d", o.GPUsPerTask, o.GPUs, tasks, o.GPUsPerTask*tasks, o.GPUs)
	}
	if o.Mem != "" && !slurmMem.MatchString(o.Mem) {
		return fmt.Errorf("--mem %q: want a size in MB or with a K, M, G or T suffix (16G)", o.Mem)
	}
	for _, l := range o.Extra {
		if err := CheckSbatchLine(l); err != nil {
			return err
		}
	}
	if len(o.Specs) == 0 {
		return fmt.Errorf("the sweep has no grid points")
	}
	if o.ReuseTrain != nil && len(o.ReuseTrain) != len(o.Specs) {
		return fmt.Errorf("%d specs but %d points to reuse the training of", len(o.Specs), len(o.ReuseTrain))
	}
	for _, f := range []struct{ flag, value string }{{"--account", o.Account}, {"--partition", o.Partition}, {"the job name (the spec's name)", o.JobName}, {"--qos", o.QOS}, {"--constraint", o.Constraint}} {
		if strings.ContainsAny(f.value, " \n'\"$`") {
			return fmt.Errorf("%s %q: no spaces, quotes or $ allowed", f.flag, f.value)
		}
	}
	return nil
}

// ShellQuote quotes s for a POSIX shell: one word, nothing in it
// expanded ($, backticks and all).
func ShellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// SlurmFilename is a path as sbatch's --output pattern takes it: each %
// doubled, or sbatch reads it as a replacement symbol (a path holding "%a"
// becomes one per array task, in directories that do not exist, and every
// task fails to launch without a log).
func SlurmFilename(path string) string { return strings.ReplaceAll(path, "%", "%%") }

// SlurmReportJob is sbatch's argument list for a sweep's report job: after
// the jobs in after (colon-separated ids) end, whatever their outcome, exe
// runs `memo report --require-all` on the sweep, which fails naming the
// points that did not finish. The command is quoted for the shell sbatch
// --wrap runs, so a $ or backtick in a path stays as it is.
func SlurmReportJob(o SlurmOptions, exe, after string) []string {
	args := []string{}
	for _, f := range []struct{ flag, v string }{{"partition", o.Partition}, {"account", o.Account}, {"qos", o.QOS}} {
		if f.v != "" {
			args = append(args, "--"+f.flag+"="+f.v)
		}
	}
	// Extra lines that say where jobs may run: without them the report
	// job waited on an array of another cluster, or outside a reservation.
	for _, line := range o.Extra {
		name, _, _ := strings.Cut(strings.TrimPrefix(line, "--"), "=")
		if slices.Contains([]string{"clusters", "reservation", "wckey"}, name) {
			args = append(args, line)
		}
	}
	return append(args, "--dependency=afterany:"+after, "--job-name=memo-report-"+o.JobName,
		"--output="+SlurmFilename(filepath.Join(o.SweepDir, "logs"))+"/report_%j.out", "--time=00:30:00",
		"--wrap", ShellQuote(exe)+" report --require-all "+ShellQuote(o.SweepDir))
}

// slurmSignalLead is how many seconds before a job's time limit its
// script asks for SIGTERM (#SBATCH --signal): five minutes, or a fifth of
// a limit shorter than 25 minutes; five minutes when the limit is the
// partition's (unknown here). Slurm may send it up to a minute early.
func slurmSignalLead(limit string) int {
	const lead = 300
	// 0 is no limit to Slurm: the partition's, unknown here.
	if secs, ok := slurmSeconds(limit); ok && secs > 0 && secs < 5*lead {
		return max(secs/5, 1)
	}
	return lead
}

// slurmSeconds reads a --time value (minutes, MM:SS, HH:MM:SS, D-HH,
// D-HH:MM or D-HH:MM:SS) as seconds; false for "" or another form.
func slurmSeconds(t string) (int, bool) {
	// More digits than any limit has would overflow the sum.
	if t == "" || !slurmTime.MatchString(t) || len(t) > 16 {
		return 0, false
	}
	secs, rest := 0, t
	units := [][]int{{60}, {60, 1}, {3600, 60, 1}} // minutes, MM:SS, HH:MM:SS
	if d, r, ok := strings.Cut(t, "-"); ok {
		days, _ := strconv.Atoi(d)
		secs, rest = days*86400, r
		units = [][]int{{3600}, {3600, 60}, {3600, 60, 1}} // D-HH, D-HH:MM, D-HH:MM:SS
	}
	parts := strings.Split(rest, ":")
	for i, p := range parts {
		n, _ := strconv.Atoi(p)
		secs += n * units[len(parts)-1][i]
	}
	return secs, true
}

// SlurmScript writes a job-array script with one task per grid point. A point
// that trains on one process runs `memo run` directly; one that trains on
// several processes or nodes builds its data on one task, trains under srun
// (ranks read SLURM_PROCID / SLURM_NTASKS), then extracts, scores and plots
// on one task again. Finished points exit at once, so resubmitting the array
// after a failure redoes only what failed.
func SlurmScript(o SlurmOptions) (string, error) {
	if err := o.validate(); err != nil {
		return "", err
	}
	nodes, nproc := max(o.Nodes, 1), max(o.Nproc, 1)
	if o.ReuseTrain != nil {
		nodes, nproc = 1, 1
	}
	runFlags := ""
	for _, f := range o.RunFlags {
		runFlags += " " + shellWord(f)
	}
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, f+"\n", a...) }
	w("#!/bin/bash")
	w("# Generated by memo sweep --slurm: one array task per grid point of %s.", o.JobName)
	w("#SBATCH --job-name=memo-%s", o.JobName)
	if o.ArrayThrottle > 0 {
		w("#SBATCH --array=0-%d%%%d", len(o.Specs)-1, o.ArrayThrottle)
	} else {
		w("#SBATCH --array=0-%d", len(o.Specs)-1)
	}
	if o.Account != "" {
		w("#SBATCH --account=%s", o.Account)
	}
	if o.Partition != "" {
		w("#SBATCH --partition=%s", o.Partition)
	}
	if o.Time != "" {
		w("#SBATCH --time=%s", o.Time)
	}
	w("#SBATCH --nodes=%d", nodes)
	w("#SBATCH --ntasks-per-node=%d", nproc)
	if o.CPUs > 0 {
		w("#SBATCH --cpus-per-task=%d", o.CPUs)
	}
	if o.GPUs > 0 {
		w("#SBATCH --gpus-per-node=%d", o.GPUs)
	}
	if o.GPUsPerTask > 0 {
		w("#SBATCH --gpus-per-task=%d", o.GPUsPerTask)
	}
	if o.Mem != "" {
		w("#SBATCH --mem=%s", o.Mem)
	}
	if o.QOS != "" {
		w("#SBATCH --qos=%s", o.QOS)
	}
	if o.Constraint != "" {
		w("#SBATCH --constraint=%s", o.Constraint)
	}
	for _, l := range o.Extra {
		w("#SBATCH %s", l)
	}
	oneProcess := o.ReuseTrain != nil || nodes*nproc == 1
	if !slices.ContainsFunc(o.Extra, func(l string) bool { return strings.HasPrefix(l, "--signal") }) {
		// At its time limit Slurm sends SIGTERM and, KillWait later (30 s
		// by default), SIGKILL: too little for a large model's checkpoint.
		// SIGTERM well before the limit lets memo save and exit 130, and
		// the resubmitted array resumes. One process runs as the batch
		// shell itself (exec), which B: signals; srun's ranks are a step.
		which := ""
		if oneProcess {
			which = "B:"
		}
		w("#SBATCH --signal=%sTERM@%d", which, slurmSignalLead(o.Time))
	}
	w("#SBATCH --output=%s/logs/%%x_%%A_%%a.out", SlurmFilename(o.SweepDir))
	w("set -euo pipefail")
	if o.Dir != "" {
		w("cd %s", ShellQuote(o.Dir))
	}
	if o.Cache != "" {
		w("export MEMO_CACHE=%s", ShellQuote(o.Cache))
	}
	w("MEMO=%s", ShellQuote(o.Exe))
	w("SWEEP=%s", ShellQuote(o.SweepDir))
	w("SPECS=(")
	for _, s := range o.Specs {
		w("  %s", ShellQuote(s))
	}
	w(")")
	w(`SPEC="$SWEEP/specs/${SPECS[$SLURM_ARRAY_TASK_ID]}"`)
	w(`echo "task $SLURM_ARRAY_TASK_ID of job $SLURM_ARRAY_JOB_ID on $(hostname): $SPEC"`)
	if o.ReuseTrain != nil {
		w("# Attack-only points: each takes data and checkpoints from the point that")
		w("# trained its model (only extract, eval, plots or mia settings differ).")
		w("TRAINED=(")
		for _, r := range o.ReuseTrain {
			w("  %s", ShellQuote(r))
		}
		w(")")
		w(`exec "$MEMO" run%s --runs "$SWEEP" --reuse-train "$SWEEP/${TRAINED[$SLURM_ARRAY_TASK_ID]}" "$SPEC"`, runFlags)
		return b.String(), nil
	}
	if oneProcess {
		w(`exec "$MEMO" run%s --runs "$SWEEP" "$SPEC"`, runFlags)
		return b.String(), nil
	}
	w(`# All %d ranks run the point: rank 0 builds the data while the others wait,`, nodes*nproc)
	w(`# all train, rank 0 alone attacks, scores and plots. Rank 0 finds a free`)
	w(`# rendezvous port from the job id (or takes $MASTER_PORT); --kill-on-bad-exit`)
	w(`# stops the others when one fails.`)
	w(`srun --kill-on-bad-exit=1 "$MEMO" run%s --runs "$SWEEP" "$SPEC"`, runFlags)
	return b.String(), nil
}
