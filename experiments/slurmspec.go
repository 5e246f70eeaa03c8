package experiments

import (
	"errors"
	"fmt"
	"strings"
)

// SlurmConfig is the [slurm] table: the scheduler options `memo sweep
// --slurm` writes into its job script, so that a cluster's settings live
// beside the experiment. The command's flags of the same names override
// them. The table is not part of a run's identity: a run's config.toml
// leaves it out.
type SlurmConfig struct {
	// Account is sbatch's --account; empty leaves it to the cluster.
	Account string `toml:"account"`
	// Partition is sbatch's --partition.
	Partition string `toml:"partition"`
	// Time is the time limit per grid point, e.g. "02:00:00"; empty is
	// memo sweep's --time default.
	Time string `toml:"time"`
	// CPUs is CPUs per task; 0 leaves it to the cluster.
	CPUs int `toml:"cpus"`
	// GPUs is GPUs per node; GPUsPerTask is sbatch's --gpus-per-task.
	GPUs        int `toml:"gpus"`
	GPUsPerTask int `toml:"gpus_per_task"`
	// Mem is memory per node, e.g. "16G"; QOS and Constraint are sbatch's
	// --qos and --constraint.
	Mem        string `toml:"mem"`
	QOS        string `toml:"qos"`
	Constraint string `toml:"constraint"`
	// ArrayThrottle runs at most this many grid points at once (0: no
	// limit).
	ArrayThrottle int `toml:"array_throttle"`
	// Sbatch are extra "#SBATCH" lines, each one long option sbatch knows
	// ("--mail-type=END").
	Sbatch []string `toml:"sbatch"`
}

// Validate checks every key and names it in the error.
func (c SlurmConfig) Validate() error {
	var errs []error
	for _, f := range []struct {
		key string
		v   int
	}{{"slurm.cpus", c.CPUs}, {"slurm.gpus", c.GPUs}, {"slurm.gpus_per_task", c.GPUsPerTask}, {"slurm.array_throttle", c.ArrayThrottle}} {
		if f.v < 0 || f.v > 1<<20 {
			errs = append(errs, fmt.Errorf("%s = %d: want a count from 0 to %d", f.key, f.v, 1<<20))
		}
	}
	// The forms memo sweep's --time and --mem take: found only there, a
	// bad value was named as the flag's, not the spec's key.
	if c.Time != "" && !slurmTime.MatchString(c.Time) {
		errs = append(errs, fmt.Errorf("slurm.time = %q: want minutes, MM:SS, HH:MM:SS or D-HH:MM:SS", c.Time))
	}
	if c.Mem != "" && !slurmMem.MatchString(c.Mem) {
		errs = append(errs, fmt.Errorf("slurm.mem = %q: want a size in MB or with a K, M, G or T suffix (16G)", c.Mem))
	}
	for _, s := range []struct{ key, v string }{{"slurm.account", c.Account}, {"slurm.partition", c.Partition}, {"slurm.qos", c.QOS}, {"slurm.constraint", c.Constraint}} {
		if strings.ContainsAny(s.v, " \n'\"$`") {
			errs = append(errs, fmt.Errorf("%s = %q: no spaces, quotes or $ allowed", s.key, s.v))
		}
	}
	for _, l := range c.Sbatch {
		if err := CheckSbatchLine(l); err != nil {
			errs = append(errs, fmt.Errorf("slurm.sbatch: %w", err))
		}
	}
	return errors.Join(errs...)
}
