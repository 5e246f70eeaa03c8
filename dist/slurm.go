package dist

import (
	"fmt"
	"strings"
)

// SlurmJob describes a multi-node batch job for SlurmScript.
type SlurmJob struct {
	Name          string
	Nodes         int    // machines
	TasksPerNode  int    // ranks per machine (GPUs, or 1 for CPU)
	CPUsPerTask   int    // 0: leave to the cluster
	GPUsPerNode   int    // 0: none
	Time          string // wall clock, e.g. "24:00:00"; "" leaves the default
	Partition     string
	Account       string
	Port          int      // rendezvous port; 0: 29500
	Output        string   // log path pattern; default "slurm-%j.out"
	Setup         []string // shell lines run before srun (module load, …)
	Command       []string // what each rank runs, e.g. memo run exp.toml
	ExtraSBatches []string // further "#SBATCH" option lines, without the prefix
}

// SlurmScript renders an sbatch script that starts one memo rank per task
// with srun. Ranks find their place from SLURM_PROCID/SLURM_NTASKS/
// SLURM_LOCALID and rendezvous on the first node of the allocation, which
// package dist's Discover reads from SLURM_JOB_NODELIST.
func SlurmScript(j SlurmJob) (string, error) {
	if j.Nodes < 1 || j.TasksPerNode < 1 {
		return "", fmt.Errorf("slurm job %q: nodes = %d, tasks per node = %d: both must be >= 1", j.Name, j.Nodes, j.TasksPerNode)
	}
	if len(j.Command) == 0 {
		return "", fmt.Errorf("slurm job %q: no command", j.Name)
	}
	port := j.Port
	if port == 0 {
		port = DefaultPort
	}
	out := j.Output
	if out == "" {
		out = "slurm-%j.out"
	}
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	opt := func(f string, a ...any) { fmt.Fprintf(&b, "#SBATCH "+f+"\n", a...) }
	if j.Name != "" {
		opt("--job-name=%s", j.Name)
	}
	opt("--nodes=%d", j.Nodes)
	opt("--ntasks-per-node=%d", j.TasksPerNode)
	if j.CPUsPerTask > 0 {
		opt("--cpus-per-task=%d", j.CPUsPerTask)
	}
	if j.GPUsPerNode > 0 {
		opt("--gpus-per-node=%d", j.GPUsPerNode)
	}
	if j.Time != "" {
		opt("--time=%s", j.Time)
	}
	if j.Partition != "" {
		opt("--partition=%s", j.Partition)
	}
	if j.Account != "" {
		opt("--account=%s", j.Account)
	}
	opt("--output=%s", out)
	for _, e := range j.ExtraSBatches {
		opt("%s", e)
	}
	b.WriteString("set -euo pipefail\n")
	for _, s := range j.Setup {
		b.WriteString(s + "\n")
	}
	b.WriteString("# Rank 0 serves the rendezvous store on the first node.\n")
	b.WriteString("export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n")
	fmt.Fprintf(&b, "export MASTER_PORT=%d\n", port)
	b.WriteString("# One task per rank; --kill-on-bad-exit stops the job when a rank fails.\n")
	b.WriteString("srun --kill-on-bad-exit=1 --label")
	for _, a := range j.Command {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString("\n")
	return b.String(), nil
}

// shellQuote quotes s for bash when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=+./:,@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
